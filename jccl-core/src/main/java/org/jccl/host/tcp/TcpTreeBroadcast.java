package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;

/**
 * Broadcast for small messages: a binomial tree rooted at the root, ceil(log2 n) network hops;
 * every rank forwards the whole message to at most log2 n children.
 */
public final class TcpTreeBroadcast {
    private TcpTreeBroadcast() {
    }

    /** Runs the broadcast (n >= 2); {@code send} is read on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, int root) {
        int n = t.size();
        int vr = Math.floorMod(t.rank() - root, n);
        MemorySegment out = recv.segment();
        long bytes = recv.byteSize();
        long tag = Parts.tag(Parts.TREE_BCAST, 0, 0);
        if (vr == 0) {
            if (!send.sameStart(recv)) {
                MemorySegment.copy(send.segment(), 0, out, 0, bytes);
            }
        }
        int mask = 1;
        while (mask < n) {
            if ((vr & mask) != 0) {
                t.await(t.recv((vr - mask + root) % n, out, 0, bytes, tag));
                break;
            }
            mask <<= 1;
        }
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (vr + mask < n) {
                t.send((vr + mask + root) % n, out, 0, bytes, tag);
            }
        }
        t.awaitAll();
    }
}
