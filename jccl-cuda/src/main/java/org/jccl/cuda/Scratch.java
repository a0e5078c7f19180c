package org.jccl.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Per-thread native scratch memory for out-parameters of native calls, so the hot path never
 * allocates. Each use is local to one binding method: it is never held across calls.
 */
final class Scratch {
    /** Bytes available to one call. */
    static final long SIZE = 512;

    private static final ThreadLocal<MemorySegment> SEGMENT =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(SIZE, 16));

    private Scratch() {
    }

    /** This thread's scratch segment ({@link #SIZE} bytes, 16-byte aligned). */
    static MemorySegment get() {
        return SEGMENT.get();
    }
}
