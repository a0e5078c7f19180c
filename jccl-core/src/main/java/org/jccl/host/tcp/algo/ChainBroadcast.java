package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.tcp.TcpTransport;

/**
 * Pipelined broadcast for large messages: the ranks form a chain from the root (root, root+1,
 * ...) and the message flows down it in chunks, each rank forwarding chunk c as soon as it
 * arrived. Every link carries the message once, so the time approaches one transfer of the
 * message whatever the rank count.
 *
 * <p>Every rank agrees with every other before any rank returns, so a disagreement (about the
 * root, the count, the type, or the collective itself) fails on every rank in this call: a hello
 * (an empty frame carrying the call's fingerprint) goes once around the ring backwards, from the
 * root to root-1, root-2, ..., root+1 and back to the root; each rank receives it from rank+1,
 * checks it and only then passes it on, and the root sends the last chunk only once the hello
 * came back. The pattern does not depend on the root (each rank receives one hello from rank+1
 * and sends one to rank-1, whoever it thinks the root is), so ranks that disagree never wait for
 * each other forever: a rank whose view differs from its neighbour's sees the frame and fails
 * with both calls named, and tells the others (ABORT), which are all still waiting: a root waits
 * for the hello, which only comes back when every neighbour pair around the ring agreed, and
 * every other rank waits for the root's last chunk. The hello is tiny and travels while the
 * chunks flow, so it costs about nothing next to the transfer (a root of one chunk waits for it:
 * n one-way latencies).
 */
public final class ChainBroadcast {
    private ChainBroadcast() {
    }

    /** Runs the broadcast (n >= 2); {@code send} is read on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, int root) {
        int n = t.size();
        int vr = Math.floorMod(t.rank() - root, n);
        int es = recv.type().byteSize();
        long count = recv.count();
        MemorySegment out = recv.segment();
        long per = Parts.pipelineElems(t, es, count);
        int chunks = Parts.messageChunks(count, per);
        int next = Parts.next(t);
        int prev = Parts.prev(t);
        boolean last = vr == n - 1;
        long hello = Parts.tag(Parts.HELLO, 0, 0);
        MemorySegment none = t.scratch(3, 64);
        // The hello around the ring, backwards: from rank+1 in, to rank-1 out (the root starts it).
        int waveIn = t.recv(next, none, 0, 0, hello);
        if (vr == 0) {
            t.send(prev, none, 0, 0, hello);
            if (!send.sameStart(recv)) {
                MemorySegment.copy(send.segment(), 0, out, 0, count * es);
            }
            for (int c = 0; c < chunks - 1; c++) {
                sendChunk(t, next, out, es, per, count, c);
            }
            // the last chunk leaves once every rank agreed (the hello came back)
            t.await(waveIn);
            sendChunk(t, next, out, es, per, count, chunks - 1);
            t.awaitAll();
            return;
        }
        boolean passed = false;
        int window = Parts.inPlaceWindow(t);
        int[] ids = t.ids(window);
        int posted = 0;
        for (int c = 0; c < chunks; c++) {
            while (posted < chunks && posted - c < window) {
                ids[posted % window] = t.recv(prev, out, posted * per * es, Parts.chunkLen(count, per, posted) * es,
                        Parts.tag(Parts.CHAIN_BCAST, 0, posted));
                posted++;
            }
            // wait for chunk c, passing the hello on as soon as it came
            int id = ids[c % window];
            int i = 0;
            while (!t.isDone(id)) {
                if (!passed && t.isDone(waveIn)) {
                    t.send(prev, none, 0, 0, hello);
                    passed = true;
                }
                if (t.progress(false)) {
                    i = 0;
                } else {
                    t.idle(i++);
                }
            }
            t.release(id);
            if (!last) {
                sendChunk(t, next, out, es, per, count, c);
            }
        }
        if (!passed) {
            t.await(waveIn);
            t.send(prev, none, 0, 0, hello);
        }
        t.awaitAll();
    }

    private static void sendChunk(TcpTransport t, int next, MemorySegment out, int es, long per, long count, int c) {
        t.send(next, out, c * per * es, Parts.chunkLen(count, per, c) * es, Parts.tag(Parts.CHAIN_BCAST, 0, c));
    }
}
