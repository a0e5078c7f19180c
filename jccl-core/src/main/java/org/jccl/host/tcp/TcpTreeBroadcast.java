package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;

/**
 * Broadcast for small messages: a binomial tree rooted at the root, ceil(log2 n) network hops;
 * every rank forwards the whole message to at most log2 n children.
 *
 * <p>Every receiver checks the fingerprint (root included) of the frame it gets, so a rank that
 * disagrees with its parent about the root fails at once. Only ranks that all name themselves
 * the root receive nothing here: each keeps its own data, and the frames they sent each other
 * make the next collective on the communicator fail with both calls named. With {@code
 * JCCL_CHECK=1} ({@link TcpTransport#checkCalls()}) every non-root also sends an empty hello (its
 * call's fingerprint) to its parent on entry and parents wait for it, so that case fails in the
 * broadcast itself. That wait is why it is not the default: a back-to-back broadcast then costs a
 * one-way latency per call on the root (8.2 against 6.9 us for Open MPI at 8 B across two network
 * namespaces), where without it the root returns once its bytes are in the kernel.
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
        boolean check = t.checkCalls();
        long hello = Parts.tag(Parts.HELLO, 0, 0);
        MemorySegment none = check ? t.scratch(3, 64) : null;
        int mask = 1;
        while (mask < n) {
            if ((vr & mask) != 0) {
                int parent = (vr - mask + root) % n;
                if (check) {
                    t.send(parent, none, 0, 0, hello);
                }
                t.await(t.recv(parent, out, 0, bytes, tag));
                break;
            }
            mask <<= 1;
        }
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (vr + mask < n) {
                int child = (vr + mask + root) % n;
                if (check) {
                    t.recv(child, none, 0, 0, hello);
                }
                t.send(child, out, 0, bytes, tag);
            }
        }
        t.awaitAll();
    }
}
