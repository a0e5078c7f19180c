package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;

/**
 * Pipelined broadcast for large messages: the ranks form a chain from the root (root, root+1,
 * ...) and the message flows down it in chunks, each rank forwarding chunk c as soon as it
 * arrived. Every link carries the message once, so the time approaches one transfer of the
 * message whatever the rank count. Every rank but the root sends an empty hello (its call's
 * fingerprint) to its predecessor on entry, which expects it: two ranks that both believe they are
 * the root meet as a mismatch instead of both passing silently.
 */
public final class TcpChainBroadcast {
    private TcpChainBroadcast() {
    }

    /** Runs the broadcast (n >= 2); {@code send} is read on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, int root) {
        int n = t.size();
        int vr = Math.floorMod(t.rank() - root, n);
        int es = recv.type().byteSize();
        long count = recv.count();
        MemorySegment out = recv.segment();
        long per = Parts.pipelineElems(t, es, count);
        int chunks = Math.max(1, Parts.chunks(count, per));
        int next = vr + 1 < n ? (t.rank() + 1) % n : -1;
        int prev = (t.rank() + n - 1) % n;
        long hello = Parts.tag(Parts.HELLO, 0, 0);
        MemorySegment none = t.scratch(3, 64);
        if (vr > 0) {
            t.send(prev, none, 0, 0, hello);
        }
        if (next >= 0) {
            t.recv(next, none, 0, 0, hello);
        }
        if (vr == 0) {
            if (!send.sameStart(recv)) {
                MemorySegment.copy(send.segment(), 0, out, 0, count * es);
            }
            for (int c = 0; c < chunks; c++) {
                long e0 = c * per;
                t.send(next, out, e0 * es, Math.max(0, Math.min(per, count - e0)) * es, Parts.tag(Parts.CHAIN_BCAST, 0, c));
            }
            t.awaitAll();
            return;
        }
        int window = Math.max(8, 4 * t.socketsPerPeer());
        int[] ids = t.ids(window);
        int posted = 0;
        for (int c = 0; c < chunks; c++) {
            while (posted < chunks && posted - c < window) {
                long e0 = posted * per;
                ids[posted % window] = t.recv(prev, out, e0 * es, Math.max(0, Math.min(per, count - e0)) * es,
                        Parts.tag(Parts.CHAIN_BCAST, 0, posted));
                posted++;
            }
            t.await(ids[c % window]);
            if (next >= 0) {
                long e0 = c * per;
                t.send(next, out, e0 * es, Math.max(0, Math.min(per, count - e0)) * es, Parts.tag(Parts.CHAIN_BCAST, 0, c));
            }
        }
        t.awaitAll();
    }
}
