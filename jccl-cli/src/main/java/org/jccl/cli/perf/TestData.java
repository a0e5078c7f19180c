package org.jccl.cli.perf;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * The seeded, rank-specific input data of a correctness check, and the exact results.
 *
 * <p>Every input is an integer that the data type holds exactly, chosen so that every partial
 * result of the reduction is exact too, whatever the order or the algorithm: the result of every
 * operator except AVG is then known exactly and a correct backend matches it bit for bit (0 ULP).
 * How:
 * <ul>
 *   <li>SUM, PREMUL_SUM (scalar a power of two), AVG: {@code k = min(n, L)} ranks contribute to an
 *       element (a seeded window of ranks; the others contribute 0), each with a value in
 *       {@code [-m, m]} ({@code [0, m]} unsigned), {@code m = L / (k x scalar)}, where {@code L} is
 *       the largest integer below which the type holds every integer ({@link #exactLimit}).</li>
 *   <li>PROD: at most {@code K} ranks contribute a factor of magnitude 2, the others 1 (signs
 *       random for signed and floating types), so the product is a power of two within range.</li>
 *   <li>MIN, MAX and plain data movement: any value in {@code [-L, L]}.</li>
 * </ul>
 * AVG is compared with a tolerance ({@link #tolerance}): backends divide differently (NCCL
 * pre-multiplies floats by 1/n, integers divide with truncation).
 */
public final class TestData {
    private final DataType type;
    private final ReduceOp op;
    private final int ranks;
    private final long seed;
    private final boolean signed;
    /** Ranks that contribute a non-neutral value to each element (SUM, AVG, PREMUL_SUM, PROD). */
    private final int contributors;
    /** Largest magnitude of a contributing value (SUM family) or of any value (MIN, MAX, copy). */
    private final long magnitude;

    /**
     * Data for one measurement.
     *
     * @param type  element type
     * @param op    reduction operator, or null for the collectives that only move data
     * @param ranks number of ranks
     * @param seed  seed; different seeds give different data
     */
    public TestData(DataType type, ReduceOp op, int ranks, long seed) {
        if (ranks < 1) {
            throw new IllegalArgumentException("ranks is " + ranks + ": need at least 1");
        }
        this.type = type;
        this.op = op;
        this.ranks = ranks;
        this.seed = seed;
        this.signed = type.kind() != DataType.Kind.UNSIGNED;
        long limit = exactLimit(type);
        if (op == null) {
            contributors = ranks;
            magnitude = limit;
        } else {
            switch (op.kind()) {
                case SUM, AVG -> {
                    contributors = (int) Math.min(ranks, limit);
                    magnitude = limit / contributors;
                }
                case PREMUL_SUM -> {
                    long scale = premulScale(op, type);
                    contributors = (int) Math.min(ranks, limit / scale);
                    magnitude = limit / ((long) contributors * scale);
                }
                case PROD -> {
                    contributors = Math.min(ranks, maxPowerOfTwo(type));
                    magnitude = 2;
                }
                case MIN, MAX -> {
                    contributors = ranks;
                    magnitude = limit;
                }
                default -> throw new IllegalArgumentException("op " + op + " is not checked by jccl perf: use "
                        + "sum, prod, min, max, avg or premulsum");
            }
        }
    }

    /**
     * The largest integer {@code L} such that {@code type} holds every integer of {@code [-L, L]}
     * ({@code [0, L]} unsigned); capped at 2^40 so doubles compute every result exactly.
     */
    public static long exactLimit(DataType type) {
        return switch (type) {
            case INT8 -> 127;
            case UINT8 -> 255;
            case INT32 -> (1L << 31) - 1;
            case UINT32 -> (1L << 32) - 1;
            case INT64, UINT64, FLOAT64 -> 1L << 40;
            case FLOAT16 -> 2048;
            case BFLOAT16 -> 256;
            case FLOAT32 -> 1L << 24;
            case FLOAT8_E4M3 -> 16;
            case FLOAT8_E5M2 -> 8;
        };
    }

    /** The largest {@code k} with {@code +-2^k} held by the type (capped at 40). */
    public static int maxPowerOfTwo(DataType type) {
        return switch (type) {
            case INT8 -> 6;
            case UINT8 -> 7;
            case INT32 -> 30;
            case UINT32 -> 31;
            case FLOAT16, FLOAT8_E5M2 -> 15;
            case FLOAT8_E4M3 -> 8;
            case INT64, UINT64, FLOAT32, FLOAT64, BFLOAT16 -> 40;
        };
    }

    private static long premulScale(ReduceOp op, DataType type) {
        double s = op.scalar();
        long l = (long) s;
        if (l != s || l < 1 || Long.bitCount(l) != 1 || l > exactLimit(type)) {
            throw new IllegalArgumentException("premulsum scalar " + s + " cannot be checked exactly: "
                    + "jccl perf checks premulsum with a power-of-two scalar such as 2");
        }
        return l;
    }

    /** The element type. */
    public DataType type() {
        return type;
    }

    /** The value of element {@code index} of the send buffer of {@code rank}. */
    public double input(int rank, long index) {
        long h = mix(seed ^ mix(index * 0x9E3779B97F4A7C15L + rank));
        if (op == null) {
            return uniform(h, magnitude);
        }
        return switch (op.kind()) {
            case SUM, AVG, PREMUL_SUM -> contributes(rank, index) ? uniform(h, magnitude) : 0;
            case PROD -> {
                double mag = contributes(rank, index) && (h & 1) != 0 ? 2 : 1;
                yield signed && (h & 2) != 0 ? -mag : mag;
            }
            default -> uniform(h, magnitude);
        };
    }

    /**
     * The exact reduction over ranks of element {@code index} (for AVG: the exact quotient, which
     * {@link #tolerance} qualifies).
     */
    public double reduced(long index) {
        switch (op.kind()) {
            case SUM, AVG, PREMUL_SUM -> {
                double s = 0;
                for (int r = 0; r < ranks; r++) {
                    s += input(r, index);
                }
                if (op.kind() == ReduceOp.Kind.AVG) {
                    return s / ranks;
                }
                return op.kind() == ReduceOp.Kind.PREMUL_SUM ? s * op.scalar() : s;
            }
            case PROD -> {
                double p = 1;
                for (int r = 0; r < ranks; r++) {
                    p *= input(r, index);
                }
                return p;
            }
            case MIN -> {
                double m = Double.POSITIVE_INFINITY;
                for (int r = 0; r < ranks; r++) {
                    m = Math.min(m, input(r, index));
                }
                return m;
            }
            case MAX -> {
                double m = Double.NEGATIVE_INFINITY;
                for (int r = 0; r < ranks; r++) {
                    m = Math.max(m, input(r, index));
                }
                return m;
            }
            default -> throw new IllegalStateException("unchecked op " + op);
        }
    }

    /**
     * How far a correct result of {@link #reduced} may be from it: 0 except for AVG, where an
     * integer type may truncate or round (below 1) and a floating type may round each of the
     * n+2 steps of a pre-multiplied sum (eps x (n+2) x the largest input magnitude, plus the
     * smallest subnormal step).
     */
    public double tolerance(long index) {
        if (op == null || op.kind() != ReduceOp.Kind.AVG) {
            return 0;
        }
        if (type.isInteger()) {
            return 1 - 1e-9;
        }
        double maxAbs = 0;
        for (int r = 0; r < ranks; r++) {
            maxAbs = Math.max(maxAbs, Math.abs(input(r, index)));
        }
        return epsilon(type) * (ranks + 2) * maxAbs + minStep(type);
    }

    /** Whether {@code got} is a correct result for an expected value with a tolerance. */
    public static boolean matches(double got, double expected, double tolerance) {
        if (tolerance == 0) {
            return got == expected;
        }
        return Math.abs(got - expected) <= tolerance;
    }

    /** Writes {@code count} inputs of {@code rank}, elements {@code from..}, at element {@code at} of {@code seg}. */
    public void fill(MemorySegment seg, long at, int rank, long from, long count) {
        for (long i = 0; i < count; i++) {
            Values.put(seg, type, at + i, input(rank, from + i));
        }
    }

    private boolean contributes(int rank, long index) {
        if (contributors >= ranks) {
            return true;
        }
        // A seeded window of `contributors` consecutive ranks (mod n) per element.
        long start = Math.floorMod(mix(seed + index), ranks);
        return Math.floorMod(rank - start, ranks) < contributors;
    }

    private double uniform(long h, long mag) {
        if (signed) {
            return Math.floorMod(h >>> 2, 2 * mag + 1) - mag;
        }
        return Math.floorMod(h >>> 2, mag + 1);
    }

    private static double epsilon(DataType type) {
        return switch (type) {
            case FLOAT16 -> Math.scalb(1.0, -10);
            case BFLOAT16 -> Math.scalb(1.0, -7);
            case FLOAT32 -> Math.scalb(1.0, -23);
            case FLOAT64 -> Math.scalb(1.0, -52);
            case FLOAT8_E4M3 -> Math.scalb(1.0, -3);
            case FLOAT8_E5M2 -> Math.scalb(1.0, -2);
            default -> 0;
        };
    }

    private static double minStep(DataType type) {
        return switch (type) {
            case FLOAT16 -> Math.scalb(1.0, -24);
            case BFLOAT16, FLOAT32 -> Float.MIN_VALUE;
            case FLOAT64 -> Double.MIN_VALUE;
            case FLOAT8_E4M3 -> Math.scalb(1.0, -9);
            case FLOAT8_E5M2 -> Math.scalb(1.0, -16);
            default -> 0;
        };
    }

    /** SplitMix64's finaliser: a good 64-bit mix. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
