package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.tcp.TcpTransport;

/**
 * Reduce-scatter for small messages: every rank sends block p of its input straight to rank p,
 * which reduces the n blocks in rank order with one rounding (bitwise the shared-memory engine's
 * result). One network round.
 */
public final class DirectReduceScatter {
    private DirectReduceScatter() {
    }

    /** Runs the reduce-scatter (n >= 2). */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        long bytes = recv.byteSize();
        MemorySegment in = t.scratch(0, bytes * t.size());
        long tag = Parts.tag(Parts.RING_RS, 0xffffff, 0);
        Parts.recvBlockFromEachBackwards(t, in, bytes, tag);
        Parts.sendToEach(t, send.segment(), bytes, bytes, tag);
        t.awaitAll();
        Parts.reduceReceived(t, send.type(), op, send.segment(), t.rank() * bytes, in, bytes, recv.segment(), recv.count());
    }
}
