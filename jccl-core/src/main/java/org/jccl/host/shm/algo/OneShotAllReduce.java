package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.shm.ShmTransport;

/**
 * All-reduce for small messages: every rank copies its input into its slot, then every rank
 * reduces every rank's input (in rank order: the peers' slots and its own input, read where the
 * caller gave it) into its own output. One synchronisation per chunk; reads n times the data, so
 * it wins only while latency dominates.
 *
 * <p>A rank's own input is read from its buffer, not from its slot, although both hold the same
 * values (so the results are the same bit for bit): by then the peers have read the slot's line,
 * and on some CPUs that read takes the line out of this core's cache (measured on an AMD EPYC VM:
 * reading it back cost a transfer between cores, 150 ns of a 0.7 us all-reduce of 8 bytes on 2
 * ranks; docs/BENCHMARKS.md, fourteenth set).
 *
 * <p>With a root ({@code root >= 0}) it is the small reduce: only the root waits for every rank's
 * input, checks every rank's call and reduces, its own input read in place (so it posts its call
 * without data), which gives the all-reduce's result bit for bit. The other ranks copy and post
 * their input and return without waiting, like an eager MPI send: a loop of small reduces runs at
 * the root's pace (up to the ring's depth ahead; a rank reuses a slot only once the root has read
 * it). What they give up: a disagreement (about the root, the count, the type or the op) is found
 * by the rank or ranks that act as root, which fail in the call and abort the communicator, so
 * every other rank fails at its next collective. Under {@code JCCL_CHECK=1} ({@link
 * ShmTransport#eager()} false) the others wait for every rank's call too and fail in the call.
 */
public final class OneShotAllReduce {
    private OneShotAllReduce() {
    }

    /** Runs the all-reduce. */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        run(t, send, recv, op, -1);
    }

    /**
     * Runs the all-reduce, or a reduce to {@code root} when {@code root >= 0} ({@code recv} is then
     * written, and read, on the root only: null elsewhere is fine).
     */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, int root) {
        int r = t.rank();
        boolean reduces = root < 0 || root == r;
        int es = send.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), 1, es);
        long count = send.count();
        long chunks = Chunks.chunkCount(count, per);
        MemorySegment in = send.segment();
        MemorySegment out = reduces ? recv.segment() : null;
        MemorySegment mine = t.segment(r);
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            // A small reduce's non-roots run ahead in the small ring, as a gather's, at up to 4 ranks
            // (ShmTransport.READ_BY_ROOT_MAX_RANKS; at 16 ranks the small ring measured no faster)
            long g = root >= 0 && t.size() <= ShmTransport.READ_BY_ROOT_MAX_RANKS
                    ? Chunks.beginReadByRoot(t, chunks, elems * es) : t.beginChunk();
            long slot = t.inData(g);
            if (root == r) {
                t.touchAhead(g);
            }
            if (root != r) {
                MemorySegment.copy(in, first * es, mine, slot, elems * es);
            }
            // A reduce's root posts its call only: a second rank that believes it is the root
            // waits for it, and every root checks every call.
            t.postIn(g);
            if (!reduces && !t.eager()) {
                t.awaitAllIn(g); // JCCL_CHECK: every rank checks every call in the call
            }
            if (reduces) {
                t.awaitAllIn(g);
                Chunks.reduceSlotsAndOwn(t, send.type(), op, slot, in, first * es, out, first * es, elems);
            }
            t.endChunk(g);
        }
    }
}
