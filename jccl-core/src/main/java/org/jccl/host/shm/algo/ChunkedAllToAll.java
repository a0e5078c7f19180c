package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmTransport;

/**
 * All-to-all and scatter: per chunk the sender(s) post the same range of all n blocks; rank r
 * copies block r of each sender's slot. In place works because a chunk's range is copied into
 * the slot before any rank writes that range of its output.
 *
 * <p>A scatter of one chunk is eager (unless {@code JCCL_CHECK=1}), as a small broadcast ({@link
 * ChunkedBroadcast}): the root posts and returns, each receiver checks the root's call; no rank checks
 * the receivers' but one that names a receiver the root.
 *
 * <p>Between two ranks, a call of one chunk whose blocks are at least {@link
 * Chunks#READ_POSTER_MIN_BYTES} posts the sender's buffer address instead of its blocks where the peer
 * can read it ({@link Chunks#postsAddress}; not an all-to-all in place, whose blocks change while the
 * peer reads): the peer reads its block from there, and the sender returns once it has. Such a
 * scatter is not eager: its root waits for the receiver's read (a root with {@code JCCL_CHECK=1} keeps
 * the slots; its receiver, with or without the setting, reads whichever the root posted).
 */
public final class ChunkedAllToAll {
    private ChunkedAllToAll() {
    }

    /**
     * Runs the all-to-all (every rank sends), or a scatter from {@code root} when {@code root >= 0}
     * ({@code send} is read on the root only). {@code blockCount} is the per-rank block size.
     */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, long blockCount, int root) {
        int n = t.size();
        int r = t.rank();
        int es = recv.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), n, es);
        long chunks = Chunks.chunkCount(blockCount, per);
        long blockBytes = blockCount * es;
        boolean sends = root < 0 || root == r;
        MemorySegment mine = t.segment(r);
        // (the size first: only a call that may post asks whether it is in place)
        boolean byAddress = root < 0 && chunks == 1 && Chunks.postsAddress(t, send.segment(), blockBytes)
                && !send.sameStart(recv);
        if (root >= 0 && chunks == 1 && t.eager()) {
            // A small scatter is eager, as a small broadcast (ChunkedBroadcast): the root posts
            // every block and returns; the receivers check its call.
            long g = Chunks.beginRooted(t, chunks, n * blockBytes);
            long slot = t.inData(g);
            if (root == r) {
                boolean rootPostsAddress = Chunks.postsAddress(t, send.segment(), blockBytes);
                if (rootPostsAddress) {
                    t.postInAddress(g, send.segment());
                } else {
                    for (int j = 0; j < n; j++) {
                        MemorySegment.copy(send.segment(), j * blockBytes, mine, slot + j * blockBytes, blockBytes);
                    }
                    t.postIn(g);
                }
                // From its input, not its slot: the receivers' reads may have taken the slot's lines
                // (OneShotAllReduce); nothing to copy in place (a copy onto itself took the JDK's
                // overlap branch, which compiled code had never seen, at a caller's first in-place scatter)
                ZeroCopy.copy(send.segment(), r * blockBytes, recv.segment(), 0, blockBytes);
                if (rootPostsAddress) {
                    Chunks.endPostedAddress(t, g);
                } else {
                    t.endChunk(g);
                }
            } else {
                t.postIn(g); // read by no rank but one that names this rank the root
                t.awaitIn(root, g);
                Chunks.readChunk(t, root, g, slot + r * blockBytes, r * blockBytes, recv.segment(), 0, blockBytes);
                t.endChunk(g);
            }
            return;
        }
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long bytes = Math.min(per, blockCount - first) * es;
            long g = root >= 0 ? Chunks.beginRooted(t, chunks, n * bytes) : t.beginChunk();
            long slot = t.inData(g);
            if (byAddress) {
                t.postInAddress(g, send.segment());
            } else if (sends) {
                for (int j = 0; j < n; j++) {
                    MemorySegment.copy(send.segment(), j * blockBytes + first * es, mine, slot + j * bytes, bytes);
                }
                t.postIn(g);
                if (root >= 0 && c == 0) {
                    // Scatter: receivers post their call on the first chunk and the root checks them,
                    // so two ranks that both believe they are the root cannot pass silently.
                    t.awaitAllIn(g);
                }
            } else if (c == 0) {
                // Receivers check every rank's call too, not only the root's: a receiver that agrees
                // with its root would otherwise return although other ranks name another root.
                t.postIn(g);
                t.awaitAllIn(g);
            }
            if (root < 0) {
                Chunks.copyFromEverySlot(t, g, slot + r * bytes, recv.segment(), blockBytes, first * es, bytes,
                        send.segment(), r * blockBytes + first * es, r * blockBytes + first * es);
            } else {
                if (root != r && c > 0) {
                    t.awaitIn(root, g);
                }
                // (a root with the eager setting may have posted its address while this rank, with
                // JCCL_CHECK=1, is here)
                Chunks.readChunk(t, root, g, slot + r * bytes, r * blockBytes + first * es, recv.segment(), first * es,
                        bytes);
            }
            t.endChunk(g);
            if (byAddress) {
                t.awaitAllDone(g); // the peer has read its block of this rank's buffer
            }
        }
    }
}
