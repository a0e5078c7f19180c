package org.jccl.host.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every DataType x ReduceOp through both implementations against {@link Ref}: n = 1, 2, 3, 8
 * inputs, counts 0, 1, 1009 and 2^20 + 3, unaligned offsets, native and heap segments, in place,
 * bytes around the destination untouched; vector and scalar results bitwise identical.
 */
class ReductionsTest {
    static final Kernels VECTOR = Reductions.vectorOrNull();
    static final Kernels SCALAR = new ScalarKernels();
    static final ReduceOp[] OPS = {ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG,
        ReduceOp.preMulSum(-3), ReduceOp.preMulSum(1.0 / 3), ReduceOp.preMulSum(7.9), ReduceOp.BAND,
        ReduceOp.BOR, ReduceOp.BXOR};

    static Stream<Arguments> typeOps() {
        List<Arguments> all = new ArrayList<>();
        for (DataType t : DataType.values()) {
            for (ReduceOp op : OPS) {
                if (op.supports(t)) {
                    all.add(Arguments.of(t, op));
                }
            }
        }
        return all.stream();
    }

    static Kernels[] impls() {
        assertNotNull(VECTOR, "tests run with --add-modules jdk.incubator.vector, so vector kernels must load");
        return new Kernels[] {VECTOR, SCALAR};
    }

    /** One reduce call's data: inputs written into segments at random offsets. */
    static final class Case {
        final DataType t;
        final long[][] in;        // [n][count] raw bits
        final MemorySegment[] srcs;
        final long[] offs;
        final MemorySegment dst;
        final long dOff;
        final byte[] dstBefore;
        final int inPlace;        // index of the source dst aliases, or -1

        Case(DataType t, int n, long count, long seed, Arena arena, boolean allowInPlace, boolean nativeOnly) {
            this(t, n, count, seed, arena, allowInPlace ? -2 : -1, nativeOnly);
        }

        /**
         * {@code placement}: 0 or more, in place on that input; -1 out of place; -2 either, at
         * random (a third of the cases in place).
         */
        Case(DataType t, int n, long count, long seed, Arena arena, int placement, boolean nativeOnly) {
            this.t = t;
            SplittableRandom rnd = new SplittableRandom(seed);
            int size = t.byteSize();
            in = new long[n][(int) count];
            // Extra array entries past n must be ignored by the kernels.
            srcs = new MemorySegment[n + rnd.nextInt(2)];
            offs = new long[srcs.length];
            for (int k = 0; k < n; k++) {
                offs[k] = rnd.nextInt(13);
                srcs[k] = Cases.segment(nativeOnly ? 0 : rnd.nextInt(3), offs[k] + count * size + rnd.nextInt(8), arena);
                Cases.fillRandom(srcs[k], rnd);
                for (int i = 0; i < count; i++) {
                    in[k][i] = Cases.element(t, rnd);
                    Cases.put(t, srcs[k], offs[k] + (long) i * size, in[k][i]);
                }
            }
            for (int k = n; k < srcs.length; k++) {
                srcs[k] = MemorySegment.ofArray(new byte[1]);
                offs[k] = 99;
            }
            inPlace = placement == -2 ? (rnd.nextInt(3) == 0 ? rnd.nextInt(n) : -1) : placement;
            if (inPlace >= 0) {
                dst = srcs[inPlace];
                dOff = offs[inPlace];
            } else {
                dOff = rnd.nextInt(13);
                dst = Cases.segment(nativeOnly ? 0 : rnd.nextInt(3), dOff + count * size + rnd.nextInt(8), arena);
                Cases.fillRandom(dst, rnd);
            }
            dstBefore = dst.toArray(ValueLayout.JAVA_BYTE);
        }

        /** Checks every element against {@code expected(i)} and that no byte outside the range changed. */
        void check(long count, java.util.function.LongUnaryOperator expected, String what) {
            int size = t.byteSize();
            for (int i = 0; i < count; i++) {
                long want = expected.applyAsLong(i);
                long got = Cases.get(t, dst, dOff + (long) i * size);
                if (!Cases.same(t, want, got)) {
                    StringBuilder inputs = new StringBuilder();
                    for (long[] column : in) {
                        inputs.append(" 0x").append(Long.toHexString(column[i]));
                    }
                    fail(what + " element " + i + ": expected 0x" + Long.toHexString(Cases.mask(t, want)) + " got 0x"
                            + Long.toHexString(got) + "; inputs" + inputs);
                }
            }
            byte[] after = dst.toArray(ValueLayout.JAVA_BYTE);
            for (int b = 0; b < after.length; b++) {
                if ((b < dOff || b >= dOff + count * size) && after[b] != dstBefore[b]) {
                    fail(what + ": byte " + b + " outside the destination range changed");
                }
            }
        }

        byte[] result(long count) {
            return dst.asSlice(dOff, count * t.byteSize()).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("typeOps")
    void reduceMatchesTheReference(DataType t, ReduceOp op) {
        long seed = Objects.hash(t, op.toString());
        try (Arena arena = Arena.ofConfined()) {
            for (int n : new int[] {1, 2, 3, 8}) {
                for (long count : new long[] {0, 1, 1009}) {
                    byte[] first = null;
                    for (Kernels k : impls()) {
                        Case c = new Case(t, n, count, seed + n * 31 + count, arena, true, false);
                        Reductions.reduce(k, t, op, c.dst, c.dOff, c.srcs, c.offs, n, count, n);
                        String what = k.name() + " " + t + " " + op + " n=" + n + " count=" + count
                                + (c.inPlace >= 0 ? " in place on input " + c.inPlace : "");
                        c.check(count, i -> Ref.reduce(t, op, column(c.in, (int) i), n, n), what);
                        byte[] r = c.result(count);
                        if (first == null) {
                            first = r;
                        } else {
                            assertArrayEquals(first, r, "vector and scalar differ: " + what);
                        }
                    }
                }
            }
        }
    }

    /**
     * Two float inputs end in a tail without a loop (one case per length): every count up to
     * four vectors of the widest species, and past 1000, each out of place and in place on either
     * input, bit for bit the reference's result and the scalar kernels'.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("floatOps")
    void twoFloatInputsOfEveryTailLengthMatchTheReference(ReduceOp op) {
        DataType t = DataType.FLOAT32;
        long seed = Objects.hash("tails", op.toString());
        try (Arena arena = Arena.ofConfined()) {
            for (long count = 0; count <= 64 + 1040; count = count == 64 ? 1000 : count + 1) {
                for (int placement = 0; placement < 3; placement++) {
                    byte[] first = null;
                    for (Kernels k : impls()) {
                        Case c = new Case(t, 2, count, seed + count * 7 + placement, arena, placement == 2 ? -1 : placement, false);
                        Reductions.reduce(k, t, op, c.dst, c.dOff, c.srcs, c.offs, 2, count, 2);
                        String what = k.name() + " " + op + " count=" + count
                                + (c.inPlace >= 0 ? " in place on input " + c.inPlace : "");
                        c.check(count, i -> Ref.reduce(t, op, column(c.in, (int) i), 2, 2), what);
                        byte[] r = c.result(count);
                        if (first == null) {
                            first = r;
                        } else {
                            assertArrayEquals(first, r, "vector and scalar differ: " + what);
                        }
                    }
                }
            }
        }
    }

    static Stream<ReduceOp> floatOps() {
        return java.util.Arrays.stream(OPS).filter(op -> op.supports(DataType.FLOAT32));
    }

    static long[] column(long[][] in, int i) {
        long[] col = new long[in.length];
        for (int k = 0; k < in.length; k++) {
            col[k] = in[k][i];
        }
        return col;
    }

    static Stream<Arguments> largeCases() {
        return Stream.of(
                Arguments.of(DataType.FLOAT32, ReduceOp.SUM, 2),
                Arguments.of(DataType.FLOAT32, ReduceOp.AVG, 8),
                Arguments.of(DataType.FLOAT64, ReduceOp.MAX, 3),
                Arguments.of(DataType.BFLOAT16, ReduceOp.SUM, 5),
                Arguments.of(DataType.FLOAT16, ReduceOp.preMulSum(0.25), 3),
                Arguments.of(DataType.FLOAT8_E4M3, ReduceOp.SUM, 3),
                Arguments.of(DataType.UINT8, ReduceOp.MIN, 3),
                Arguments.of(DataType.INT32, ReduceOp.PROD, 2),
                Arguments.of(DataType.UINT64, ReduceOp.BXOR, 2));
    }

    @ParameterizedTest(name = "{0} {1} n={2}")
    @MethodSource("largeCases")
    void largeCountsMatchTheReference(DataType t, ReduceOp op, int n) {
        long count = (1 << 20) + 3;
        try (Arena arena = Arena.ofConfined()) {
            // Not in place, so one data set serves both implementations.
            Case c = new Case(t, n, count, 7 + t.ordinal(), arena, false, true);
            long[] expected = new long[(int) count];
            long[] col = new long[n];
            for (int i = 0; i < count; i++) {
                for (int k = 0; k < n; k++) {
                    col[k] = c.in[k][i];
                }
                expected[i] = Ref.reduce(t, op, col, n, n);
            }
            byte[] first = null;
            for (Kernels k : impls()) {
                MemorySegment.copy(c.dstBefore, 0, c.dst, ValueLayout.JAVA_BYTE, 0, c.dstBefore.length);
                Reductions.reduce(k, t, op, c.dst, c.dOff, c.srcs, c.offs, n, count, n);
                c.check(count, i -> expected[(int) i], k.name() + " " + t + " " + op);
                byte[] r = c.result(count);
                if (first == null) {
                    first = r;
                } else {
                    assertArrayEquals(first, r, "vector and scalar differ: " + t + " " + op);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("typeOps")
    void accumulateIsTheTwoInputReduce(DataType t, ReduceOp op) {
        // AVG and PREMUL_SUM act as SUM in accumulate.
        ReduceOp asRef = op.kind() == ReduceOp.Kind.AVG || op.kind() == ReduceOp.Kind.PREMUL_SUM ? ReduceOp.SUM : op;
        try (Arena arena = Arena.ofConfined()) {
            for (long count : new long[] {0, 1, 1009}) {
                for (boolean self : new boolean[] {false, true}) {
                    byte[] first = null;
                    for (Kernels k : impls()) {
                        // in[0] is dst's old content, in[1] the source (or dst itself).
                        Case c = new Case(t, 2, count, count * 3 + t.ordinal() + op.hashCode(), arena, false, false);
                        MemorySegment dst = c.srcs[0];
                        long dOff = c.offs[0];
                        MemorySegment src = self ? dst : c.srcs[1];
                        long sOff = self ? dOff : c.offs[1];
                        Reductions.accumulate(k, t, op, dst, dOff, src, sOff, count);
                        int size = t.byteSize();
                        for (int i = 0; i < count; i++) {
                            long[] col = {c.in[0][i], self ? c.in[0][i] : c.in[1][i]};
                            long want = Ref.reduce(t, asRef, col, 2, 1);
                            long got = Cases.get(t, dst, dOff + (long) i * size);
                            assertTrue(Cases.same(t, want, got), () -> k.name() + " accumulate " + t + " " + op
                                    + " self=" + self + ": expected 0x" + Long.toHexString(want) + " got 0x"
                                    + Long.toHexString(got) + " from 0x" + Long.toHexString(col[0]) + ", 0x"
                                    + Long.toHexString(col[1]));
                        }
                        byte[] r = dst.asSlice(dOff, count * size).toArray(ValueLayout.JAVA_BYTE);
                        if (first == null) {
                            first = r;
                        } else {
                            assertArrayEquals(first, r, "vector and scalar differ: accumulate " + t + " " + op);
                        }
                    }
                }
            }
        }
    }

    static Stream<DataType> types() {
        return Stream.of(DataType.values());
    }

    @ParameterizedTest
    @MethodSource("types")
    void scaleMultipliesOnceInTheAccumulationPrecision(DataType t) {
        try (Arena arena = Arena.ofConfined()) {
            for (double s : new double[] {0.5, -3, 1.0 / 3, 1e10, -7.9}) {
                for (long count : new long[] {0, 1, 1009}) {
                    byte[] first = null;
                    for (Kernels k : impls()) {
                        Case c = new Case(t, 1, count, count + t.ordinal() + Double.hashCode(s), arena, false, false);
                        Reductions.scale(k, t, s, c.srcs[0], c.offs[0], count);
                        int size = t.byteSize();
                        for (int i = 0; i < count; i++) {
                            long x = c.in[0][i];
                            long want = expectedScale(t, s, x);
                            long got = Cases.get(t, c.srcs[0], c.offs[0] + (long) i * size);
                            assertTrue(Cases.same(t, want, got), () -> k.name() + " scale " + t + " by " + s
                                    + " of 0x" + Long.toHexString(x) + ": expected 0x" + Long.toHexString(want)
                                    + " got 0x" + Long.toHexString(got));
                        }
                        byte[] r = c.srcs[0].asSlice(c.offs[0], count * size).toArray(ValueLayout.JAVA_BYTE);
                        if (first == null) {
                            first = r;
                        } else {
                            assertArrayEquals(first, r, "vector and scalar differ: scale " + t);
                        }
                    }
                }
            }
        }
    }

    /** s * x as PREMUL_SUM does it for one input: the same as a one-input reduce. */
    static long expectedScale(DataType t, double s, long x) {
        if (t.isInteger()) {
            return Cases.mask(t, (long) s * Ref.intValue(t, x));
        }
        if (t == DataType.FLOAT64) {
            return Ref.encode(t, Ref.mul64(s, Ref.value(t, x)));
        }
        return Ref.encode(t, Ref.f((double) (float) s * Ref.value(t, x)));
    }

    @ParameterizedTest
    @MethodSource("types")
    void divideTruncatesIntegersAndRoundsFloatsOnce(DataType t) {
        try (Arena arena = Arena.ofConfined()) {
            for (int d : new int[] {1, 2, 3, 7, 1000}) {
                byte[] first = null;
                for (Kernels k : impls()) {
                    Case c = new Case(t, 1, 1009, d * 17L + t.ordinal(), arena, false, false);
                    Reductions.divide(k, t, c.srcs[0], c.offs[0], 1009, d);
                    int size = t.byteSize();
                    for (int i = 0; i < 1009; i++) {
                        long x = c.in[0][i];
                        long want;
                        if (t.isInteger()) {
                            want = Ref.wrap(t, Ref.big(t, x).divide(java.math.BigInteger.valueOf(d)));
                        } else if (t == DataType.FLOAT64) {
                            want = Ref.encode(t, Ref.value(t, x) / d);
                        } else {
                            want = Ref.encode(t, Ref.f(Ref.value(t, x) / d));
                        }
                        long got = Cases.get(t, c.srcs[0], c.offs[0] + (long) i * size);
                        assertTrue(Cases.same(t, want, got), () -> k.name() + " divide " + t + " by " + d + " of 0x"
                                + Long.toHexString(x) + ": expected 0x" + Long.toHexString(want) + " got 0x"
                                + Long.toHexString(got));
                    }
                    byte[] r = c.srcs[0].asSlice(c.offs[0], 1009L * size).toArray(ValueLayout.JAVA_BYTE);
                    if (first == null) {
                        first = r;
                    } else {
                        assertArrayEquals(first, r, "vector and scalar differ: divide " + t);
                    }
                }
            }
        }
    }

    static Stream<DataType> lowPrecisionTypes() {
        return Stream.of(DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2);
    }

    @ParameterizedTest
    @MethodSource("lowPrecisionTypes")
    void everyCodeAndEveryTieThroughTheKernelConversions(DataType t) {
        // Exhaustive over the format, through the kernels' own widening and narrowing (the
        // vector path converts with lane formulas of its own): x * 1 gives x back for every
        // code (canonical NaN for NaN codes), and the AVG of two neighbours is their midpoint,
        // which must round to the even one of the two.
        Ref.Format f = Ref.format(t);
        int codes = 1 << f.bits();
        int size = t.byteSize();
        int[] fin = f.codes();
        try (Arena arena = Arena.ofConfined()) {
            for (Kernels k : impls()) {
                MemorySegment all = arena.allocate((long) codes * size);
                for (int c = 0; c < codes; c++) {
                    Cases.put(t, all, (long) c * size, c);
                }
                Reductions.scale(k, t, 1.0, all, 0, codes);
                for (int c = 0; c < codes; c++) {
                    long want = f.isNaNCode(c) ? Ref.canonicalNaN(t) : c;
                    assertEquals(want, Cases.get(t, all, (long) c * size), k.name() + " " + t + " x*1 of code " + c);
                }
                // Pairs whose float sum stays finite (BFLOAT16's top binade overflows float when added).
                int pairs = 0;
                while (pairs + 1 < fin.length && f.finite()[pairs] + f.finite()[pairs + 1] <= Float.MAX_VALUE) {
                    pairs++;
                }
                assertTrue(pairs > fin.length * 0.9, "most neighbour pairs are checked");
                MemorySegment lo = arena.allocate(2L * pairs * size), hi = arena.allocate(2L * pairs * size);
                MemorySegment out = arena.allocate(2L * pairs * size);
                for (int i = 0; i < pairs; i++) {
                    for (int sign = 0; sign < 2; sign++) {
                        long at = (2L * i + sign) * size;
                        int s = sign == 0 ? 0 : f.signBit();
                        Cases.put(t, lo, at, s | fin[i]);
                        Cases.put(t, hi, at, s | fin[i + 1]);
                    }
                }
                Reductions.reduce(k, t, ReduceOp.AVG, out, 0, new MemorySegment[] {lo, hi}, new long[2], 2,
                        2L * pairs, 2);
                for (int i = 0; i < pairs; i++) {
                    int even = (fin[i] & 1) == 0 ? fin[i] : fin[i + 1];
                    for (int sign = 0; sign < 2; sign++) {
                        int s = sign == 0 ? 0 : f.signBit();
                        assertEquals(s | even, Cases.get(t, out, (2L * i + sign) * size),
                                k.name() + " " + t + " midpoint of codes " + fin[i] + " and " + fin[i + 1]);
                    }
                }
            }
        }
    }

    @Test
    void handPickedValues() {
        try (Arena arena = Arena.ofConfined()) {
            for (Kernels k : impls()) {
                // Float32 sums in float, not double: 1 + 2^-24 + 2^-24 loses both halves in order.
                assertEquals(1f, reduceF32(k, arena, ReduceOp.SUM, 1f, 0x1p-24f, 0x1p-24f));
                assertEquals(1f + 0x1p-23f, reduceF32(k, arena, ReduceOp.SUM, 0x1p-24f, 0x1p-24f, 1f));
                assertEquals(-0f, reduceF32(k, arena, ReduceOp.MIN, 0f, -0f));
                assertEquals(-0f, reduceF32(k, arena, ReduceOp.MIN, -0f, 0f));
                assertEquals(0f, reduceF32(k, arena, ReduceOp.MAX, -0f, 0f));
                assertTrue(Float.isNaN(reduceF32(k, arena, ReduceOp.MAX, 1f, Float.NaN, 2f)));
                assertTrue(Float.isNaN(reduceF32(k, arena, ReduceOp.MIN, Float.NaN, 1f)));
                assertEquals(1f, reduceF32(k, arena, ReduceOp.AVG, 1f, 2f, 0f));
                assertEquals(-9f, reduceF32(k, arena, ReduceOp.preMulSum(-3), 1f, 2f));
                // E4M3: 300 + 300 saturates to 448 instead of overflowing; one rounding at the end.
                MemorySegment a = arena.allocate(1), b = arena.allocate(1), d = arena.allocate(1);
                a.set(ValueLayout.JAVA_BYTE, 0, LowPrecision.floatToE4m3(288f));
                b.set(ValueLayout.JAVA_BYTE, 0, LowPrecision.floatToE4m3(288f));
                Reductions.reduce(k, DataType.FLOAT8_E4M3, ReduceOp.SUM, d, 0, new MemorySegment[] {a, b},
                        new long[2], 2, 1, 2);
                assertEquals(448f, LowPrecision.e4m3ToFloat(d.get(ValueLayout.JAVA_BYTE, 0)));
                Reductions.reduce(k, DataType.FLOAT8_E4M3, ReduceOp.AVG, d, 0, new MemorySegment[] {a, b},
                        new long[2], 2, 1, 2);
                assertEquals(288f, LowPrecision.e4m3ToFloat(d.get(ValueLayout.JAVA_BYTE, 0)), "AVG sums in float first");
                // Unsigned: 200 + 100 wraps to 44; MIN compares unsigned; AVG divides unsigned.
                a.set(ValueLayout.JAVA_BYTE, 0, (byte) 200);
                b.set(ValueLayout.JAVA_BYTE, 0, (byte) 100);
                Reductions.reduce(k, DataType.UINT8, ReduceOp.MIN, d, 0, new MemorySegment[] {a, b}, new long[2], 2, 1, 2);
                assertEquals(100, d.get(ValueLayout.JAVA_BYTE, 0) & 0xFF);
                Reductions.reduce(k, DataType.INT8, ReduceOp.MIN, d, 0, new MemorySegment[] {a, b}, new long[2], 2, 1, 2);
                assertEquals(-56, d.get(ValueLayout.JAVA_BYTE, 0));
                Reductions.reduce(k, DataType.UINT8, ReduceOp.AVG, d, 0, new MemorySegment[] {a, b}, new long[2], 2, 1, 2);
                assertEquals(22, d.get(ValueLayout.JAVA_BYTE, 0) & 0xFF, "(200 + 100) mod 256 / 2");
                Reductions.reduce(k, DataType.INT8, ReduceOp.AVG, d, 0, new MemorySegment[] {a, b}, new long[2], 2, 1, 2);
                assertEquals(22, d.get(ValueLayout.JAVA_BYTE, 0), "(-56 + 100) / 2");
            }
        }
    }

    private static float reduceF32(Kernels k, Arena arena, ReduceOp op, float... values) {
        MemorySegment[] srcs = new MemorySegment[values.length];
        for (int i = 0; i < values.length; i++) {
            srcs[i] = arena.allocate(4);
            srcs[i].set(ValueLayout.JAVA_FLOAT, 0, values[i]);
        }
        MemorySegment d = arena.allocate(4);
        Reductions.reduce(k, DataType.FLOAT32, op, d, 0, srcs, new long[values.length], values.length, 1,
                values.length);
        return d.get(ValueLayout.JAVA_FLOAT, 0);
    }

    @Test
    void publicEntryPointsUseTheVectorKernelsHere() {
        assertTrue(Reductions.implementation().startsWith("vector("), Reductions.implementation());
        float[] a = {1, 2, 3}, b = {10, 20, 30}, out = new float[3];
        Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, MemorySegment.ofArray(out), 0,
                new MemorySegment[] {MemorySegment.ofArray(a), MemorySegment.ofArray(b)}, new long[2], 2, 3, 2);
        assertArrayEquals(new float[] {11, 22, 33}, out);
        Reductions.accumulate(DataType.FLOAT32, ReduceOp.MAX, MemorySegment.ofArray(out), 4,
                MemorySegment.ofArray(new float[] {0, 100, 0}), 4, 2);
        assertArrayEquals(new float[] {11, 100, 33}, out);
        Reductions.scale(DataType.FLOAT32, 0.5, MemorySegment.ofArray(out), 0, 3);
        assertArrayEquals(new float[] {5.5f, 50, 16.5f}, out);
        Reductions.divide(DataType.FLOAT32, MemorySegment.ofArray(out), 8, 1, 3);
        assertArrayEquals(new float[] {5.5f, 50, 5.5f}, out);
    }
}
