package org.jccl.host.tcp.algo;

import org.jccl.HostBuffer;
import org.jccl.host.tcp.TcpTransport;

/**
 * All-gather for small messages: every rank sends its block straight to every other rank. One
 * network round; each rank sends n-1 copies of its block.
 */
public final class DirectAllGather {
    private DirectAllGather() {
    }

    /** Runs the all-gather (n >= 2). */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv) {
        long bytes = send.byteSize();
        long tag = Parts.tag(Parts.DIRECT_AG, 0, 0);
        Parts.recvBlockFromEachBackwards(t, recv.segment(), bytes, tag);
        Parts.sendToEach(t, send.segment(), 0, bytes, tag);
        Parts.ownBlockIntoRecv(send, recv, t.rank());
        t.awaitAll();
    }
}
