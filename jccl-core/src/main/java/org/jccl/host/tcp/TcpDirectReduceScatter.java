package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;

/**
 * Reduce-scatter for small messages: every rank sends block p of its input straight to rank p,
 * which reduces the n blocks in rank order with one rounding (bitwise the shared-memory engine's
 * result). One network round.
 */
public final class TcpDirectReduceScatter {
    private TcpDirectReduceScatter() {
    }

    /** Runs the reduce-scatter (n >= 2). */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int n = t.size();
        int r = t.rank();
        long bytes = recv.byteSize();
        MemorySegment in = t.scratch(0, bytes * n);
        long tag = Parts.tag(Parts.RING_RS, 0xffffff, 0);
        for (int k = 1; k < n; k++) {
            int p = (r + n - k) % n;
            t.recv(p, in, p * bytes, bytes, tag);
        }
        for (int k = 1; k < n; k++) {
            int p = (r + k) % n;
            t.send(p, send.segment(), p * bytes, bytes, tag);
        }
        t.awaitAll();
        for (int p = 0; p < n; p++) {
            t.srcs[p] = p == r ? send.segment() : in;
            t.srcOffsets[p] = p * bytes;
        }
        Reductions.reduce(send.type(), op, recv.segment(), 0, t.srcs, t.srcOffsets, n, recv.count(), n);
        java.util.Arrays.fill(t.srcs, null);
    }
}
