package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.shm.ShmTransport;

/**
 * Reduce to a root for small messages: every rank but the root copies its input into its slot
 * and posts it; the root posts its call, waits for every rank's, checks them, and reduces every
 * slot (its own input read in place) in rank order, so the result equals the all-reduce's bit for
 * bit. The other ranks wait for nothing, like an eager MPI send: a loop of small reduces runs at
 * the root's pace instead of synchronising every rank on every call (up to the ring's depth
 * ahead; a rank reuses a slot only once the root has read it).
 *
 * <p>What a non-root gives up: it returns before anyone compared its call with the others'. A
 * disagreement (about the root, the count, the type or the op) is found by the rank or ranks that
 * act as root, which fail in the call and abort the communicator, so every other rank fails at
 * its next collective.
 */
public final class OneShotReduce {
    private OneShotReduce() {
    }

    /** Runs the reduce; {@code recv} is written on the root only (null elsewhere is fine). */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, int root) {
        boolean isRoot = t.rank() == root;
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = send.count();
        long chunks = Chunks.chunkCount(count, per);
        MemorySegment in = send.segment();
        MemorySegment mine = t.segment(t.rank());
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            long g = t.beginChunk();
            long slot = t.inData(g);
            if (isRoot) {
                // Its header only: a second rank that believes it is the root waits for this one.
                t.postIn(g, first);
                t.awaitAllIn(g);
                Chunks.reduceSlotsAndOwn(t, send.type(), op, slot, in, first * es, recv.segment(), first * es, elems);
            } else {
                MemorySegment.copy(in, first * es, mine, slot, elems * es);
                t.postIn(g, first);
            }
            t.endChunk(g);
        }
    }
}
