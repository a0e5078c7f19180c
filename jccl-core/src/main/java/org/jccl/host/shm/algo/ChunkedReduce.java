package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.shm.ShmTransport;

/**
 * Reduce to a root: every rank posts its chunk, rank r reduces part r of all slots (in rank
 * order, so the result equals the all-reduce's bit for bit), and the root collects the parts.
 */
public final class ChunkedReduce {
    private ChunkedReduce() {
    }

    /** Runs the reduce; {@code recv} is written on the root only (null elsewhere is fine). */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, int root) {
        int n = t.size();
        int r = t.rank();
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = send.count();
        long chunks = Chunks.chunkCount(count, per);
        MemorySegment mine = t.segment(r);
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            long g = t.beginChunk();
            long slot = t.inData(g);
            long res = t.resData(g);
            MemorySegment.copy(send.segment(), first * es, mine, slot, elems * es);
            t.postIn(g, first);
            t.awaitAllIn(g);
            long lo = Chunks.partStart(elems, n, r);
            long hi = Chunks.partStart(elems, n, r + 1);
            if (hi > lo) {
                Chunks.sourcesAtSlots(t, slot + lo * es);
                Reductions.reduce(send.type(), op, mine, res + lo * es, t.srcs, t.srcOffsets, n, hi - lo, n);
            }
            t.postReduced(g);
            if (r == root) {
                Chunks.copyReducedParts(t, g, res, elems, first, es, recv.segment(), 0);
            }
            t.endChunk(g);
        }
    }
}
