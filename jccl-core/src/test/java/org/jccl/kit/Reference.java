package org.jccl.kit;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * Test data and an independent reference: element values chosen so that every reduction is
 * exact (integer-valued floats inside each type's exact range; full-range integers with C
 * wrap-around computed in long arithmetic), decoded with this class's own decoders. It uses no
 * jccl kernel: conformance kit cases and backend tests compare against it.
 *
 * <p>Floating-point values are small integers whose magnitude shrinks with the number of ranks
 * ({@link #floatRange}), so that a sum over every rank stays exact in the narrowest type and the
 * result is the same whatever order a backend reduces in.
 */
public final class Reference {
    private Reference() {
    }

    static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final ValueLayout.OfDouble DOUBLE = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    /** Value of element i of rank r (as a long for integers, integer-valued double for floats). */
    public static long intValue(DataType t, ReduceOp op, long seed, int r, long i) {
        SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + r * 7_919L + i);
        long v = rnd.nextLong();
        if (op.kind() == ReduceOp.Kind.PROD) {
            // keep products of a few ranks non-trivial but not always zero
            v = (v & 3) + 1;
        }
        return v;
    }

    /**
     * Value of element i of rank r for a float type, with n ranks taking part: an integer in
     * [-range, range] ({@link #floatRange}); PROD uses +-1 and +-2 (powers of two stay exact).
     */
    public static double floatValue(DataType t, ReduceOp op, long seed, int r, long i, int n) {
        return floatValue(op, seed, r, i, floatRange(t, op, n));
    }

    /** {@link #floatValue(DataType, ReduceOp, long, int, long, int)} with its {@link #floatRange} given (loops hoist it). */
    private static double floatValue(ReduceOp op, long seed, int r, long i, int range) {
        SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + r * 7_919L + i);
        if (op.kind() == ReduceOp.Kind.PROD) {
            int[] vals = {-2, -1, 1, 2};
            return vals[rnd.nextInt(4)];
        }
        return rnd.nextInt(2 * range + 1) - range;
    }

    /**
     * Largest magnitude of a rank's float input for n ranks: every partial sum (times the
     * PREMUL_SUM scalar) stays an integer the type holds exactly (FP8 E5M2 up to 8, E4M3 up to 16,
     * BFLOAT16 up to 256, FLOAT16 up to 2048), at most 8. From 9 ranks on, E5M2 sums can round.
     */
    public static int floatRange(DataType t, ReduceOp op, int n) {
        int exact = switch (t) {
            case FLOAT8_E5M2 -> 8;
            case FLOAT8_E4M3 -> 16;
            case BFLOAT16 -> 256;
            case FLOAT16 -> 2048;
            default -> 1 << 20;
        };
        int scale = op.kind() == ReduceOp.Kind.PREMUL_SUM ? (int) Math.ceil(Math.abs(op.scalar())) : 1;
        return Math.max(1, Math.min(8, exact / (Math.max(1, n) * Math.max(1, scale))));
    }

    /** Writes rank r's input (count elements) for a job of n ranks. */
    public static void fill(MemorySegment seg, DataType t, ReduceOp op, long seed, int r, long count, int n) {
        fill(seg, t, op, seed, r, 0, count, n);
    }

    /** Writes elements [from, to) of rank r's input (element i at index i of {@code seg}, as {@link #fill} does). */
    public static void fill(MemorySegment seg, DataType t, ReduceOp op, long seed, int r, long from, long to, int n) {
        if (t.isInteger()) {
            for (long i = from; i < to; i++) {
                writeInt(seg, t, i, intValue(t, op, seed, r, i));
            }
            return;
        }
        int range = floatRange(t, op, n);
        for (long i = from; i < to; i++) {
            writeFloat(seg, t, i, floatValue(op, seed, r, i, range));
        }
    }

    /**
     * Rank r's input (count elements) for a job of n ranks, as {@link #fill} writes it: a read-only
     * segment computed once per JVM while it is among the last ones asked for (the ranks of a
     * world of threads all check against the others' inputs).
     */
    public static MemorySegment input(DataType t, ReduceOp op, long seed, int r, long count, int n) {
        return (MemorySegment) RECENT.get(new InputKey(t, op, seed, r, count, n));
    }

    public static void writeInt(MemorySegment seg, DataType t, long i, long v) {
        switch (t.byteSize()) {
            case 1 -> seg.set(ValueLayout.JAVA_BYTE, i, (byte) v);
            case 4 -> seg.set(INT, i * 4, (int) v);
            case 8 -> seg.set(LONG, i * 8, v);
            default -> throw new AssertionError(t);
        }
    }

    public static long readInt(MemorySegment seg, DataType t, long i) {
        return switch (t) {
            case INT8 -> seg.get(ValueLayout.JAVA_BYTE, i);
            case UINT8 -> seg.get(ValueLayout.JAVA_BYTE, i) & 0xffL;
            case INT32 -> seg.get(INT, i * 4);
            case UINT32 -> seg.get(INT, i * 4) & 0xffffffffL;
            case INT64, UINT64 -> seg.get(LONG, i * 8);
            default -> throw new AssertionError(t);
        };
    }

    /** Normalises a long to the type's width and signedness. */
    public static long norm(DataType t, long v) {
        return switch (t) {
            case INT8 -> (byte) v;
            case UINT8 -> v & 0xff;
            case INT32 -> (int) v;
            case UINT32 -> v & 0xffffffffL;
            default -> v;
        };
    }

    public static void writeFloat(MemorySegment seg, DataType t, long i, double v) {
        switch (t) {
            case FLOAT32 -> seg.set(FLOAT, i * 4, (float) v);
            case FLOAT64 -> seg.set(DOUBLE, i * 8, v);
            case FLOAT16 -> seg.set(SHORT, i * 2, Float.floatToFloat16((float) v));
            case BFLOAT16 -> seg.set(SHORT, i * 2, (short) (Float.floatToRawIntBits((float) v) >>> 16));
            case FLOAT8_E4M3 -> seg.set(ValueLayout.JAVA_BYTE, i, encodeExact(t, v));
            case FLOAT8_E5M2 -> seg.set(ValueLayout.JAVA_BYTE, i, encodeExact(t, v));
            default -> throw new AssertionError(t);
        }
    }

    /** {@code v} rounded to the nearest value of a 16-bit float type (so that writing it is exact). */
    public static double readFloatRounded(DataType t, double v) {
        return t == DataType.FLOAT16 ? Float.float16ToFloat(Float.floatToFloat16((float) v))
                : Float.intBitsToFloat(Float.floatToRawIntBits((float) v) & 0xffff0000);
    }

    public static double readFloat(MemorySegment seg, DataType t, long i) {
        return switch (t) {
            case FLOAT32 -> seg.get(FLOAT, i * 4);
            case FLOAT64 -> seg.get(DOUBLE, i * 8);
            case FLOAT16 -> Float.float16ToFloat(seg.get(SHORT, i * 2));
            case BFLOAT16 -> Float.intBitsToFloat((seg.get(SHORT, i * 2) & 0xffff) << 16);
            case FLOAT8_E4M3 -> FP8_DECODED[0][seg.get(ValueLayout.JAVA_BYTE, i) & 0xff];
            case FLOAT8_E5M2 -> FP8_DECODED[1][seg.get(ValueLayout.JAVA_BYTE, i) & 0xff];
            default -> throw new AssertionError(t);
        };
    }

    /** Decodes an FP8 code by the OCP definitions. */
    public static double decodeFp8(DataType t, int code) {
        int sign = (code >>> 7) == 1 ? -1 : 1;
        int expBits = t == DataType.FLOAT8_E4M3 ? 4 : 5;
        int manBits = 7 - expBits;
        int bias = t == DataType.FLOAT8_E4M3 ? 7 : 15;
        int e = (code >>> manBits) & ((1 << expBits) - 1);
        int m = code & ((1 << manBits) - 1);
        if (t == DataType.FLOAT8_E4M3 && e == 15 && m == 7) {
            return Double.NaN;
        }
        if (t == DataType.FLOAT8_E5M2 && e == 31) {
            return m == 0 ? sign * Double.POSITIVE_INFINITY : Double.NaN;
        }
        if (e == 0) {
            return sign * (m / (double) (1 << manBits)) * Math.pow(2, 1 - bias);
        }
        return sign * (1 + m / (double) (1 << manBits)) * Math.pow(2, e - bias);
    }

    private static final double[][] FP8_DECODED = new double[2][256];
    private static final byte[][] FP8_SMALL_INTS = new byte[2][65];

    static {
        for (int k = 0; k < 2; k++) {
            DataType t = k == 0 ? DataType.FLOAT8_E4M3 : DataType.FLOAT8_E5M2;
            java.util.Arrays.fill(FP8_SMALL_INTS[k], (byte) 0x7f);
            for (int c = 255; c >= 0; c--) {
                double d = decodeFp8(t, c);
                FP8_DECODED[k][c] = d;
                if (d == Math.rint(d) && Math.abs(d) <= 32 && !(d == 0 && c != 0)) {
                    FP8_SMALL_INTS[k][(int) d + 32] = (byte) c;
                }
            }
        }
    }

    public static byte encodeExact(DataType t, double v) {
        int k = t == DataType.FLOAT8_E4M3 ? 0 : 1;
        if (v == Math.rint(v) && Math.abs(v) <= 32) {
            byte c = FP8_SMALL_INTS[k][(int) v + 32];
            if (FP8_DECODED[k][c & 0xff] == v) {
                return c;
            }
        }
        throw new AssertionError(v + " is not a small integer exact in " + t);
    }

    /** Reference reduction of element i over n ranks (integers: the exact wrapped result). */
    public static long expectedInt(DataType t, ReduceOp op, long seed, int n, long i) {
        long acc = 0;
        boolean unsigned = t.kind() == DataType.Kind.UNSIGNED;
        for (int r = 0; r < n; r++) {
            long v = norm(t, intValue(t, op, seed, r, i));
            if (op.kind() == ReduceOp.Kind.PREMUL_SUM) {
                v = norm(t, v * (long) op.scalar());
            }
            if (r == 0) {
                acc = v;
                continue;
            }
            acc = switch (op.kind()) {
                case SUM, AVG, PREMUL_SUM -> norm(t, acc + v);
                case PROD -> norm(t, acc * v);
                case MIN -> (unsigned ? Long.compareUnsigned(v, acc) < 0 : v < acc) ? v : acc;
                case MAX -> (unsigned ? Long.compareUnsigned(v, acc) > 0 : v > acc) ? v : acc;
                case BAND -> acc & v;
                case BOR -> acc | v;
                case BXOR -> acc ^ v;
            };
        }
        if (op.kind() == ReduceOp.Kind.AVG) {
            acc = norm(t, unsigned ? Long.divideUnsigned(acc, n) : acc / n);
        }
        return norm(t, acc);
    }

    public static double expectedFloat(DataType t, ReduceOp op, long seed, int n, long i) {
        return expectedFloat(op, seed, n, i, floatRange(t, op, n));
    }

    /** {@link #expectedFloat(DataType, ReduceOp, long, int, long)} with the inputs' {@link #floatRange} given. */
    private static double expectedFloat(ReduceOp op, long seed, int n, long i, int range) {
        double acc = 0;
        for (int r = 0; r < n; r++) {
            double v = floatValue(op, seed, r, i, range);
            if (op.kind() == ReduceOp.Kind.PREMUL_SUM) {
                v *= op.scalar();
            }
            if (r == 0) {
                acc = v;
                continue;
            }
            acc = switch (op.kind()) {
                case SUM, AVG, PREMUL_SUM -> acc + v;
                case PROD -> acc * v;
                case MIN -> Math.min(acc, v);
                case MAX -> Math.max(acc, v);
                default -> throw new AssertionError(op);
            };
        }
        return op.kind() == ReduceOp.Kind.AVG ? acc / n : acc;
    }

    /** Relative tolerance of AVG results (one rounding in the type); 0 for exact ops. */
    public static double tolerance(DataType t, ReduceOp op) {
        if (op.kind() != ReduceOp.Kind.AVG) {
            return 0;
        }
        return switch (t) {
            case FLOAT64 -> 1e-15;
            case FLOAT32 -> 1e-7;
            case FLOAT16 -> 1e-3;
            case BFLOAT16 -> 8e-3;
            case FLOAT8_E4M3 -> 0.07;
            case FLOAT8_E5M2 -> 0.13;
            default -> 0;
        };
    }

    /** Number of elements of {@code got} (count elements) that differ from the reference for n ranks. */
    public static long countWrong(MemorySegment got, long gotOffsetElems, DataType t, ReduceOp op, long seed, int n,
                           long firstIndex, long count) {
        if (count >= SHARED_FROM) {
            return countWrong(got, gotOffsetElems, t, op, expected(t, op, seed, n, firstIndex, count));
        }
        long wrong = 0;
        double tol = tolerance(t, op);
        for (long k = 0; k < count; k++) {
            long i = firstIndex + k;
            if (t.isInteger()) {
                if (norm(t, readInt(got, t, gotOffsetElems + k)) != expectedInt(t, op, seed, n, i)) {
                    wrong++;
                }
            } else {
                double g = readFloat(got, t, gotOffsetElems + k);
                double e = expectedFloat(t, op, seed, n, i);
                if (tol == 0 ? g != e : Math.abs(g - e) > tol * Math.max(1, Math.abs(e))) {
                    wrong++;
                }
            }
        }
        return wrong;
    }

    /** The same comparison as above, against reference results computed beforehand (a long[] or a double[]). */
    private static long countWrong(MemorySegment got, long gotOffsetElems, DataType t, ReduceOp op, Object expected) {
        long wrong = 0;
        if (expected instanceof long[] e) {
            for (int k = 0; k < e.length; k++) {
                if (norm(t, readInt(got, t, gotOffsetElems + k)) != e[k]) {
                    wrong++;
                }
            }
            return wrong;
        }
        double[] e = (double[]) expected;
        double tol = tolerance(t, op);
        for (int k = 0; k < e.length; k++) {
            double g = readFloat(got, t, gotOffsetElems + k);
            if (tol == 0 ? g != e[k] : Math.abs(g - e[k]) > tol * Math.max(1, Math.abs(e[k]))) {
                wrong++;
            }
        }
        return wrong;
    }

    /**
     * Checks of at least this many elements compare against reference results computed once per
     * JVM ({@link #expected}) instead of element by element.
     */
    static final long SHARED_FROM = 4096;

    /** Elements [first, first + count) of the reference reduction over n ranks: a long[] for integers, a double[] for floats. */
    static Object expected(DataType t, ReduceOp op, long seed, int n, long first, long count) {
        if (count > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("count " + count);
        }
        return RECENT.get(new ExpectedKey(t, op, seed, n, first, count));
    }

    /**
     * What {@link Recent} computes: a result of {@link #size} elements, whose elements [from, to)
     * {@link #compute} writes (the ranks that ask for it at the same time share the chunks).
     */
    private interface Key {
        Object allocate();

        void compute(Object result, long from, long to);

        long size();

        long bytes();
    }

    private record ExpectedKey(DataType t, ReduceOp op, long seed, int n, long first, long count) implements Key {
        @Override
        public Object allocate() {
            return t.isInteger() ? new long[(int) count] : new double[(int) count];
        }

        @Override
        public void compute(Object result, long from, long to) {
            if (result instanceof long[] e) {
                for (int j = (int) from; j < to; j++) {
                    e[j] = expectedInt(t, op, seed, n, first + j);
                }
                return;
            }
            double[] e = (double[]) result;
            int range = floatRange(t, op, n);
            for (int j = (int) from; j < to; j++) {
                e[j] = expectedFloat(op, seed, n, first + j, range);
            }
        }

        @Override
        public long size() {
            return count;
        }

        @Override
        public long bytes() {
            return count * 8;
        }
    }

    private record InputKey(DataType t, ReduceOp op, long seed, int r, long count, int n) implements Key {
        @Override
        public Object allocate() {
            // native memory (the kit's Mem implementations copy from it to devices too), freed by the GC
            return java.lang.foreign.Arena.ofAuto().allocate(Math.max(1, count * t.byteSize()), 8)
                    .asSlice(0, count * t.byteSize());
        }

        @Override
        public void compute(Object result, long from, long to) {
            fill((MemorySegment) result, t, op, seed, r, from, to, n);
        }

        @Override
        public long size() {
            return count;
        }

        @Override
        public long bytes() {
            return count * t.byteSize();
        }
    }

    /**
     * The last results of this JVM ({@link #expected}, {@link #input}), up to {@value #RECENT_MAX_BYTES}
     * bytes. Every rank of a world of threads checks the same range (an all-reduce's whole output,
     * a reduce-scatter's block checked out of place and in place) against the same inputs, and
     * each reference element costs a random value per rank: each result is computed once, by the
     * ranks that ask for it while it is being computed (chunk by chunk), and the others find it
     * ready. The ranks of a world are at most a collective apart, so the last few results are
     * enough.
     */
    private static final Recent RECENT = new Recent();
    private static final long RECENT_MAX_BYTES = 256L << 20;
    /** Elements per chunk of a result being computed. */
    private static final long CHUNK = 1 << 15;

    /** One result: its chunks go to whichever thread asks next; every thread returns it once all are written. */
    private static final class Result {
        final Key key;
        final Object value;
        final long chunks;
        final java.util.concurrent.atomic.AtomicLong next = new java.util.concurrent.atomic.AtomicLong();
        long written;
        Throwable failed;

        Result(Key key) {
            this.key = key;
            this.value = key.allocate();
            this.chunks = (key.size() + CHUNK - 1) / CHUNK;
        }

        Object get() {
            for (long c; (c = next.getAndIncrement()) < chunks; ) {
                Throwable t = null;
                try {
                    key.compute(value, c * CHUNK, Math.min(key.size(), (c + 1) * CHUNK));
                } catch (Throwable e) {
                    t = e;
                }
                synchronized (this) {
                    written++;
                    if (t != null && failed == null) {
                        failed = t;
                    }
                    notifyAll();
                }
            }
            synchronized (this) {
                boolean interrupted = false;
                while (written < chunks) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
                if (failed != null) {
                    throw new IllegalStateException("computing the reference failed", failed);
                }
            }
            return value instanceof MemorySegment m ? m.asReadOnly() : value;
        }
    }

    private static final class Recent {
        private final java.util.LinkedHashMap<Key, Result> map = new java.util.LinkedHashMap<>(16, 0.75f, true);
        private long bytes;

        Object get(Key key) {
            Result result;
            synchronized (this) {
                result = map.get(key);
                if (result == null) {
                    result = new Result(key);
                    map.put(key, result);
                    bytes += key.bytes();
                    var it = map.keySet().iterator();
                    while (bytes > RECENT_MAX_BYTES && map.size() > 1) {
                        Key eldest = it.next();
                        it.remove();
                        bytes -= eldest.bytes();
                    }
                }
            }
            return result.get();
        }
    }
}
