package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.shm.ShmTransport;

/**
 * All-reduce for small messages: every rank copies its input into its slot, then every rank
 * reduces every slot (in rank order) into its own output. One synchronisation per chunk; reads
 * n times the data, so it wins only while latency dominates.
 */
public final class OneShotAllReduce {
    private OneShotAllReduce() {
    }

    /** Runs the all-reduce. */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = send.count();
        long chunks = Chunks.chunkCount(count, per);
        MemorySegment in = send.segment();
        MemorySegment out = recv.segment();
        MemorySegment mine = t.segment(t.rank());
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            long g = t.beginChunk();
            long slot = t.inData(g);
            MemorySegment.copy(in, first * es, mine, slot, elems * es);
            t.postIn(g, first);
            t.awaitAllIn(g);
            Chunks.reduceSlots(t, send.type(), op, slot, out, first * es, elems);
            t.endChunk(g);
        }
    }
}
