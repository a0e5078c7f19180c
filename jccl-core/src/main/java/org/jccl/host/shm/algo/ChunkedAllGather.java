package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmTransport;

/**
 * All-gather and gather: every rank posts a chunk of its block; receivers copy every slot out.
 * Between two ranks an all-gather's block of one chunk from {@link Chunks#READ_POSTER_MIN_BYTES} is
 * posted as its buffer's address instead where the peer can read it ({@link Chunks#postsAddress}):
 * one copy instead of two, and the poster returns once the peer has read it.
 */
public final class ChunkedAllGather {
    private ChunkedAllGather() {
    }

    /**
     * Runs the all-gather, or a gather to {@code root} when {@code root >= 0} ({@code recv} is then
     * written on the root only).
     */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, int root) {
        int r = t.rank();
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = send.count();
        long chunks = Chunks.chunkCount(count, per);
        long blockBytes = count * es;
        boolean receives = root < 0 || root == r;
        MemorySegment mine = t.segment(r);
        // Not a gather: its root copies every block itself either way (the slot's copy-in runs on the
        // other rank meanwhile), so reading in place gained nothing there and made the sender wait.
        boolean byAddress = chunks == 1 && root < 0 && Chunks.postsAddress(t, send.segment(), blockBytes);
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long bytes = Math.min(per, count - first) * es;
            long g = root >= 0 ? Chunks.beginReadByRoot(t, chunks, bytes) : t.beginChunk();
            long slot = t.inData(g);
            if (root == r) {
                // a gather's root: the others post and return, so their lines are there to fetch
                // (measured: 16 B at 4 ranks 0.90 -> 0.75 us; an all-gather's peers are not ahead),
                // and those of the next calls too
                t.touchIn(g);
                t.touchAhead(g);
            }
            if (byAddress) {
                t.postInAddress(g, send.segment());
            } else {
                MemorySegment.copy(send.segment(), first * es, mine, slot, bytes);
                t.postIn(g);
            }
            if (!receives && c == 0 && !t.eager()) {
                // JCCL_CHECK=1: a gather's other ranks check every rank's call too before they
                // return, so that ranks naming different roots fail in the call (by default they
                // post and return, and learn it at their next collective)
                t.awaitAllIn(g);
            }
            if (receives) {
                Chunks.copyFromEverySlot(t, g, slot, recv.segment(), blockBytes, first * es, bytes, send.segment(),
                        first * es, first * es);
            }
            t.endChunk(g);
            if (byAddress) {
                t.awaitAllDone(g); // the peer has read this rank's buffer: the caller may change it
            }
        }
    }
}
