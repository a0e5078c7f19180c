package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.tcp.TcpTransport;

/**
 * Reduce for small messages: every rank sends its input to the root, which reduces all n inputs
 * in rank order with one rounding (bitwise the shared-memory engine's result). One hop.
 */
public final class DirectReduce {
    private DirectReduce() {
    }

    /** Runs the reduce (n >= 2); {@code recv} is used on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, int root) {
        int r = t.rank();
        long bytes = send.byteSize();
        long tag = Parts.tag(Parts.DIRECT_REDUCE, 0, 0);
        if (t.checkCalls()) {
            // JCCL_CHECK: a rank that is not the root would otherwise return before anyone
            // compared its call (root, count, type, op) with the others'
            Parts.agree(t);
        }
        if (r != root) {
            Parts.sendToRoot(t, send, root, tag);
            return;
        }
        int n = t.size();
        MemorySegment in = t.scratch(0, bytes * n);
        for (int p = 0; p < n; p++) {
            if (p != r) {
                t.recv(p, in, p * bytes, bytes, tag);
            }
        }
        t.awaitAll();
        Parts.reduceReceived(t, send.type(), op, send.segment(), 0, in, bytes, recv.segment(), send.count());
    }
}
