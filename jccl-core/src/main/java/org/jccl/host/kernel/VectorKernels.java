package org.jccl.host.kernel;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;
import org.jccl.DataType;

/**
 * The element loops on {@code jdk.incubator.vector} (preferred species of the CPU) for
 * FLOAT32, FLOAT64, BFLOAT16 and the integer types; FLOAT16, the FP8 types, integer division
 * and every tail shorter than a vector run in {@link ScalarKernels}.
 *
 * <p>Each lane performs exactly the operation sequence of {@link ScalarKernels} (same order,
 * no fused multiply-add, MIN/MAX with {@link Math#min(float, float)} semantics, BFLOAT16
 * rounding with the same integer formula, NaN results replaced by the canonical NaN), so
 * results are bitwise identical to it.
 *
 * <p>Why one method per type and operator: the Vector API is compiled to SIMD instructions
 * only when C2 sees the operator as a constant; an operator chosen inside the loop (a switch
 * or a parameter) makes C2 box every vector, which allocates and runs ~40x slower. Loads
 * read every input once per lane group before the store, so {@code d} may be one of the
 * inputs at the same offset (in place).
 *
 * <p>Loaded only through reflection by {@link Reductions}, so that jccl-core runs without the
 * incubator module.
 */
final class VectorKernels implements Kernels {
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> D = DoubleVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> L = LongVector.SPECIES_PREFERRED;
    /** Shorts with as many lanes as {@link #F}: BFLOAT16 widens to float lane for lane. */
    private static final VectorSpecies<Short> H =
            VectorSpecies.of(short.class, VectorShape.forBitSize(F.vectorBitSize() / 2));
    private static final int FN = F.length(), DN = D.length(), BN = B.length(), IN = I.length(),
            LN = L.length(), HN = H.length();

    @Override
    public String name() {
        return "vector(" + F.vectorBitSize() + ")";
    }

    @Override
    public void reduce(DataType type, Op op, double scalar, int divisor, MemorySegment d, long dOff,
                       MemorySegment a, long aOff, MemorySegment b, long bOff,
                       MemorySegment[] rest, long[] ro, int n, long count) {
        long done = switch (type) {
            case FLOAT32 -> f32(op, (float) scalar, divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case FLOAT64 -> f64(op, scalar, divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case BFLOAT16 -> bf16(op, (float) scalar, divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case INT8, UINT8 -> i8(op, type == DataType.UINT8, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case INT32, UINT32 -> i32(op, type == DataType.UINT32, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case INT64, UINT64 -> i64(op, type == DataType.UINT64, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            default -> 0;   // FLOAT16 and FP8: no exact vector conversion, scalar loops
        };
        if (done < count) {
            ScalarKernels.reduce(type, op, scalar, divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, done, count);
        }
    }

    @Override
    public void scale(DataType type, double scalar, MemorySegment d, long dOff, MemorySegment s, long sOff,
                      long count) {
        long m = ScalarKernels.integerScalar(scalar);
        long done = switch (type) {
            case FLOAT32 -> f32Scale((float) scalar, d, dOff, s, sOff, count);
            case FLOAT64 -> f64Scale(scalar, d, dOff, s, sOff, count);
            case BFLOAT16 -> bf16Scale((float) scalar, d, dOff, s, sOff, count);
            case INT8, UINT8 -> i8Scale((byte) m, d, dOff, s, sOff, count);
            case INT32, UINT32 -> i32Scale((int) m, d, dOff, s, sOff, count);
            case INT64, UINT64 -> i64Scale(m, d, dOff, s, sOff, count);
            default -> 0;
        };
        if (done < count) {
            ScalarKernels.scale(type, scalar, d, dOff, s, sOff, done, count);
        }
    }

    @Override
    public void divide(DataType type, int divisor, MemorySegment d, long dOff, MemorySegment s, long sOff,
                       long count) {
        // Integer division has no SIMD instruction on common CPUs: scalar loops for those.
        long done = switch (type) {
            case FLOAT32 -> f32Divide(divisor, d, dOff, s, sOff, count);
            case FLOAT64 -> f64Divide(divisor, d, dOff, s, sOff, count);
            case BFLOAT16 -> bf16Divide(divisor, d, dOff, s, sOff, count);
            default -> 0;
        };
        if (done < count) {
            ScalarKernels.divide(type, divisor, d, dOff, s, sOff, done, count);
        }
    }

    /** Every NaN lane becomes the canonical NaN, as in ScalarKernels (payloads would differ). */
    private static FloatVector canon(FloatVector v) {
        return v.blend(Float.NaN, v.compare(VectorOperators.NE, v));
    }

    private static DoubleVector canon(DoubleVector v) {
        return v.blend(Double.NaN, v.compare(VectorOperators.NE, v));
    }

    // BFLOAT16 <-> float, lane for lane; the same integer formulas as LowPrecision.

    private static FloatVector bf16Load(MemorySegment seg, long off) {
        ShortVector h = ShortVector.fromMemorySegment(H, seg, off, NO);
        IntVector i = (IntVector) h.convertShape(VectorOperators.ZERO_EXTEND_S2I, I, 0);
        return i.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    private static void bf16Store(FloatVector v, MemorySegment seg, long off) {
        IntVector bits = v.reinterpretAsInts();
        IntVector rounded = bits.add(0x7FFF).add(bits.lanewise(VectorOperators.LSHR, 16).and(1))
                .lanewise(VectorOperators.LSHR, 16);
        IntVector nan = bits.lanewise(VectorOperators.LSHR, 16).or(0x0040);
        IntVector r = rounded.blend(nan, bits.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000));
        ((ShortVector) r.convertShape(VectorOperators.I2S, H, 0)).intoMemorySegment(seg, off, NO);
    }


    // ------------------------------------------------------------------------------ f32

    private static long f32(Op op, float s, int divisor, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        return switch (op) {
            case ADD -> f32Add(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MUL -> f32Mul(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MIN -> f32Min(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MAX -> f32Max(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case AVG -> f32Avg((float) divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case PREMUL -> f32Premul(s, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            default -> throw new IllegalStateException(op + " on a float type");
        };
    }


    private static long f32Add(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % FN;
        for (long i = 0; i < end; i += FN) {
            long o = i * 4;
            FloatVector acc = FloatVector.fromMemorySegment(F, a, aOff + o, NO);
            acc = acc.add(FloatVector.fromMemorySegment(F, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.add(FloatVector.fromMemorySegment(F, rest[k], ro[k] + o, NO));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f32Mul(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % FN;
        for (long i = 0; i < end; i += FN) {
            long o = i * 4;
            FloatVector acc = FloatVector.fromMemorySegment(F, a, aOff + o, NO);
            acc = acc.mul(FloatVector.fromMemorySegment(F, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.mul(FloatVector.fromMemorySegment(F, rest[k], ro[k] + o, NO));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f32Min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % FN;
        for (long i = 0; i < end; i += FN) {
            long o = i * 4;
            FloatVector acc = FloatVector.fromMemorySegment(F, a, aOff + o, NO);
            acc = acc.min(FloatVector.fromMemorySegment(F, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.min(FloatVector.fromMemorySegment(F, rest[k], ro[k] + o, NO));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f32Max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % FN;
        for (long i = 0; i < end; i += FN) {
            long o = i * 4;
            FloatVector acc = FloatVector.fromMemorySegment(F, a, aOff + o, NO);
            acc = acc.max(FloatVector.fromMemorySegment(F, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.max(FloatVector.fromMemorySegment(F, rest[k], ro[k] + o, NO));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f32Avg(float dv, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % FN;
        for (long i = 0; i < end; i += FN) {
            long o = i * 4;
            FloatVector acc = FloatVector.fromMemorySegment(F, a, aOff + o, NO);
            acc = acc.add(FloatVector.fromMemorySegment(F, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.add(FloatVector.fromMemorySegment(F, rest[k], ro[k] + o, NO));
            }
            acc = acc.div(dv);
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f32Premul(float s, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % FN;
        FloatVector sv = FloatVector.broadcast(F, s);
        for (long i = 0; i < end; i += FN) {
            long o = i * 4;
            FloatVector acc = FloatVector.fromMemorySegment(F, a, aOff + o, NO).mul(sv);
            acc = acc.add(FloatVector.fromMemorySegment(F, b, bOff + o, NO).mul(sv));
            for (int k = 2; k < n; k++) {
                acc = acc.add(FloatVector.fromMemorySegment(F, rest[k], ro[k] + o, NO).mul(sv));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f32Scale(float m, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % FN;
        for (long i = 0; i < end; i += FN) {
            long o = i * 4;
            canon(FloatVector.fromMemorySegment(F, s, sOff + o, NO).mul(m)).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f32Divide(int divisor, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % FN;
        for (long i = 0; i < end; i += FN) {
            long o = i * 4;
            canon(FloatVector.fromMemorySegment(F, s, sOff + o, NO).div((float) divisor)).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    // ------------------------------------------------------------------------------ f64

    private static long f64(Op op, double s, int divisor, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        return switch (op) {
            case ADD -> f64Add(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MUL -> f64Mul(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MIN -> f64Min(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MAX -> f64Max(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case AVG -> f64Avg((double) divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case PREMUL -> f64Premul(s, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            default -> throw new IllegalStateException(op + " on a float type");
        };
    }


    private static long f64Add(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % DN;
        for (long i = 0; i < end; i += DN) {
            long o = i * 8;
            DoubleVector acc = DoubleVector.fromMemorySegment(D, a, aOff + o, NO);
            acc = acc.add(DoubleVector.fromMemorySegment(D, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.add(DoubleVector.fromMemorySegment(D, rest[k], ro[k] + o, NO));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f64Mul(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % DN;
        for (long i = 0; i < end; i += DN) {
            long o = i * 8;
            DoubleVector acc = DoubleVector.fromMemorySegment(D, a, aOff + o, NO);
            acc = acc.mul(DoubleVector.fromMemorySegment(D, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.mul(DoubleVector.fromMemorySegment(D, rest[k], ro[k] + o, NO));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f64Min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % DN;
        for (long i = 0; i < end; i += DN) {
            long o = i * 8;
            DoubleVector acc = DoubleVector.fromMemorySegment(D, a, aOff + o, NO);
            acc = acc.min(DoubleVector.fromMemorySegment(D, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.min(DoubleVector.fromMemorySegment(D, rest[k], ro[k] + o, NO));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f64Max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % DN;
        for (long i = 0; i < end; i += DN) {
            long o = i * 8;
            DoubleVector acc = DoubleVector.fromMemorySegment(D, a, aOff + o, NO);
            acc = acc.max(DoubleVector.fromMemorySegment(D, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.max(DoubleVector.fromMemorySegment(D, rest[k], ro[k] + o, NO));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f64Avg(double dv, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % DN;
        for (long i = 0; i < end; i += DN) {
            long o = i * 8;
            DoubleVector acc = DoubleVector.fromMemorySegment(D, a, aOff + o, NO);
            acc = acc.add(DoubleVector.fromMemorySegment(D, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.add(DoubleVector.fromMemorySegment(D, rest[k], ro[k] + o, NO));
            }
            acc = acc.div(dv);
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f64Premul(double s, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % DN;
        DoubleVector sv = DoubleVector.broadcast(D, s);
        for (long i = 0; i < end; i += DN) {
            long o = i * 8;
            DoubleVector acc = DoubleVector.fromMemorySegment(D, a, aOff + o, NO).mul(sv);
            acc = acc.add(DoubleVector.fromMemorySegment(D, b, bOff + o, NO).mul(sv));
            for (int k = 2; k < n; k++) {
                acc = acc.add(DoubleVector.fromMemorySegment(D, rest[k], ro[k] + o, NO).mul(sv));
            }
            canon(acc).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f64Scale(double m, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % DN;
        for (long i = 0; i < end; i += DN) {
            long o = i * 8;
            canon(DoubleVector.fromMemorySegment(D, s, sOff + o, NO).mul(m)).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long f64Divide(int divisor, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % DN;
        for (long i = 0; i < end; i += DN) {
            long o = i * 8;
            canon(DoubleVector.fromMemorySegment(D, s, sOff + o, NO).div((double) divisor)).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    // ------------------------------------------------------------------------------ bf16

    private static long bf16(Op op, float s, int divisor, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        return switch (op) {
            case ADD -> bf16Add(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MUL -> bf16Mul(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MIN -> bf16Min(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MAX -> bf16Max(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case AVG -> bf16Avg((float) divisor, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case PREMUL -> bf16Premul(s, d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            default -> throw new IllegalStateException(op + " on a float type");
        };
    }


    private static long bf16Add(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % HN;
        for (long i = 0; i < end; i += HN) {
            long o = i * 2;
            FloatVector acc = bf16Load(a, aOff + o);
            acc = acc.add(bf16Load(b, bOff + o));
            for (int k = 2; k < n; k++) {
                acc = acc.add(bf16Load(rest[k], ro[k] + o));
            }
            bf16Store(canon(acc), d, dOff + o);
        }
        return end;
    }

    private static long bf16Mul(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % HN;
        for (long i = 0; i < end; i += HN) {
            long o = i * 2;
            FloatVector acc = bf16Load(a, aOff + o);
            acc = acc.mul(bf16Load(b, bOff + o));
            for (int k = 2; k < n; k++) {
                acc = acc.mul(bf16Load(rest[k], ro[k] + o));
            }
            bf16Store(canon(acc), d, dOff + o);
        }
        return end;
    }

    private static long bf16Min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % HN;
        for (long i = 0; i < end; i += HN) {
            long o = i * 2;
            FloatVector acc = bf16Load(a, aOff + o);
            acc = acc.min(bf16Load(b, bOff + o));
            for (int k = 2; k < n; k++) {
                acc = acc.min(bf16Load(rest[k], ro[k] + o));
            }
            bf16Store(canon(acc), d, dOff + o);
        }
        return end;
    }

    private static long bf16Max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % HN;
        for (long i = 0; i < end; i += HN) {
            long o = i * 2;
            FloatVector acc = bf16Load(a, aOff + o);
            acc = acc.max(bf16Load(b, bOff + o));
            for (int k = 2; k < n; k++) {
                acc = acc.max(bf16Load(rest[k], ro[k] + o));
            }
            bf16Store(canon(acc), d, dOff + o);
        }
        return end;
    }

    private static long bf16Avg(float dv, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % HN;
        for (long i = 0; i < end; i += HN) {
            long o = i * 2;
            FloatVector acc = bf16Load(a, aOff + o);
            acc = acc.add(bf16Load(b, bOff + o));
            for (int k = 2; k < n; k++) {
                acc = acc.add(bf16Load(rest[k], ro[k] + o));
            }
            acc = acc.div(dv);
            bf16Store(canon(acc), d, dOff + o);
        }
        return end;
    }

    private static long bf16Premul(float s, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % HN;
        FloatVector sv = FloatVector.broadcast(F, s);
        for (long i = 0; i < end; i += HN) {
            long o = i * 2;
            FloatVector acc = bf16Load(a, aOff + o).mul(sv);
            acc = acc.add(bf16Load(b, bOff + o).mul(sv));
            for (int k = 2; k < n; k++) {
                acc = acc.add(bf16Load(rest[k], ro[k] + o).mul(sv));
            }
            bf16Store(canon(acc), d, dOff + o);
        }
        return end;
    }

    private static long bf16Scale(float m, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % HN;
        for (long i = 0; i < end; i += HN) {
            long o = i * 2;
            bf16Store(canon(bf16Load(s, sOff + o).mul(m)), d, dOff + o);
        }
        return end;
    }

    private static long bf16Divide(int divisor, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % HN;
        for (long i = 0; i < end; i += HN) {
            long o = i * 2;
            bf16Store(canon(bf16Load(s, sOff + o).div((float) divisor)), d, dOff + o);
        }
        return end;
    }

    // ------------------------------------------------------------------------------ i8

    private static long i8(Op op, boolean unsigned, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        return switch (op) {
            case ADD -> i8Add(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MUL -> i8Mul(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MIN -> unsigned ? i8Umin(d, dOff, a, aOff, b, bOff, rest, ro, n, count) : i8Min(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MAX -> unsigned ? i8Umax(d, dOff, a, aOff, b, bOff, rest, ro, n, count) : i8Max(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case AND -> i8And(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case OR -> i8Or(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case XOR -> i8Xor(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            default -> throw new IllegalStateException(op + " on an integer type");
        };
    }


    private static long i8Add(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.add(ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.add(ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8Mul(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.mul(ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.mul(ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8Min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.min(ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.min(ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8Max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.max(ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.max(ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8Umin(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.lanewise(VectorOperators.UMIN, ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.lanewise(VectorOperators.UMIN, ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8Umax(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.lanewise(VectorOperators.UMAX, ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.lanewise(VectorOperators.UMAX, ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8And(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.and(ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.and(ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8Or(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.or(ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.or(ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8Xor(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector acc = ByteVector.fromMemorySegment(B, a, aOff + o, NO);
            acc = acc.lanewise(VectorOperators.XOR, ByteVector.fromMemorySegment(B, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.lanewise(VectorOperators.XOR, ByteVector.fromMemorySegment(B, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i8Scale(byte m, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % BN;
        for (long i = 0; i < end; i += BN) {
            long o = i * 1;
            ByteVector.fromMemorySegment(B, s, sOff + o, NO).mul(m).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    // ------------------------------------------------------------------------------ i32

    private static long i32(Op op, boolean unsigned, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        return switch (op) {
            case ADD -> i32Add(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MUL -> i32Mul(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MIN -> unsigned ? i32Umin(d, dOff, a, aOff, b, bOff, rest, ro, n, count) : i32Min(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MAX -> unsigned ? i32Umax(d, dOff, a, aOff, b, bOff, rest, ro, n, count) : i32Max(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case AND -> i32And(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case OR -> i32Or(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case XOR -> i32Xor(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            default -> throw new IllegalStateException(op + " on an integer type");
        };
    }


    private static long i32Add(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.add(IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.add(IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32Mul(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.mul(IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.mul(IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32Min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.min(IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.min(IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32Max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.max(IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.max(IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32Umin(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.lanewise(VectorOperators.UMIN, IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.lanewise(VectorOperators.UMIN, IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32Umax(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.lanewise(VectorOperators.UMAX, IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.lanewise(VectorOperators.UMAX, IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32And(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.and(IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.and(IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32Or(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.or(IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.or(IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32Xor(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector acc = IntVector.fromMemorySegment(I, a, aOff + o, NO);
            acc = acc.lanewise(VectorOperators.XOR, IntVector.fromMemorySegment(I, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.lanewise(VectorOperators.XOR, IntVector.fromMemorySegment(I, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i32Scale(int m, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % IN;
        for (long i = 0; i < end; i += IN) {
            long o = i * 4;
            IntVector.fromMemorySegment(I, s, sOff + o, NO).mul(m).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    // ------------------------------------------------------------------------------ i64

    private static long i64(Op op, boolean unsigned, MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        return switch (op) {
            case ADD -> i64Add(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MUL -> i64Mul(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MIN -> unsigned ? i64Umin(d, dOff, a, aOff, b, bOff, rest, ro, n, count) : i64Min(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case MAX -> unsigned ? i64Umax(d, dOff, a, aOff, b, bOff, rest, ro, n, count) : i64Max(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case AND -> i64And(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case OR -> i64Or(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            case XOR -> i64Xor(d, dOff, a, aOff, b, bOff, rest, ro, n, count);
            default -> throw new IllegalStateException(op + " on an integer type");
        };
    }


    private static long i64Add(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO);
            acc = acc.add(LongVector.fromMemorySegment(L, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.add(LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64Mul(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO);
            acc = acc.mul(LongVector.fromMemorySegment(L, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.mul(LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64Min(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO);
            acc = acc.min(LongVector.fromMemorySegment(L, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.min(LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64Max(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO);
            acc = acc.max(LongVector.fromMemorySegment(L, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.max(LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64Umin(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO).lanewise(VectorOperators.XOR, Long.MIN_VALUE);
            acc = acc.min(LongVector.fromMemorySegment(L, b, bOff + o, NO).lanewise(VectorOperators.XOR, Long.MIN_VALUE));
            for (int k = 2; k < n; k++) {
                acc = acc.min(LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO).lanewise(VectorOperators.XOR, Long.MIN_VALUE));
            }
            acc.lanewise(VectorOperators.XOR, Long.MIN_VALUE).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64Umax(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO).lanewise(VectorOperators.XOR, Long.MIN_VALUE);
            acc = acc.max(LongVector.fromMemorySegment(L, b, bOff + o, NO).lanewise(VectorOperators.XOR, Long.MIN_VALUE));
            for (int k = 2; k < n; k++) {
                acc = acc.max(LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO).lanewise(VectorOperators.XOR, Long.MIN_VALUE));
            }
            acc.lanewise(VectorOperators.XOR, Long.MIN_VALUE).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64And(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO);
            acc = acc.and(LongVector.fromMemorySegment(L, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.and(LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64Or(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO);
            acc = acc.or(LongVector.fromMemorySegment(L, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.or(LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64Xor(MemorySegment d, long dOff, MemorySegment a, long aOff, MemorySegment b, long bOff,
            MemorySegment[] rest, long[] ro, int n, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector acc = LongVector.fromMemorySegment(L, a, aOff + o, NO);
            acc = acc.lanewise(VectorOperators.XOR, LongVector.fromMemorySegment(L, b, bOff + o, NO));
            for (int k = 2; k < n; k++) {
                acc = acc.lanewise(VectorOperators.XOR, LongVector.fromMemorySegment(L, rest[k], ro[k] + o, NO));
            }
            acc.intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }

    private static long i64Scale(long m, MemorySegment d, long dOff, MemorySegment s, long sOff, long count) {
        long end = count - count % LN;
        for (long i = 0; i < end; i += LN) {
            long o = i * 8;
            LongVector.fromMemorySegment(L, s, sOff + o, NO).mul(m).intoMemorySegment(d, dOff + o, NO);
        }
        return end;
    }
}
