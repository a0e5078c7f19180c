package org.jccl.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.util.List;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;

/**
 * The check data: every input and every exact result is held exactly by its type, every partial
 * result of any order too, and the expected values match an independent BigInteger computation.
 */
class TestDataTest {
    private static final List<ReduceOp> OPS = List.of(ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX,
            ReduceOp.AVG, ReduceOp.preMulSum(2));
    private static final int[] RANKS = {1, 2, 3, 4, 7, 16, 33};
    private static final int INDICES = 400;

    @Test
    void inputsAndResultsAreExactForEveryTypeOpAndRankCount() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocate(8);
            for (DataType t : DataType.values()) {
                for (ReduceOp op : OPS) {
                    for (int n : RANKS) {
                        TestData d = new TestData(t, op, n, 42);
                        for (long i = 0; i < INDICES; i++) {
                            String where = t + " " + op + " n=" + n + " i=" + i;
                            BigInteger sum = BigInteger.ZERO;
                            BigInteger absSum = BigInteger.ZERO;
                            BigInteger prod = BigInteger.ONE;
                            BigInteger min = null;
                            BigInteger max = null;
                            for (int r = 0; r < n; r++) {
                                double x = d.input(r, i);
                                Values.put(one, t, 0, x);
                                assertEquals(x, Values.get(one, t, 0), where + " input of rank " + r);
                                assertEquals(Math.rint(x), x, where);
                                BigInteger b = BigInteger.valueOf((long) x);
                                sum = sum.add(b);
                                absSum = absSum.add(b.abs());
                                prod = prod.multiply(b);
                                min = min == null || b.compareTo(min) < 0 ? b : min;
                                max = max == null || b.compareTo(max) > 0 ? b : max;
                            }
                            BigInteger scale = BigInteger.valueOf(op.kind() == ReduceOp.Kind.PREMUL_SUM ? 2 : 1);
                            BigInteger want = switch (op.kind()) {
                                case SUM, AVG -> sum;
                                case PREMUL_SUM -> sum.multiply(scale);
                                case PROD -> prod;
                                case MIN -> min;
                                case MAX -> max;
                                default -> throw new AssertionError(op);
                            };
                            if (op.kind() == ReduceOp.Kind.AVG) {
                                double q = new BigDecimal(want).divide(BigDecimal.valueOf(n), MathContext.DECIMAL128).doubleValue();
                                assertEquals(q, d.reduced(i), Math.ulp(q), where);
                            } else {
                                assertEquals(want.doubleValue(), d.reduced(i), 0, where);
                                Values.put(one, t, 0, d.reduced(i));
                                assertEquals(d.reduced(i), Values.get(one, t, 0), where + " result");
                                assertEquals(0, d.tolerance(i), where);
                            }
                            // Any subset, in any order, stays inside the exact range.
                            if (op.kind() == ReduceOp.Kind.SUM || op.kind() == ReduceOp.Kind.AVG
                                    || op.kind() == ReduceOp.Kind.PREMUL_SUM) {
                                assertTrue(absSum.multiply(scale).compareTo(BigInteger.valueOf(TestData.exactLimit(t))) <= 0,
                                        where + " sum of |x| " + absSum);
                            }
                            if (op.kind() == ReduceOp.Kind.PROD) {
                                BigInteger p = prod.abs();
                                assertEquals(1, p.bitCount(), where + " product is a power of two");
                                assertTrue(p.bitLength() - 1 <= TestData.maxPowerOfTwo(t), where + " product " + p);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void dataDependsOnRankIndexAndSeed() {
        for (DataType t : DataType.values()) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX, null}) {
                TestData a = new TestData(t, op, 4, 1);
                TestData b = new TestData(t, op, 4, 2);
                boolean byRank = false;
                boolean bySeed = false;
                boolean byIndex = false;
                for (long i = 0; i < 200; i++) {
                    byRank |= a.input(0, i) != a.input(1, i);
                    bySeed |= a.input(0, i) != b.input(0, i);
                    byIndex |= a.input(0, i) != a.input(0, i + 1);
                }
                assertTrue(byRank && bySeed && byIndex, t + " " + op);
            }
        }
    }

    @Test
    void sparseContributionsWhenRanksExceedTheExactRange() {
        // FP8 E5M2 holds every integer up to 8 only: with 33 ranks at most 8 may contribute 1 each.
        TestData d = new TestData(DataType.FLOAT8_E5M2, ReduceOp.SUM, 33, 7);
        boolean someNonZero = false;
        for (long i = 0; i < 100; i++) {
            int nonZero = 0;
            for (int r = 0; r < 33; r++) {
                nonZero += d.input(r, i) != 0 ? 1 : 0;
            }
            assertTrue(nonZero <= 8, "element " + i);
            someNonZero |= nonZero > 0;
        }
        assertTrue(someNonZero);
    }

    @Test
    void avgToleranceAdmitsCorrectRoundingAndNcclsPremultipliedSum() {
        for (DataType t : new DataType[] {DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64,
            DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2}) {
            for (int n : RANKS) {
                TestData d = new TestData(t, ReduceOp.AVG, n, 9);
                double inv = round(t, 1.0 / n);
                for (long i = 0; i < INDICES; i++) {
                    double exact = d.reduced(i);
                    double tol = d.tolerance(i);
                    assertTrue(TestData.matches(round(t, exact), exact, tol), t + " n=" + n + " rounded");
                    double acc = 0;
                    for (int r = 0; r < n; r++) {
                        acc = round(t, acc + round(t, d.input(r, i) * inv));
                    }
                    assertTrue(TestData.matches(acc, exact, tol), t + " n=" + n + " i=" + i + " premul " + acc
                            + " vs " + exact + " tol " + tol);
                    // For the 16- to 64-bit floats a result off by the largest input is never accepted.
                    // (FP8's 2-3 mantissa bits leave NCCL's pre-multiplied average that far off.)
                    double big = 0;
                    for (int r = 0; r < n; r++) {
                        big = Math.max(big, Math.abs(d.input(r, i)));
                    }
                    if (big >= 1 && t.byteSize() >= 2) {
                        assertTrue(!TestData.matches(exact + big, exact, tol), t + " n=" + n + " too loose");
                    }
                }
            }
        }
        // Integers: truncation or rounding of the quotient, nothing further.
        TestData d = new TestData(DataType.INT32, ReduceOp.AVG, 3, 1);
        assertTrue(TestData.matches(3, 10 / 3.0, d.tolerance(0)));
        assertTrue(TestData.matches(4, 10 / 3.0, d.tolerance(0)));
        assertTrue(!TestData.matches(5, 10 / 3.0, d.tolerance(0)));
    }

    @Test
    void premulSumNeedsAPowerOfTwoScalar() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new TestData(DataType.FLOAT32, ReduceOp.preMulSum(3), 2, 1));
        assertTrue(e.getMessage().contains("power-of-two"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new TestData(DataType.INT32, ReduceOp.BAND, 2, 1));
    }

    @Test
    void fillWritesTheInputs() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(4 * 20);
            TestData d = new TestData(DataType.FLOAT32, ReduceOp.SUM, 3, 5);
            d.fill(seg, 2, 1, 100, 10);
            for (int k = 0; k < 10; k++) {
                assertEquals(d.input(1, 100 + k), Values.get(seg, DataType.FLOAT32, 2 + k));
            }
            assertEquals(0.0, Values.get(seg, DataType.FLOAT32, 0));
            assertEquals(0.0, Values.get(seg, DataType.FLOAT32, 12));
        }
    }

    /** Round to nearest (even) in the type, written independently of Values. */
    private static double round(DataType t, double v) {
        return switch (t) {
            case FLOAT64 -> v;
            case FLOAT32 -> (float) v;
            case FLOAT16 -> Float.float16ToFloat(Float.floatToFloat16((float) v));
            case BFLOAT16 -> {
                int bits = Float.floatToRawIntBits((float) v);
                int lsb = (bits >>> 16) & 1;
                yield Float.intBitsToFloat(((bits + 0x7FFF + lsb) >>> 16) << 16);
            }
            case FLOAT8_E4M3, FLOAT8_E5M2 -> {
                double best = 0;
                for (int b = 0; b < 256; b++) {
                    double c = t == DataType.FLOAT8_E4M3 ? Values.decodeE4M3((byte) b) : Values.decodeE5M2((byte) b);
                    if (!Double.isNaN(c) && !Double.isInfinite(c) && Math.abs(c - v) < Math.abs(best - v)) {
                        best = c;
                    }
                }
                yield best;
            }
            default -> throw new AssertionError(t);
        };
    }
}
