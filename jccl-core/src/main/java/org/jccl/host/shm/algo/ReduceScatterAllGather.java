package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.shm.ShmTransport;

/**
 * All-reduce for large messages: per chunk, every rank copies its input into its slot, rank r
 * reduces part r of every slot (in rank order) into its result slot, then every rank copies
 * every part from the owners' result slots. Each rank reads about 3x the data whatever the rank
 * count, and chunks are double buffered so consecutive chunks overlap.
 */
public final class ReduceScatterAllGather {
    private ReduceScatterAllGather() {
    }

    /** Runs the all-reduce. */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int n = t.size();
        int r = t.rank();
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = send.count();
        long chunks = Chunks.chunkCount(count, per);
        MemorySegment in = send.segment();
        MemorySegment out = recv.segment();
        MemorySegment mine = t.segment(r);
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            long g = t.beginChunk();
            long slot = t.inData(g);
            long res = t.resData(g);
            long lo = Chunks.partStart(elems, n, r);
            long hi = Chunks.partStart(elems, n, r + 1);
            // Peers read every part but this rank's own, which it reduces from its input directly.
            MemorySegment.copy(in, first * es, mine, slot, lo * es);
            MemorySegment.copy(in, (first + hi) * es, mine, slot + hi * es, (elems - hi) * es);
            t.postIn(g, first);
            t.awaitAllIn(g);
            if (hi > lo) {
                Chunks.sourcesAtSlots(t, slot + lo * es);
                t.srcs[r] = in;
                t.srcOffsets[r] = (first + lo) * es;
                Reductions.reduce(send.type(), op, mine, res + lo * es, t.srcs, t.srcOffsets, n, hi - lo, n);
            }
            t.postReduced(g);
            Chunks.copyReducedParts(t, g, res, elems, first, es, out, r);
            t.endChunk(g);
        }
    }
}
