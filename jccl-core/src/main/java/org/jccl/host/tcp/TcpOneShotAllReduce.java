package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;

/**
 * All-reduce for small messages: every rank sends its input to every other rank, then reduces
 * all n inputs in rank order with one rounding. One network round trip; sends n-1 times the data,
 * so it wins only while latency dominates. Bitwise the same result as the shared-memory engine.
 */
public final class TcpOneShotAllReduce {
    private TcpOneShotAllReduce() {
    }

    /** Runs the all-reduce. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int n = t.size();
        int r = t.rank();
        long bytes = send.byteSize();
        MemorySegment in = t.scratch(0, bytes * n);
        for (int k = 1; k < n; k++) {
            int p = (r + k) % n;
            t.recv(p, in, p * bytes, bytes, Parts.tag(Parts.ONESHOT, 0, 0));
        }
        for (int k = 1; k < n; k++) {
            t.send((r + k) % n, send.segment(), 0, bytes, Parts.tag(Parts.ONESHOT, 0, 0));
        }
        // The sends read send's bytes: all must be out before an in-place result overwrites them.
        t.awaitAll();
        for (int p = 0; p < n; p++) {
            t.srcs[p] = p == r ? send.segment() : in;
            t.srcOffsets[p] = p == r ? 0 : p * bytes;
        }
        Reductions.reduce(send.type(), op, recv.segment(), 0, t.srcs, t.srcOffsets, n, send.count(), n);
        java.util.Arrays.fill(t.srcs, null);
    }
}
