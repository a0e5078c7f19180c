package org.jccl.host.algo;

/** Chunk arithmetic shared by the algorithms. */
final class Chunks {
    private Chunks() {
    }

    /** Elements per chunk when each chunk carries {@code blocks} blocks in one slot. */
    static long elementsPerChunk(long slotBytes, int blocks, int elementBytes) {
        return Math.max(1, slotBytes / blocks / elementBytes);
    }

    /** Number of chunks for {@code count} elements (at least one, so every call synchronises). */
    static long chunkCount(long count, long perChunk) {
        return count == 0 ? 1 : (count + perChunk - 1) / perChunk;
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
}
