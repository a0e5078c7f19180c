package org.jccl.host.tcp;

/** Element arithmetic shared by the TCP algorithms: parts of a vector, chunks, tags. */
final class Parts {
    private Parts() {
    }

    /** Start element of part {@code i} when {@code count} elements are split into {@code n} near-equal parts. */
    static long start(long count, int n, int i) {
        return i * (count / n) + Math.min(i, count % n);
    }

    /** Smallest pipelining chunk: below it a chunk's fixed costs (a frame, a wake-up) dominate. */
    static final int MIN_PIPELINE_BYTES = 64 << 10;

    /**
     * Elements per pipelining chunk of a part of {@code partElems} elements: a quarter of the
     * part, so that the next step starts while the part still arrives, between {@value
     * #MIN_PIPELINE_BYTES} bytes and the transport's chunk size. Both ends of a message compute it
     * from the same part, so they cut it the same way.
     */
    static long pipelineElems(TcpTransport t, int es, long partElems) {
        long bytes = Math.min(t.chunkBytes(), Math.max(MIN_PIPELINE_BYTES, partElems * es / 4));
        return Math.max(1, bytes / es);
    }

    /** Chunks of a part of {@code len} elements (0 for an empty part). */
    static int chunks(long len, long per) {
        return (int) ((len + per - 1) / per);
    }

    /**
     * The tag of a message: algorithm, step and chunk, so that ranks running different
     * algorithms or steps never match each other's frames.
     */
    static long tag(int algo, int step, long chunk) {
        return ((long) algo << 56) | ((long) (step & 0xffffff) << 32) | (chunk & 0xffffffffL);
    }

    /** Algorithm ids of the tags. */
    static final int ONESHOT = 1, RING = 2, RHD = 3, RING_RS = 4, RING_AG = 5, DIRECT_AG = 6, TREE_BCAST = 7,
            CHAIN_BCAST = 8, DIRECT_REDUCE = 9, CHAIN_REDUCE = 10, GATHER = 11, SCATTER = 12, ALLTOALL = 13, BARRIER = 14,
            SPLIT = 15, HELLO = 16;
}
