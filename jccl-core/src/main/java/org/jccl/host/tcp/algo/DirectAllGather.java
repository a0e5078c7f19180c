package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
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
        int r = t.rank();
        long bytes = send.byteSize();
        MemorySegment out = recv.segment();
        long tag = Parts.tag(Parts.DIRECT_AG, 0, 0);
        Parts.recvBlockFromEachBackwards(t, out, bytes, tag);
        Parts.sendToEach(t, send.segment(), 0, bytes, tag);
        if (!send.overlaps(recv)) { // validated: overlapping means send is block r of recv (in place)
            MemorySegment.copy(send.segment(), 0, out, r * bytes, bytes);
        }
        t.awaitAll();
    }
}
