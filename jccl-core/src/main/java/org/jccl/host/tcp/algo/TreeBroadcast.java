package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.tcp.TcpTransport;

/**
 * Broadcast for small messages: a binomial tree rooted at the root, ceil(log2 n) network hops;
 * every rank forwards the whole message to at most log2 n children.
 *
 * <p>Every receiver checks the fingerprint (root included) of the frame it gets from its parent,
 * so it fails in the call when it and its parent disagree (about the root, count, type, or the
 * collective: a parent that called another collective sends other frames). The root returns once
 * its bytes are in the kernel, without waiting for anyone: that is what makes a back-to-back small
 * broadcast cost no round trip, and it is why these cases are <em>not</em> caught in the call by
 * default, but in the next collective on the communicator (which then fails at once on every rank
 * with both calls named):
 * <ul>
 *   <li>a rank that names itself the root (or calls a small broadcast as its root while the others
 *       call another collective) returns normally: it receives nothing in a broadcast, so it
 *       cannot see any disagreement;</li>
 *   <li>a receiver returns normally when its parent and its parent's ancestors (in its own view of
 *       the tree) agree with it, even if other ranks disagree (e.g. rank 0 names root 0, ranks 1
 *       and 2 root 1: rank 2's parent, rank 1, agrees with it).</li>
 * </ul>
 * Such a rank can also be one that no stale frame of the broadcast reaches, and whose peers send it
 * the next collective's frames before they find theirs; those frames carry their sender's previous
 * collective ({@link Frame}'s PREVIOUS word), which it checks against its own.
 *
 * With {@code JCCL_CHECK=1} ({@link TcpTransport#checkCalls()}) every rank first exchanges its
 * call's fingerprint with the others (an empty hello to rank + 2^k and from rank - 2^k for
 * k = 0..ceil(log2 n)-1, the dissemination pattern, which does not depend on the root), checking
 * each against its own: no rank can finish the exchange before every rank's fingerprint reached
 * it through a chain of checked hellos, so any disagreement fails on every rank in the broadcast
 * (the rank that sees it tells the others, still waiting, with an ABORT). That costs ceil(log2 n)
 * one-way latencies per call on every rank, the root included.
 */
public final class TreeBroadcast {
    private TreeBroadcast() {
    }

    /** Runs the broadcast (n >= 2); {@code send} is read on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, int root) {
        int n = t.size();
        if (t.checkCalls()) {
            Parts.agree(t);
        }
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
                int parent = (vr - mask + root) % n;
                t.await(t.recv(parent, out, 0, bytes, tag));
                break;
            }
            mask <<= 1;
        }
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (vr + mask < n) {
                int child = (vr + mask + root) % n;
                t.send(child, out, 0, bytes, tag);
            }
        }
        t.awaitAll();
    }
}
