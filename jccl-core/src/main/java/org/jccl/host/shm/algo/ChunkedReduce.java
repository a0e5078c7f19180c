package org.jccl.host.shm.algo;

import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.shm.ShmTransport;

/**
 * Reduce to a root: every rank posts its chunk, rank r reduces part r of all slots (in rank
 * order, so the result equals the all-reduce's bit for bit), and the root collects the parts:
 * {@link ReduceScatterAllGather}'s reduce-scatter step ({@code Chunks.reduceOwnPart}), gathered on
 * the root only.
 */
public final class ChunkedReduce {
    private ChunkedReduce() {
    }

    /** Runs the reduce; {@code recv} is written on the root only (null elsewhere is fine). */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, int root) {
        boolean isRoot = t.rank() == root;
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = send.count();
        long chunks = Chunks.chunkCount(count, per);
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            long g = t.beginChunk();
            long res = Chunks.reduceOwnPart(t, g, send.type(), op, send.segment(), first, elems);
            if (isRoot) {
                Chunks.copyReducedParts(t, g, res, elems, first, es, recv.segment(), 0);
            }
            t.endChunk(g);
        }
    }
}
