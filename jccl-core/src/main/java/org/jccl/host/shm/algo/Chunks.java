package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.shm.ShmSegmentDescriptor;
import org.jccl.host.shm.ShmTransport;
import org.jccl.internal.SegmentArrays;

/**
 * What the shared-memory algorithms share: chunk arithmetic, and the steps several of them take
 * the same way on a chunk (pointing the reduction at every rank's slot, copying every rank's slot
 * or reduced part out). Small static methods: the JIT inlines them.
 */
final class Chunks {
    private Chunks() {
    }

    /** Elements per chunk when each chunk carries {@code blocks} blocks in one slot. */
    static long elementsPerChunk(long slotBytes, int blocks, int elementBytes) {
        // (every call of every algorithm: no division where none is needed)
        long bytes = blocks == 1 ? slotBytes : slotBytes / blocks;
        long elems = Integer.bitCount(elementBytes) == 1 ? bytes >>> Integer.numberOfTrailingZeros(elementBytes)
                : bytes / elementBytes;
        return Math.max(1, elems);
    }

    /**
     * Starts the next chunk of a small rooted call (scatter, broadcast: a root that posts and
     * returns runs ahead) in the small ring when the call is one chunk of at most {@link
     * ShmSegmentDescriptor#SMALL_SLOT_BYTES} in a slot, else in the IN ring. {@code slotBytes}: what
     * the call puts into one rank's slot (the same on every rank: every rank takes the same ring).
     */
    static long beginRooted(ShmTransport t, long chunks, long slotBytes) {
        return fitsSmallRing(chunks, slotBytes) ? t.beginSmallChunk() : t.beginChunk();
    }

    /**
     * {@link #beginRooted} for a call whose root reads every rank's slot (gather, reduce: non-roots
     * that post and return run ahead): in the small ring, {@link ShmTransport#beginSmallChunkReadByRoot}.
     */
    static long beginReadByRoot(ShmTransport t, long chunks, long slotBytes) {
        return fitsSmallRing(chunks, slotBytes) ? t.beginSmallChunkReadByRoot() : t.beginChunk();
    }

    /** Whether a rooted call of {@code chunks} chunks of {@code slotBytes} a slot takes the small ring. */
    private static boolean fitsSmallRing(long chunks, long slotBytes) {
        return chunks == 1 && slotBytes <= ShmSegmentDescriptor.SMALL_SLOT_BYTES;
    }

    /**
     * Smallest block that a rank of a 2-rank call posts as its buffer's address instead of copying it
     * into its slot ({@link #postsAddress}). On the 16-core host (BENCHMARKS.md) a broadcast read from
     * the root's buffer took 0.35-0.6x the time of the copy through the slots from 64 KiB to 4 MiB.
     * Not with more ranks: several readers of the same pages at once were 2-5x slower than the slots
     * (the kernel pins each page for each reader), and the all-gather at 8 ranks 2-3.5x slower.
     */
    static final long READ_POSTER_MIN_BYTES = 32 << 10;

    /**
     * Whether this rank posts {@code src}'s address for a call whose peer reads {@code blockBytes} of
     * it (in one chunk): two ranks, a block of at least {@link #READ_POSTER_MIN_BYTES}, and a buffer the
     * peer can read in place (native memory, process_vm_readv allowed). The poster alone decides: the
     * reader learns it from the chunk's header ({@link ShmTransport#postedAddress}), and the poster
     * returns only once the reader is done ({@link ShmTransport#awaitAllDone}).
     */
    static boolean postsAddress(ShmTransport t, MemorySegment src, long blockBytes) {
        // the size first: a small call, most of them, decides on one comparison
        return blockBytes >= READ_POSTER_MIN_BYTES && t.size() == 2 && t.peerReads(1 - t.rank(), src);
    }

    /**
     * Copies {@code bytes} of peer {@code p}'s chunk {@code g} into {@code dst} at {@code dstOffset}:
     * from the peer's send buffer at {@code postedOffset} where it posted the buffer's address
     * ({@link #postsAddress}), else from its slot at {@code slotOffset}. Call after a wait for that
     * chunk.
     */
    static void readChunk(ShmTransport t, int p, long g, long slotOffset, long postedOffset, MemorySegment dst,
                          long dstOffset, long bytes) {
        // (no peer posts less, nor with more ranks; the rank count first, so that with more ranks
        // the branch never changes: the size first made the first 32 KiB chunk there a branch the
        // compiled code had never seen, which threw it away)
        long at = t.size() == 2 && bytes >= READ_POSTER_MIN_BYTES ? t.postedAddress(p, g) : 0;
        if (at != 0) {
            t.readPosted(p, at + postedOffset, dst, dstOffset, bytes);
        } else {
            MemorySegment.copy(t.segment(p), slotOffset, dst, dstOffset, bytes);
        }
    }

    /**
     * Ends a rooted call's chunk {@code g} that this rank posted as its buffer's address: checks
     * that the receivers' calls agree (root, type, count; else each side would wait for the other
     * below), then waits until they have read the buffer, so that the caller may change it.
     */
    static void endPostedAddress(ShmTransport t, long g) {
        t.awaitAllIn(g);
        t.endChunk(g);
        t.awaitAllDone(g);
    }

    /** Number of chunks for {@code count} elements (at least one, so every call synchronises). */
    static long chunkCount(long count, long perChunk) {
        return count <= perChunk ? 1 : (count + perChunk - 1) / perChunk;
    }

    /**
     * Start element of rank {@code r}'s part when {@code elems} elements are split over {@code n}
     * ranks in parts aligned to 16 elements (whole cache lines for 4-byte types).
     */
    static long partStart(long elems, int n, int r) {
        long part = (elems + n - 1) / n;
        part = (part + 15) & ~15L;
        return Math.min(elems, part * r);
    }

    /**
     * Reduces {@code elems} elements at {@code slotOffset} of every peer's segment and this rank's
     * own from {@code own} at {@code ownOffset} (its input, read where the caller gave it), in rank
     * order, into {@code dst} at {@code dstOffset}.
     */
    static void reduceSlotsAndOwn(ShmTransport t, DataType type, ReduceOp op, long slotOffset, MemorySegment own,
                                  long ownOffset, MemorySegment dst, long dstOffset, long elems) {
        int n = t.size();
        int r = t.rank();
        MemorySegment[] srcs = t.slotAndOwnSrcs;
        // Only a changed segment: see ShmTransport#slotAndOwnSrcs
        if (srcs[r] != own) {
            SegmentArrays.set(srcs, r, own);
        }
        java.util.Arrays.fill(t.srcOffsets, 0, n, slotOffset);
        t.srcOffsets[r] = ownOffset;
        Reductions.reduce(type, op, dst, dstOffset, srcs, t.srcOffsets, n, elems, n);
    }

    /**
     * The reduce-scatter step of chunk {@code g} ({@code elems} elements from element {@code first}
     * of {@code in}) that reduce and all-reduce share: copies the chunk into this rank's slot but
     * for its own part ({@link #partStart}; peers read every part but that one), posts it, waits
     * for every rank's, reduces its own part of every slot (its own elements from {@code in}
     * directly) into its result slot, and posts that.
     *
     * @return the offset of the result slot, from which {@link #copyReducedParts} collects
     */
    static long reduceOwnPart(ShmTransport t, long g, DataType type, ReduceOp op, MemorySegment in, long first,
                              long elems) {
        int n = t.size();
        int r = t.rank();
        int es = type.byteSize();
        MemorySegment mine = t.segment(r);
        long slot = t.inData(g);
        long res = t.resData(g);
        long lo = partStart(elems, n, r);
        long hi = partStart(elems, n, r + 1);
        MemorySegment.copy(in, first * es, mine, slot, lo * es);
        MemorySegment.copy(in, (first + hi) * es, mine, slot + hi * es, (elems - hi) * es);
        t.postIn(g);
        t.awaitAllIn(g);
        if (hi > lo) {
            reduceSlotsAndOwn(t, type, op, slot + lo * es, in, (first + lo) * es, mine, res + lo * es, hi - lo);
        }
        t.postReduced(g);
        return res;
    }

    /**
     * Copies {@code bytes} at {@code slotOffset} of every other rank p's segment into {@code dst} at
     * p * {@code blockBytes} + {@code dstOffset}, rank + 1 first, then rank + 2, ..., waiting for
     * each one's chunk {@code g} first; and this rank's own block from {@code own} at {@code
     * ownOffset}, where the caller gave it, not from its slot (nothing to copy in place, where it
     * is there already): by then the peers have read the slot's lines, which on some CPUs takes
     * them out of this core's cache (a 2-rank in-place all-gather of 16 B on the 2-core VM read
     * 2-3x its out-of-place time; see OneShotAllReduce). A peer that posted its send buffer's address
     * instead ({@link #postsAddress}) is read from there, at {@code peerSendOffset}.
     */
    static void copyFromEverySlot(ShmTransport t, long g, long slotOffset, MemorySegment dst, long blockBytes,
                                  long dstOffset, long bytes, MemorySegment own, long ownOffset, long peerSendOffset) {
        int n = t.size();
        int r = t.rank();
        ZeroCopy.copy(own, ownOffset, dst, r * blockBytes + dstOffset, bytes);
        for (int k = 1; k < n; k++) {
            int p = (r + k) % n;
            t.awaitIn(p, g);
            readChunk(t, p, g, slotOffset, peerSendOffset, dst, p * blockBytes + dstOffset, bytes);
        }
    }

    /**
     * Copies every rank's reduced part of chunk {@code g} ({@code elems} elements from element
     * {@code first}, parts by {@link #partStart}) from its result slot at {@code res} into {@code
     * dst}, rank {@code from} first, then from + 1, ...; waits for each other rank's reduction.
     */
    static void copyReducedParts(ShmTransport t, long g, long res, long elems, long first, int es, MemorySegment dst,
                                 int from) {
        int n = t.size();
        int r = t.rank();
        for (int k = 0; k < n; k++) {
            int p = (from + k) % n;
            long plo = partStart(elems, n, p);
            long phi = partStart(elems, n, p + 1);
            if (phi > plo) {
                if (p != r) {
                    t.awaitReduced(p, g);
                }
                MemorySegment.copy(t.segment(p), res + plo * es, dst, (first + plo) * es, (phi - plo) * es);
            }
        }
    }
}
