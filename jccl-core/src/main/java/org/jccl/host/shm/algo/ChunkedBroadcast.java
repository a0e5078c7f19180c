package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmTransport;

/**
 * Broadcast: the root copies each chunk into its slot once; every other rank copies it out.
 *
 * <p>One chunk (a small broadcast) is eager, as in MPI: the root posts its data and returns, and
 * each receiver waits for the root only and checks its call. A receiver posts its call too, but
 * no rank reads it unless it names that receiver the root (then it sees the mismatch at once): the
 * root does not check the receivers, so their header lines stay in their own caches instead of
 * crossing to the root and back every call, and a loop of small broadcasts runs at the receivers'
 * pace. A receiver that sees a disagreement fails in the call (and aborts the communicator, so
 * every rank learns it at its next collective); one that no rank of the call sees (two ranks that
 * both act as the root) fails every rank at its next collective, whose headers carry a digest of
 * each rank's earlier calls ({@link ShmTransport#beginCollective}).
 *
 * <p>Between two ranks, from {@link Chunks#READ_POSTER_MIN_BYTES}, a root whose send buffer its peer can
 * read (native memory, process_vm_readv) posts the buffer's address instead of the data: the
 * receiver copies the whole call from there, one copy instead of two, and the root returns once it
 * has (such a broadcast is not eager: its root waits for the receiver). The root alone decides (the
 * receiver learns it from the first chunk it awaits either way), so a heap buffer costs nothing extra.
 *
 * <p>Several chunks, or {@code JCCL_CHECK=1} ({@link ShmTransport#eager()} false): on the first, every rank posts its call and checks every other rank's, so
 * that any disagreement (root, type, count, collective) fails on every rank in this call.
 */
public final class ChunkedBroadcast {
    private ChunkedBroadcast() {
    }

    /** Runs the broadcast; {@code send} is read on the root only. */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, int root) {
        int es = recv.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = recv.count();
        long chunks = Chunks.chunkCount(count, per);
        boolean isRoot = t.rank() == root;
        boolean inPlace = isRoot && send.sameStart(recv);
        MemorySegment rootSeg = t.segment(root);
        if (isRoot && Chunks.postsAddress(t, send.segment(), count * es)) {
            postAddress(t, send, recv, count * es, inPlace);
            return;
        }
        if (chunks == 1 && t.eager()) {
            long bytes = count * es;
            long g = Chunks.beginRooted(t, chunks, bytes);
            long slot = t.inData(g);
            if (isRoot) {
                MemorySegment.copy(send.segment(), 0, rootSeg, slot, bytes);
                t.postIn(g);
                if (!inPlace) {
                    MemorySegment.copy(send.segment(), 0, recv.segment(), 0, bytes);
                }
                t.endChunk(g);
            } else {
                t.postIn(g); // read by no rank but one that names this rank the root
                t.awaitIn(root, g);
                Chunks.readChunk(t, root, g, slot, 0, recv.segment(), 0, bytes);
                t.endChunk(g);
            }
            return;
        }
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long bytes = Math.min(per, count - first) * es;
            long g = Chunks.beginRooted(t, chunks, bytes);
            long slot = t.inData(g);
            if (isRoot) {
                MemorySegment.copy(send.segment(), first * es, rootSeg, slot, bytes);
                t.postIn(g);
                if (c == 0) {
                    // Every rank posts its call on the first chunk and the root checks them all:
                    // two ranks that both believe they are the root would otherwise never meet.
                    t.awaitAllIn(g);
                }
                if (!inPlace) {
                    MemorySegment.copy(send.segment(), first * es, recv.segment(), first * es, bytes);
                }
            } else {
                if (c == 0) {
                    // Receivers check every rank's call too, not only the root's: ranks that
                    // disagree about the root must all fail in this call, and a receiver that
                    // agrees with its root would otherwise return before the root saw the others.
                    t.postIn(g);
                    t.awaitAllIn(g);
                    long at = t.postedAddress(root, g);
                    if (at != 0) { // the root's whole buffer, in one chunk
                        t.readPosted(root, at, recv.segment(), 0, count * es);
                        t.endChunk(g);
                        return;
                    }
                } else {
                    t.awaitIn(root, g);
                }
                MemorySegment.copy(rootSeg, slot, recv.segment(), first * es, bytes);
            }
            t.endChunk(g);
        }
    }

    /**
     * The root's side of a broadcast between two ranks that the receiver reads from the root's
     * buffer: posts its address as the call's one chunk (the IN ring, as the receiver's first chunk),
     * and returns once the receiver has read it.
     */
    private static void postAddress(ShmTransport t, HostBuffer send, HostBuffer recv, long bytes, boolean inPlace) {
        long g = Chunks.beginRooted(t, 1, bytes);
        t.postInAddress(g, send.segment());
        if (!inPlace) {
            MemorySegment.copy(send.segment(), 0, recv.segment(), 0, bytes); // while the receiver reads
        }
        Chunks.endPostedAddress(t, g);
    }
}
