package org.jccl.host.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jccl.DataType;

/**
 * The element loops in plain Java: the fallback when {@code jdk.incubator.vector} is absent,
 * the tails of the vector loops, and the only implementation of FLOAT16 and the FP8 types.
 *
 * <p>Per element, the operations are exactly those {@link Reductions} documents, in rank order;
 * {@link VectorKernels} performs the same operations lane by lane, which is what makes the two
 * bitwise identical. The static methods take an element range [from, to) so the vector loops
 * can hand their tails over.
 *
 * <p>Two inputs (two ranks, or a pairwise step) get their own loop without the loop over the
 * further inputs: C2 hoists that inner loop's checks above the element loop on the strength of
 * its profile, and a call with other offsets then traps and recompiles the kernel again and again.
 */
final class ScalarKernels implements Kernels {
    static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    /** Low-precision storage formats (a small int keeps the loop body switch cheap). */
    private static final int FP16 = 0, BF16 = 1, E4M3 = 2, E5M2 = 3;

    @Override
    public void reduce(DataType type, Op op, double scalar, int divisor, MemorySegment d, long dOff,
                       MemorySegment a, long aOff, MemorySegment b, long bOff,
                       MemorySegment[] rest, long[] restOff, int n, long count) {
        reduce(type, op, scalar, divisor, d, dOff, a, aOff, b, bOff, rest, restOff, n, 0, count);
    }

    @Override
    public void scale(DataType type, double scalar, MemorySegment d, long dOff, MemorySegment s, long sOff,
                      long count) {
        scale(type, scalar, d, dOff, s, sOff, 0, count);
    }

    @Override
    public void divide(DataType type, int divisor, MemorySegment d, long dOff, MemorySegment s, long sOff,
                       long count) {
        divide(type, divisor, d, dOff, s, sOff, 0, count);
    }

    @Override
    public String name() {
        return "scalar";
    }

    // ---------------------------------------------------------------------------------- reduce

    static void reduce(DataType type, Op op, double scalar, int divisor, MemorySegment d, long dOff,
                       MemorySegment a, long aOff, MemorySegment b, long bOff,
                       MemorySegment[] rest, long[] ro, int n, long from, long to) {
        switch (type) {
            case FLOAT32 -> f32(op, (float) scalar, (float) divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, from, to);
            case FLOAT64 -> f64(op, scalar, divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, from, to);
            case FLOAT16 -> low(FP16, op, (float) scalar, (float) divisor, d, dOff, a, aOff, b, bOff, rest, ro, n,
                    from, to);
            case BFLOAT16 -> low(BF16, op, (float) scalar, (float) divisor, d, dOff, a, aOff, b, bOff, rest, ro, n,
                    from, to);
            case FLOAT8_E4M3 -> low(E4M3, op, (float) scalar, (float) divisor, d, dOff, a, aOff, b, bOff, rest, ro,
                    n, from, to);
            case FLOAT8_E5M2 -> low(E5M2, op, (float) scalar, (float) divisor, d, dOff, a, aOff, b, bOff, rest, ro,
                    n, from, to);
            case INT8, UINT8 -> i8(op, type == DataType.UINT8, d, dOff, a, aOff, b, bOff, rest, ro, n, from, to);
            case INT32, UINT32 -> i32(op, type == DataType.UINT32, d, dOff, a, aOff, b, bOff, rest, ro, n, from, to);
            case INT64, UINT64 -> i64(op, type == DataType.UINT64, d, dOff, a, aOff, b, bOff, rest, ro, n, from, to);
        }
    }

    /**
     * The canonical NaN for any NaN: NaN payloads out of an arithmetic instruction depend on
     * operand order and instruction choice (scalar vs SIMD, JIT vs interpreter), so every float
     * result is normalized to keep results bitwise identical everywhere.
     */
    static float canon(float v) {
        return v != v ? Float.NaN : v;
    }

    static double canon(double v) {
        return v != v ? Double.NaN : v;
    }

    /** One step of a float reduction; PREMUL multiplies the new input, AVG sums. */
    static float step(Op op, float acc, float x, float s) {
        return switch (op) {
            case ADD, AVG -> acc + x;
            case MUL -> acc * x;
            case MIN -> Math.min(acc, x);
            case MAX -> Math.max(acc, x);
            case PREMUL -> acc + s * x;
            default -> throw new IllegalStateException(op + " on a float type");
        };
    }

    static double step(Op op, double acc, double x, double s) {
        return switch (op) {
            case ADD, AVG -> acc + x;
            case MUL -> acc * x;
            case MIN -> Math.min(acc, x);
            case MAX -> Math.max(acc, x);
            case PREMUL -> acc + s * x;
            default -> throw new IllegalStateException(op + " on a float type");
        };
    }

    private static void f32(Op op, float s, float dv, MemorySegment d, long dOff, MemorySegment a, long aOff,
                            MemorySegment b, long bOff, MemorySegment[] rest, long[] ro, int n, long from, long to) {
        boolean premul = op == Op.PREMUL;
        if (n == 2) {
            for (long i = from; i < to; i++) {
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, i * 4);
            }
            return;
        }
        for (long i = from; i < to; i++) {
            long o = i * 4;
            float x = a.get(F32, aOff + o);
            // The first input of a pre-multiplied sum is multiplied too: s*x0 + s*x1 + ...
            float acc = step(op, premul ? s * x : x, b.get(F32, bOff + o), s);
            for (int k = 2; k < n; k++) {
                acc = step(op, acc, rest[k].get(F32, ro[k] + o), s);
            }
            if (op == Op.AVG) {
                acc = acc / dv;
            }
            d.set(F32, dOff + o, canon(acc));
        }
    }

    /** The longest tail {@link #f32Tail} takes: a vector of 16 floats leaves at most 15. */
    static final int TAIL_MAX = 15;

    /**
     * Elements [from, count) of a two-input float reduction, at most {@value #TAIL_MAX} of them
     * (a vector loop's tail), without a loop. Why no loop: once the JVM has seen segments of
     * confined and of shared arenas (the warm-up's, a caller's, a peer's slot), C2's profiled loop
     * predication hoists a confined session's owner-thread check out of loops over segments, and
     * on shared segments that hoisted check fails at the loop's entry: the tail loop of
     * {@link #f32} trapped and was recompiled every few hundred milliseconds, through the warm-up
     * and into a caller's first calls (KernelRecompilationTest). Each element is that loop's
     * ({@link #f32Two}). The warm-up runs every length, so no case is new to a caller.
     */
    @SuppressWarnings("fallthrough")
    static void f32Tail(Op op, float s, float dv, MemorySegment d, long dOff, MemorySegment a, long aOff,
                        MemorySegment b, long bOff, long from, long count) {
        long o = from * 4;
        switch ((int) (count - from)) {
            case 15:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 56);
            case 14:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 52);
            case 13:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 48);
            case 12:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 44);
            case 11:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 40);
            case 10:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 36);
            case 9:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 32);
            case 8:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 28);
            case 7:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 24);
            case 6:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 20);
            case 5:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 16);
            case 4:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 12);
            case 3:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 8);
            case 2:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 4);
            case 1:
                f32Two(op, s, dv, d, dOff, a, aOff, b, bOff, o + 0);
            case 0:
                break;
            default:
                throw new IllegalArgumentException("a tail of " + (count - from) + " floats: at most " + TAIL_MAX);
        }
    }

    /** One element of a two-input float reduction ({@link #f32}'s loop, {@link #f32Tail}), at byte offset {@code o}. */
    private static void f32Two(Op op, float s, float dv, MemorySegment d, long dOff, MemorySegment a, long aOff,
                               MemorySegment b, long bOff, long o) {
        float x = a.get(F32, aOff + o);
        float acc = step(op, op == Op.PREMUL ? s * x : x, b.get(F32, bOff + o), s);
        d.set(F32, dOff + o, canon(op == Op.AVG ? acc / dv : acc));
    }

    private static void f64(Op op, double s, double dv, MemorySegment d, long dOff, MemorySegment a, long aOff,
                            MemorySegment b, long bOff, MemorySegment[] rest, long[] ro, int n, long from, long to) {
        boolean premul = op == Op.PREMUL;
        if (n == 2) {
            for (long i = from; i < to; i++) {
                long o = i * 8;
                double x = a.get(F64, aOff + o);
                double acc = step(op, premul ? s * x : x, b.get(F64, bOff + o), s);
                d.set(F64, dOff + o, canon(op == Op.AVG ? acc / dv : acc));
            }
            return;
        }
        for (long i = from; i < to; i++) {
            long o = i * 8;
            double x = a.get(F64, aOff + o);
            double acc = step(op, premul ? s * x : x, b.get(F64, bOff + o), s);
            for (int k = 2; k < n; k++) {
                acc = step(op, acc, rest[k].get(F64, ro[k] + o), s);
            }
            if (op == Op.AVG) {
                acc = acc / dv;
            }
            d.set(F64, dOff + o, canon(acc));
        }
    }

    private static void low(int fmt, Op op, float s, float dv, MemorySegment d, long dOff, MemorySegment a,
                            long aOff, MemorySegment b, long bOff, MemorySegment[] rest, long[] ro, int n, long from,
                            long to) {
        long size = fmt <= BF16 ? 2 : 1;
        boolean premul = op == Op.PREMUL;
        if (n == 2) {
            for (long i = from; i < to; i++) {
                long o = i * size;
                float x = load(fmt, a, aOff + o);
                float acc = step(op, premul ? s * x : x, load(fmt, b, bOff + o), s);
                store(fmt, d, dOff + o, canon(op == Op.AVG ? acc / dv : acc));
            }
            return;
        }
        for (long i = from; i < to; i++) {
            long o = i * size;
            float x = load(fmt, a, aOff + o);
            float acc = step(op, premul ? s * x : x, load(fmt, b, bOff + o), s);
            for (int k = 2; k < n; k++) {
                acc = step(op, acc, load(fmt, rest[k], ro[k] + o), s);
            }
            if (op == Op.AVG) {
                acc = acc / dv;
            }
            store(fmt, d, dOff + o, canon(acc));
        }
    }

    private static float load(int fmt, MemorySegment seg, long off) {
        return switch (fmt) {
            case FP16 -> Float.float16ToFloat(seg.get(I16, off));
            case BF16 -> LowPrecision.bf16ToFloat(seg.get(I16, off));
            case E4M3 -> LowPrecision.e4m3ToFloat(seg.get(I8, off));
            default -> LowPrecision.e5m2ToFloat(seg.get(I8, off));
        };
    }

    private static void store(int fmt, MemorySegment seg, long off, float v) {
        switch (fmt) {
            case FP16 -> seg.set(I16, off, Float.floatToFloat16(v));
            case BF16 -> seg.set(I16, off, LowPrecision.floatToBf16(v));
            case E4M3 -> seg.set(I8, off, LowPrecision.floatToE4m3(v));
            default -> seg.set(I8, off, LowPrecision.floatToE5m2(v));
        }
    }

    private static int format(DataType type) {
        return switch (type) {
            case FLOAT16 -> FP16;
            case BFLOAT16 -> BF16;
            case FLOAT8_E4M3 -> E4M3;
            case FLOAT8_E5M2 -> E5M2;
            default -> throw new IllegalStateException(type + " is not a low-precision type");
        };
    }

    /** One step of an integer reduction in 32-bit arithmetic; callers narrow to the type. */
    static int step(Op op, boolean unsigned, int acc, int x) {
        return switch (op) {
            case ADD -> acc + x;
            case MUL -> acc * x;
            case MIN -> (unsigned ? Integer.compareUnsigned(x, acc) < 0 : x < acc) ? x : acc;
            case MAX -> (unsigned ? Integer.compareUnsigned(x, acc) > 0 : x > acc) ? x : acc;
            case AND -> acc & x;
            case OR -> acc | x;
            case XOR -> acc ^ x;
            default -> throw new IllegalStateException(op + " on an integer type");
        };
    }

    static long step(Op op, boolean unsigned, long acc, long x) {
        return switch (op) {
            case ADD -> acc + x;
            case MUL -> acc * x;
            case MIN -> (unsigned ? Long.compareUnsigned(x, acc) < 0 : x < acc) ? x : acc;
            case MAX -> (unsigned ? Long.compareUnsigned(x, acc) > 0 : x > acc) ? x : acc;
            case AND -> acc & x;
            case OR -> acc | x;
            case XOR -> acc ^ x;
            default -> throw new IllegalStateException(op + " on an integer type");
        };
    }

    private static void i8(Op op, boolean unsigned, MemorySegment d, long dOff, MemorySegment a, long aOff,
                           MemorySegment b, long bOff, MemorySegment[] rest, long[] ro, int n, long from, long to) {
        // Unsigned bytes are zero-extended so that 32-bit MIN/MAX compare them correctly; sums
        // and products are right modulo 2^8 either way once narrowed.
        int mask = unsigned ? 0xFF : -1;
        if (n == 2) {
            for (long i = from; i < to; i++) {
                d.set(I8, dOff + i, (byte) step(op, false, a.get(I8, aOff + i) & mask, b.get(I8, bOff + i) & mask));
            }
            return;
        }
        for (long i = from; i < to; i++) {
            int acc = step(op, false, a.get(I8, aOff + i) & mask, b.get(I8, bOff + i) & mask);
            for (int k = 2; k < n; k++) {
                acc = step(op, false, acc, rest[k].get(I8, ro[k] + i) & mask);
            }
            d.set(I8, dOff + i, (byte) acc);
        }
    }

    private static void i32(Op op, boolean unsigned, MemorySegment d, long dOff, MemorySegment a, long aOff,
                            MemorySegment b, long bOff, MemorySegment[] rest, long[] ro, int n, long from, long to) {
        if (n == 2) {
            for (long i = from; i < to; i++) {
                long o = i * 4;
                d.set(I32, dOff + o, step(op, unsigned, a.get(I32, aOff + o), b.get(I32, bOff + o)));
            }
            return;
        }
        for (long i = from; i < to; i++) {
            long o = i * 4;
            int acc = step(op, unsigned, a.get(I32, aOff + o), b.get(I32, bOff + o));
            for (int k = 2; k < n; k++) {
                acc = step(op, unsigned, acc, rest[k].get(I32, ro[k] + o));
            }
            d.set(I32, dOff + o, acc);
        }
    }

    private static void i64(Op op, boolean unsigned, MemorySegment d, long dOff, MemorySegment a, long aOff,
                            MemorySegment b, long bOff, MemorySegment[] rest, long[] ro, int n, long from, long to) {
        if (n == 2) {
            for (long i = from; i < to; i++) {
                long o = i * 8;
                d.set(I64, dOff + o, step(op, unsigned, a.get(I64, aOff + o), b.get(I64, bOff + o)));
            }
            return;
        }
        for (long i = from; i < to; i++) {
            long o = i * 8;
            long acc = step(op, unsigned, a.get(I64, aOff + o), b.get(I64, bOff + o));
            for (int k = 2; k < n; k++) {
                acc = step(op, unsigned, acc, rest[k].get(I64, ro[k] + o));
            }
            d.set(I64, dOff + o, acc);
        }
    }

    // ----------------------------------------------------------------------------- scale/divide

    /** The PREMUL scalar of an integer type: a Java (long) cast, later wrapped to the width. */
    static long integerScalar(double scalar) {
        return (long) scalar;
    }

    static void scale(DataType type, double scalar, MemorySegment d, long dOff, MemorySegment s, long sOff,
                      long from, long to) {
        switch (type) {
            case FLOAT32 -> {
                float f = (float) scalar;
                for (long i = from; i < to; i++) {
                    d.set(F32, dOff + i * 4, canon(s.get(F32, sOff + i * 4) * f));
                }
            }
            case FLOAT64 -> {
                for (long i = from; i < to; i++) {
                    d.set(F64, dOff + i * 8, canon(s.get(F64, sOff + i * 8) * scalar));
                }
            }
            case FLOAT16, BFLOAT16, FLOAT8_E4M3, FLOAT8_E5M2 -> {
                int fmt = format(type);
                long size = type.byteSize();
                float f = (float) scalar;
                for (long i = from; i < to; i++) {
                    store(fmt, d, dOff + i * size, canon(load(fmt, s, sOff + i * size) * f));
                }
            }
            case INT8, UINT8 -> {
                int m = (int) integerScalar(scalar);
                for (long i = from; i < to; i++) {
                    d.set(I8, dOff + i, (byte) (s.get(I8, sOff + i) * m));
                }
            }
            case INT32, UINT32 -> {
                int m = (int) integerScalar(scalar);
                for (long i = from; i < to; i++) {
                    d.set(I32, dOff + i * 4, s.get(I32, sOff + i * 4) * m);
                }
            }
            case INT64, UINT64 -> {
                long m = integerScalar(scalar);
                for (long i = from; i < to; i++) {
                    d.set(I64, dOff + i * 8, s.get(I64, sOff + i * 8) * m);
                }
            }
        }
    }

    static void divide(DataType type, int divisor, MemorySegment d, long dOff, MemorySegment s, long sOff,
                       long from, long to) {
        switch (type) {
            case FLOAT32 -> {
                float f = divisor;
                for (long i = from; i < to; i++) {
                    d.set(F32, dOff + i * 4, canon(s.get(F32, sOff + i * 4) / f));
                }
            }
            case FLOAT64 -> {
                double f = divisor;
                for (long i = from; i < to; i++) {
                    d.set(F64, dOff + i * 8, canon(s.get(F64, sOff + i * 8) / f));
                }
            }
            case FLOAT16, BFLOAT16, FLOAT8_E4M3, FLOAT8_E5M2 -> {
                int fmt = format(type);
                long size = type.byteSize();
                float f = divisor;
                for (long i = from; i < to; i++) {
                    store(fmt, d, dOff + i * size, canon(load(fmt, s, sOff + i * size) / f));
                }
            }
            case INT8 -> {
                for (long i = from; i < to; i++) {
                    d.set(I8, dOff + i, (byte) (s.get(I8, sOff + i) / divisor));
                }
            }
            case UINT8 -> {
                for (long i = from; i < to; i++) {
                    d.set(I8, dOff + i, (byte) ((s.get(I8, sOff + i) & 0xFF) / divisor));
                }
            }
            case INT32 -> {
                for (long i = from; i < to; i++) {
                    d.set(I32, dOff + i * 4, s.get(I32, sOff + i * 4) / divisor);
                }
            }
            case UINT32 -> {
                for (long i = from; i < to; i++) {
                    d.set(I32, dOff + i * 4, Integer.divideUnsigned(s.get(I32, sOff + i * 4), divisor));
                }
            }
            case INT64 -> {
                long f = divisor;
                for (long i = from; i < to; i++) {
                    d.set(I64, dOff + i * 8, s.get(I64, sOff + i * 8) / f);
                }
            }
            case UINT64 -> {
                long f = divisor;
                for (long i = from; i < to; i++) {
                    d.set(I64, dOff + i * 8, Long.divideUnsigned(s.get(I64, sOff + i * 8), f));
                }
            }
        }
    }
}
