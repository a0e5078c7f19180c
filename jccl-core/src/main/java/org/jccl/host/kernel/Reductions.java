package org.jccl.host.kernel;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.internal.Log;

/**
 * The host reduction kernels: elementwise reductions over {@link MemorySegment}s, used on the hot
 * path of every host collective. Allocation-free; offsets are in bytes, counts in elements.
 *
 * <h2>Semantics, per element</h2>
 * <ul>
 *   <li><b>Order</b>: inputs are combined strictly in the order given,
 *       {@code op(...op(op(x0, x1), x2)..., x(n-1))}, so a fixed rank order gives bitwise
 *       identical results on every rank and for every algorithm that uses this order.</li>
 *   <li><b>Accumulation precision</b>: FLOAT32 in float (not double), FLOAT64 in double.
 *       FLOAT16, BFLOAT16, FLOAT8_E4M3 and FLOAT8_E5M2 convert every input to float exactly,
 *       accumulate in float and round <em>once</em> at the end to the type, with the rules of
 *       {@link LowPrecision} (nearest even; E4M3 saturates to +-448; E5M2 overflows to
 *       infinity).</li>
 *   <li><b>SUM, PROD</b>: IEEE operations for floats; integers wrap modulo 2^bits as in C.</li>
 *   <li><b>MIN, MAX on floats</b>: as {@link Math#min(float, float)} / {@link Math#max(float, float)}:
 *       if any input is NaN the result is NaN, and -0.0 is below +0.0 (MIN of -0.0 and +0.0 is
 *       -0.0, MAX is +0.0, in any order). Integer MIN/MAX compare signed for INT types and
 *       unsigned for UINT types.</li>
 *   <li><b>AVG</b>: the sum (as SUM above) divided once by {@code avgDivisor}: floats divide in
 *       the accumulation precision and round once (low-precision types: one rounding after the
 *       division); integers divide the wrapped sum truncating toward zero as C does, unsigned for
 *       UINT types.</li>
 *   <li><b>PREMUL_SUM(s)</b>: {@code s*x0 + s*x1 + ...}; for floats {@code s} is first rounded to
 *       the accumulation precision (float, or double for FLOAT64) and each product is an
 *       ordinary rounded multiplication (no fused multiply-add); for integer types {@code s} is
 *       converted as by a Java {@code (long)} cast (truncation toward zero) and the products
 *       wrap like the type.</li>
 *   <li><b>BAND, BOR, BXOR</b>: integer types only.</li>
 *   <li><b>One input</b> (n = 1): SUM, PROD, MIN, MAX and the bitwise ops copy the input bits
 *       unchanged; AVG divides by {@code avgDivisor}; PREMUL_SUM multiplies by the scalar.</li>
 *   <li><b>NaN</b>: every NaN a float computation produces (reduce with n &gt;= 2, accumulate,
 *       scale, divide, AVG and PREMUL_SUM with one input) is stored as the canonical quiet NaN:
 *       0x7FC00000 for FLOAT32, 0x7FF8000000000000 for FLOAT64, 0x7FC0 for BFLOAT16, 0x7E00 for
 *       FLOAT16, 0x7F for the FP8 types. NaN payloads out of the hardware depend on operand
 *       order and instruction choice, so this is what keeps results bitwise identical across
 *       ranks, implementations and runs. A one-input copy keeps the input bits.</li>
 * </ul>
 *
 * <h2>Implementation</h2>
 * When the {@code jdk.incubator.vector} module is in the boot layer ({@code --add-modules
 * jdk.incubator.vector}), every type runs on the Vector API with the CPU's preferred vector width
 * (the low-precision types widen to float lanes and narrow back with exact lane formulas); only
 * the integer division of AVG (no SIMD integer divide) and tails shorter than a vector run in
 * plain Java. Without the module, or when the system property {@code jccl.kernels=scalar} is set,
 * plain Java loops run everything. Both perform the same operations per element and give
 * bitwise-identical results. {@link #implementation()} says which one runs.
 *
 * <p>Arguments are checked before any byte is written: an {@link IllegalArgumentException} names
 * the argument and what to do.
 */
public final class Reductions {
    private static final Log LOG = Log.get(Reductions.class);
    private static final Kernels IMPL = select();

    /**
     * The longest tail after the vector loop that a two-input float reduction runs without a loop
     * (one case per length, each of which a warm-up should run once).
     */
    public static final int FLOAT_TAIL_MAX = ScalarKernels.TAIL_MAX;

    private Reductions() {
    }

    /**
     * Reduces {@code n} inputs into {@code dst}:
     * {@code dst[i] = op(srcs[0][i], srcs[1][i], ..., srcs[n-1][i])}, combined in exactly that
     * order (see the class doc for the per-type rules).
     *
     * @param type           element type of every buffer
     * @param op             the operator; bitwise operators need an integer type
     * @param dst            where the result goes; it may be exactly one of the sources at the
     *                       same byte offset (in place), but must not partially overlap one
     * @param dstByteOffset  byte offset of element 0 of the result in {@code dst}
     * @param srcs           the inputs; the first {@code n} are used
     * @param srcByteOffsets byte offset of element 0 in each input; the first {@code n} are used
     * @param n              number of inputs, at least 1
     * @param count          number of elements, at least 0
     * @param avgDivisor     the divisor of AVG (usually the rank count), at least 1; ignored by
     *                       the other operators
     * @throws IllegalArgumentException on bad arguments, before any byte is written
     */
    public static void reduce(DataType type, ReduceOp op, MemorySegment dst, long dstByteOffset,
                              MemorySegment[] srcs, long[] srcByteOffsets, int n, long count, int avgDivisor) {
        reduce(IMPL, type, op, dst, dstByteOffset, srcs, srcByteOffsets, n, count, avgDivisor);
    }

    /**
     * {@code dst[i] = op(dst[i], src[i])}: the two-input step of pipelined algorithms.
     * AVG and PREMUL_SUM act as SUM here: callers scale each input first with
     * {@link #scale} (PREMUL_SUM) and divide the final sum with {@link #divide} (AVG).
     * For the low-precision types each call rounds its result to the type once, so a chain of
     * accumulate calls rounds at every step (unlike {@link #reduce}, which rounds once).
     *
     * @param src the input; it may be {@code dst} itself at the same offset, but must not
     *            partially overlap it
     * @throws IllegalArgumentException on bad arguments, before any byte is written
     */
    public static void accumulate(DataType type, ReduceOp op, MemorySegment dst, long dstByteOffset,
                                  MemorySegment src, long srcByteOffset, long count) {
        accumulate(IMPL, type, op, dst, dstByteOffset, src, srcByteOffset, count);
    }

    /**
     * {@code x = x * scalar} in place (the PREMUL_SUM pre-scaling of pipelined algorithms).
     * Floats multiply in the accumulation precision by the scalar rounded to it (float; double
     * for FLOAT64) and round the product once to the type; integer types multiply by
     * {@code (long) scalar} and wrap, exactly as {@link #reduce} does for PREMUL_SUM.
     *
     * @throws IllegalArgumentException on bad arguments (NaN scalar included), before any byte is written
     */
    public static void scale(DataType type, double scalar, MemorySegment seg, long byteOffset, long count) {
        scale(IMPL, type, scalar, seg, byteOffset, count);
    }

    /**
     * {@code x = x / divisor} in place (the AVG finish step): integer types truncate toward zero
     * like C (unsigned division for UINT types); float types divide in their accumulation
     * precision and round once to the type.
     *
     * @param divisor at least 1
     * @throws IllegalArgumentException on bad arguments, before any byte is written
     */
    public static void divide(DataType type, MemorySegment seg, long byteOffset, long count, int divisor) {
        divide(IMPL, type, seg, byteOffset, count, divisor);
    }

    /** Which implementation runs: {@code "vector(<species bits>)"} or {@code "scalar"}. */
    public static String implementation() {
        return IMPL.name();
    }

    // --------------------------------------------------------------- implementation-parametric

    static void reduce(Kernels k, DataType type, ReduceOp op, MemorySegment dst, long dstByteOffset,
                       MemorySegment[] srcs, long[] srcByteOffsets, int n, long count, int avgDivisor) {
        checkTypeOp(type, op);
        long bytes = checkRange(type, count, dst, dstByteOffset, "dst", "dstByteOffset");
        checkWritable(dst);
        if (srcs == null) {
            throw new IllegalArgumentException("srcs is null: pass an array of n source segments");
        }
        if (srcByteOffsets == null) {
            throw new IllegalArgumentException("srcByteOffsets is null: pass one byte offset per source");
        }
        if (n < 1 || n > srcs.length || n > srcByteOffsets.length) {
            throw new IllegalArgumentException("n is " + n + " but srcs has " + srcs.length
                    + " and srcByteOffsets " + srcByteOffsets.length + " entries: pass 1 <= n <= both lengths");
        }
        for (int i = 0; i < n; i++) {
            MemorySegment s = srcs[i];
            if (s == null) {
                throw new IllegalArgumentException("srcs[" + i + "] is null: pass a segment for every one of the n sources");
            }
            // Names are built only on failure: this runs on every call of the hot path.
            if (!inRange(s, srcByteOffsets[i], bytes)) {
                checkRange(s, srcByteOffsets[i], bytes, count, type, "srcs[" + i + "]", "srcByteOffsets[" + i + "]");
            }
            if (overlaps(dst, dstByteOffset, s, srcByteOffsets[i], bytes)) {
                checkOverlap(dst, dstByteOffset, s, srcByteOffsets[i], bytes, "srcs[" + i + "]");
            }
        }
        Op o = map(op.kind(), type);
        if (o == Op.AVG && avgDivisor < 1) {
            throw new IllegalArgumentException("avgDivisor is " + avgDivisor
                    + ": AVG needs the number to divide by (usually the rank count), at least 1");
        }
        if (count == 0) {
            return;
        }
        if (n == 1) {
            switch (o) {
                case AVG -> k.divide(type, avgDivisor, dst, dstByteOffset, srcs[0], srcByteOffsets[0], count);
                case PREMUL -> k.scale(type, op.scalar(), dst, dstByteOffset, srcs[0], srcByteOffsets[0], count);
                default -> copy(srcs[0], srcByteOffsets[0], dst, dstByteOffset, bytes);
            }
            return;
        }
        if (type.isInteger() && (o == Op.AVG || o == Op.PREMUL)) {
            // In wrapping arithmetic s*x0 + s*x1 + ... == s*(x0 + x1 + ...) exactly, and AVG is
            // defined as the wrapped sum divided once: a sum pass, then one pass over dst.
            k.reduce(type, Op.ADD, 1, 1, dst, dstByteOffset, srcs[0], srcByteOffsets[0],
                    srcs[1], srcByteOffsets[1], srcs, srcByteOffsets, n, count);
            if (o == Op.AVG) {
                k.divide(type, avgDivisor, dst, dstByteOffset, dst, dstByteOffset, count);
            } else {
                k.scale(type, op.scalar(), dst, dstByteOffset, dst, dstByteOffset, count);
            }
            return;
        }
        k.reduce(type, o, op.scalar(), avgDivisor, dst, dstByteOffset, srcs[0], srcByteOffsets[0],
                srcs[1], srcByteOffsets[1], srcs, srcByteOffsets, n, count);
    }

    static void accumulate(Kernels k, DataType type, ReduceOp op, MemorySegment dst, long dstByteOffset,
                           MemorySegment src, long srcByteOffset, long count) {
        checkTypeOp(type, op);
        long bytes = checkRange(type, count, dst, dstByteOffset, "dst", "dstByteOffset");
        checkWritable(dst);
        if (src == null) {
            throw new IllegalArgumentException("src is null: pass the segment to accumulate into dst");
        }
        checkRange(src, srcByteOffset, bytes, count, type, "src", "srcByteOffset");
        checkOverlap(dst, dstByteOffset, src, srcByteOffset, bytes, "src");
        if (count == 0) {
            return;
        }
        Op o = map(op.kind(), type);
        if (o == Op.AVG || o == Op.PREMUL) {
            o = Op.ADD;
        }
        k.reduce(type, o, 1, 1, dst, dstByteOffset, dst, dstByteOffset, src, srcByteOffset, null, null, 2, count);
    }

    static void scale(Kernels k, DataType type, double scalar, MemorySegment seg, long byteOffset, long count) {
        if (type == null) {
            throw new IllegalArgumentException("type is null: pass the DataType of the segment");
        }
        if (Double.isNaN(scalar)) {
            throw new IllegalArgumentException("scalar is NaN: pass the number to multiply by");
        }
        checkRange(type, count, seg, byteOffset, "seg", "byteOffset");
        checkWritable(seg);
        if (count > 0) {
            k.scale(type, scalar, seg, byteOffset, seg, byteOffset, count);
        }
    }

    static void divide(Kernels k, DataType type, MemorySegment seg, long byteOffset, long count, int divisor) {
        if (type == null) {
            throw new IllegalArgumentException("type is null: pass the DataType of the segment");
        }
        if (divisor < 1) {
            throw new IllegalArgumentException("divisor is " + divisor
                    + ": pass the number to divide by (usually the rank count), at least 1");
        }
        checkRange(type, count, seg, byteOffset, "seg", "byteOffset");
        checkWritable(seg);
        if (count > 0) {
            k.divide(type, divisor, seg, byteOffset, seg, byteOffset, count);
        }
    }

    // ------------------------------------------------------------------------------ checks

    private static Op map(ReduceOp.Kind kind, DataType type) {
        return switch (kind) {
            case SUM -> Op.ADD;
            case PROD -> Op.MUL;
            case MIN -> Op.MIN;
            case MAX -> Op.MAX;
            case AVG -> Op.AVG;
            case PREMUL_SUM -> Op.PREMUL;
            case BAND -> Op.AND;
            case BOR -> Op.OR;
            case BXOR -> Op.XOR;
        };
    }

    private static void checkTypeOp(DataType type, ReduceOp op) {
        if (type == null) {
            throw new IllegalArgumentException("type is null: pass the DataType of the buffers");
        }
        if (op == null) {
            throw new IllegalArgumentException("op is null: pass a ReduceOp such as ReduceOp.SUM");
        }
        op.checkSupports(type);
    }

    /** Checks count and the destination range; returns the byte length. */
    private static long checkRange(DataType type, long count, MemorySegment seg, long offset, String segName,
                                   String offName) {
        if (count < 0) {
            throw new IllegalArgumentException("count is " + count + ": pass the number of elements, at least 0");
        }
        if (count > Long.MAX_VALUE / type.byteSize()) {
            throw new IllegalArgumentException("count is " + count + ": " + type + " elements of that many "
                    + "would not fit in a segment; pass a smaller count");
        }
        long bytes = count * type.byteSize();
        if (seg == null) {
            throw new IllegalArgumentException(segName + " is null: pass a MemorySegment");
        }
        checkRange(seg, offset, bytes, count, type, segName, offName);
        return bytes;
    }

    private static boolean inRange(MemorySegment seg, long offset, long bytes) {
        return offset >= 0 && offset <= seg.byteSize() && bytes <= seg.byteSize() - offset;
    }

    private static void checkRange(MemorySegment seg, long offset, long bytes, long count, DataType type,
                                   String segName, String offName) {
        if (!inRange(seg, offset, bytes)) {
            throw new IllegalArgumentException(offName + " is " + offset + " and " + count + " " + type
                    + " elements need " + bytes + " bytes, but " + segName + " has " + seg.byteSize()
                    + " bytes: pass a larger segment or a smaller offset or count");
        }
    }

    private static void checkWritable(MemorySegment seg) {
        if (seg.isReadOnly()) {
            throw new IllegalArgumentException("the destination segment is read-only: pass a writable segment");
        }
    }

    /**
     * Rejects a source that partially overlaps the destination (exact aliasing is allowed). Only
     * native segments have addresses to compare; heap segments are not checked.
     */
    private static void checkOverlap(MemorySegment dst, long dOff, MemorySegment src, long sOff, long bytes,
                                     String srcName) {
        if (overlaps(dst, dOff, src, sOff, bytes)) {
            long d = dst.address() + dOff;
            long s = src.address() + sOff;
            throw new IllegalArgumentException(srcName + " overlaps the destination partially (source at 0x"
                    + Long.toHexString(s) + ", destination at 0x" + Long.toHexString(d) + ", " + bytes
                    + " bytes): pass either the very same range (in place) or disjoint ranges");
        }
    }

    /** True when both are native and their ranges overlap without being the very same range. */
    private static boolean overlaps(MemorySegment dst, long dOff, MemorySegment src, long sOff, long bytes) {
        if (bytes == 0 || !dst.isNative() || !src.isNative()) {
            return false;
        }
        long d = dst.address() + dOff;
        long s = src.address() + sOff;
        return d != s && d < s + bytes && s < d + bytes;
    }

    private static void copy(MemorySegment src, long sOff, MemorySegment dst, long dOff, long bytes) {
        if (src != dst || sOff != dOff) {
            MemorySegment.copy(src, sOff, dst, dOff, bytes);
        }
    }

    // ------------------------------------------------------------------------------ selection

    /** The kernels used when nothing else is asked for, chosen once. */
    static Kernels select() {
        if ("scalar".equalsIgnoreCase(System.getProperty("jccl.kernels"))) {
            return new ScalarKernels();
        }
        Kernels vector = vectorOrNull();
        return vector != null ? vector : new ScalarKernels();
    }

    /** The Vector API kernels, or null when the incubator module is absent or unusable here. */
    static Kernels vectorOrNull() {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            LOG.info(-1, () -> "jdk.incubator.vector is not in the boot layer: scalar reduction kernels "
                    + "(add --add-modules jdk.incubator.vector for SIMD)");
            return null;
        }
        try {
            // Reflection keeps VectorKernels (and the incubator classes it names) unloaded when
            // the module is missing.
            return (Kernels) Class.forName("org.jccl.host.kernel.VectorKernels")
                    .getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            LOG.warn(-1, "Vector API kernels unavailable (" + e + "): using scalar reduction kernels");
            return null;
        }
    }
}
