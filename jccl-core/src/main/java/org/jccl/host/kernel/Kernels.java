package org.jccl.host.kernel;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;

/**
 * One implementation of the element loops: {@link ScalarKernels} (plain Java) or
 * {@link VectorKernels} (jdk.incubator.vector). Both must produce bitwise-identical results,
 * so each performs, per element, exactly the operation sequence documented in
 * {@link Reductions}. Arguments are validated by {@link Reductions} before they get here.
 */
interface Kernels {
    /**
     * {@code d[i] = op(...op(op(a[i], b[i]), rest[2][i])..., rest[n-1][i])} for i in [0, count).
     * {@code rest} and {@code restOff} are read from index 2 only (they may be null when n == 2),
     * so a caller can pass its source array itself. n >= 2. Integer types never get AVG or
     * PREMUL. {@code scalar} is used by PREMUL only, {@code divisor} by AVG only.
     */
    void reduce(DataType type, Op op, double scalar, int divisor, MemorySegment d, long dOff,
                MemorySegment a, long aOff, MemorySegment b, long bOff,
                MemorySegment[] rest, long[] restOff, int n, long count);

    /** {@code d[i] = s[i] * scalar} rounded once to the type, i in [0, count). */
    void scale(DataType type, double scalar, MemorySegment d, long dOff, MemorySegment s, long sOff, long count);

    /** {@code d[i] = s[i] / divisor} (C truncation for integer types), i in [0, count). */
    void divide(DataType type, int divisor, MemorySegment d, long dOff, MemorySegment s, long sOff, long count);

    /** Name reported by {@link Reductions#implementation()}. */
    String name();
}
