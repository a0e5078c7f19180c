package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;

/**
 * All-gather for small messages: every rank sends its block straight to every other rank. One
 * network round; each rank sends n-1 copies of its block.
 */
public final class TcpDirectAllGather {
    private TcpDirectAllGather() {
    }

    /** Runs the all-gather (n >= 2). */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv) {
        int n = t.size();
        int r = t.rank();
        long bytes = send.byteSize();
        MemorySegment out = recv.segment();
        for (int k = 1; k < n; k++) {
            int p = (r + n - k) % n;
            t.recv(p, out, p * bytes, bytes, Parts.tag(Parts.DIRECT_AG, 0, 0));
        }
        for (int k = 1; k < n; k++) {
            t.send((r + k) % n, send.segment(), 0, bytes, Parts.tag(Parts.DIRECT_AG, 0, 0));
        }
        if (!send.overlaps(recv)) { // validated: overlapping means send is block r of recv (in place)
            MemorySegment.copy(send.segment(), 0, out, r * bytes, bytes);
        }
        t.awaitAll();
    }
}
