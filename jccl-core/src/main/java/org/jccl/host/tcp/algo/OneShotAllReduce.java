package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.tcp.TcpTransport;

/**
 * All-reduce for small messages: every rank sends its input to every other rank, then reduces
 * all n inputs in rank order with one rounding. One network round trip; sends n-1 times the data,
 * so it wins only while latency dominates. Bitwise the same result as the shared-memory engine.
 */
public final class OneShotAllReduce {
    private OneShotAllReduce() {
    }

    /** Runs the all-reduce. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int n = t.size();
        long bytes = send.byteSize();
        MemorySegment in = t.scratch(0, bytes * n);
        long tag = Parts.tag(Parts.ONESHOT, 0, 0);
        Parts.recvBlockFromEach(t, in, bytes, tag);
        Parts.sendToEach(t, send.segment(), 0, bytes, tag);
        // The sends read send's bytes: all must be out before an in-place result overwrites them.
        t.awaitAll();
        Parts.reduceReceived(t, send.type(), op, send.segment(), 0, in, bytes, recv.segment(), send.count());
    }
}
