package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.shm.ShmTransport;

/**
 * Reduce-scatter: per chunk every rank posts the same range of all n blocks; rank r reduces
 * block r of every slot (in rank order) straight into its output.
 */
public final class ChunkedReduceScatter {
    private ChunkedReduceScatter() {
    }

    /** Runs the reduce-scatter ({@code send} holds size x recv.count elements). */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int n = t.size();
        int r = t.rank();
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), n, es);
        long count = recv.count();
        long chunks = Chunks.chunkCount(count, per);
        long blockBytes = count * es;
        MemorySegment mine = t.segment(r);
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            long bytes = elems * es;
            long g = t.beginChunk();
            long slot = t.inData(g);
            for (int j = 0; j < n; j++) {
                if (j != r) { // block r is reduced here, from the input directly
                    MemorySegment.copy(send.segment(), j * blockBytes + first * es, mine, slot + j * bytes, bytes);
                }
            }
            t.postIn(g);
            t.awaitAllIn(g);
            Chunks.reduceSlotsAndOwn(t, send.type(), op, slot + r * bytes, send.segment(), r * blockBytes + first * es,
                    recv.segment(), first * es, elems);
            t.endChunk(g);
        }
    }
}
