package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;

/**
 * Broadcast for small messages: a binomial tree rooted at the root, ceil(log2 n) network hops;
 * every rank forwards the whole message to at most log2 n children. Every non-root also sends an
 * empty hello (its call's fingerprint) to its parent on entry, and parents expect them: two ranks
 * that both believe they are the root receive each other's data where a hello belongs, a
 * mismatch, instead of both passing silently. The hello costs the root at most one one-way
 * latency, no round trip.
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
        long hello = Parts.tag(Parts.HELLO, 0, 0);
        MemorySegment none = t.scratch(3, 64);
        int mask = 1;
        while (mask < n) {
            if ((vr & mask) != 0) {
                int parent = (vr - mask + root) % n;
                t.send(parent, none, 0, 0, hello);
                t.await(t.recv(parent, out, 0, bytes, tag));
                break;
            }
            mask <<= 1;
        }
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (vr + mask < n) {
                int child = (vr + mask + root) % n;
                t.recv(child, none, 0, 0, hello);
                t.send(child, out, 0, bytes, tag);
            }
        }
        t.awaitAll();
    }
}
