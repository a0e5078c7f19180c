package org.jccl;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Loads every kind of {@link MemorySegment} (heap segments of each array type, buffer-backed
 * ones) before any collective runs. While only native segments have been created, the JIT
 * compiles segment accesses assuming native is the only kind there is (class hierarchy
 * analysis); the first heap segment the process makes, anywhere (an array passed to any API,
 * {@code MemorySegment.copy} from an array, a benchmark's bookkeeping), then throws away every
 * such compiled method at once, the reduction kernels and the transports' hot loops included, and
 * they run slowly until recompiled, long enough to show in the timings of the calls that follow.
 * Loaded up front, the JIT relies on per-call-site type profiles instead, which
 * only the call sites that really see another kind pay for.
 */
final class JitStability {
    private JitStability() {
    }

    private static volatile long sink;

    /** Creates one segment of each kind (idempotent, cheap). */
    static void loadSegmentKinds() {
        MemorySegment[] kinds = {
            MemorySegment.ofArray(new byte[1]), MemorySegment.ofArray(new char[1]), MemorySegment.ofArray(new short[1]),
            MemorySegment.ofArray(new int[1]), MemorySegment.ofArray(new float[1]), MemorySegment.ofArray(new long[1]),
            MemorySegment.ofArray(new double[1]), MemorySegment.ofBuffer(ByteBuffer.allocate(1)),
        };
        long n = 0;
        for (MemorySegment s : kinds) {
            n += s.byteSize();
        }
        sink = n;
    }
}
