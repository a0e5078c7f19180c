package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
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
        int r = t.rank();
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = send.count();
        long chunks = Chunks.chunkCount(count, per);
        MemorySegment in = send.segment();
        MemorySegment out = recv.segment();
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            long g = t.beginChunk();
            long res = Chunks.reduceOwnPart(t, g, send.type(), op, in, first, elems);
            Chunks.copyReducedParts(t, g, res, elems, first, es, out, r);
            t.endChunk(g);
        }
    }
}
