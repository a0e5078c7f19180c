package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmTransport;

/**
 * Broadcast: the root copies each chunk into its slot once; every other rank copies it out. On the
 * first chunk every rank posts its call and checks every other rank's, so that any disagreement
 * (root, type, count, collective) fails on every rank in this call.
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
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long bytes = Math.min(per, count - first) * es;
            long g = t.beginChunk();
            long slot = t.inData(g);
            if (isRoot) {
                MemorySegment.copy(send.segment(), first * es, rootSeg, slot, bytes);
                t.postIn(g, first);
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
                    t.postIn(g, first);
                    t.awaitAllIn(g);
                } else {
                    t.awaitIn(root, g);
                }
                MemorySegment.copy(rootSeg, slot, recv.segment(), first * es, bytes);
            }
            t.endChunk(g);
        }
    }
}
