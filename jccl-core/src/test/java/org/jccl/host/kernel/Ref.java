package org.jccl.host.kernel;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Arrays;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * The tests' independent reference: decodes and encodes the low-precision formats from their
 * definitions (sign, exponent, mantissa; nearest value found by search in the table of all
 * finite values, ties to the even code), and reduces with exact or provably correctly rounded
 * arithmetic (float results through double with one final cast, which is exact for +, *, / of
 * floats since 53 >= 2*24+2; FLOAT64 sums and products through BigDecimal; integers in long /
 * BigInteger with explicit wrapping). Nothing here calls the code under test.
 */
final class Ref {
    private Ref() {
    }

    /** A binary floating-point format of at most 16 bits. */
    record Format(String name, int expBits, int mantBits, int bias, boolean ieee, double[] finite, int[] codes) {
        int bits() {
            return 1 + expBits + mantBits;
        }

        int signBit() {
            return 1 << (bits() - 1);
        }

        int maxExp() {
            return (1 << expBits) - 1;
        }

        /** The exact value of a code (NaN for NaN codes). */
        double decode(int code) {
            int sign = code & signBit();
            int e = (code >>> mantBits) & maxExp();
            int m = code & ((1 << mantBits) - 1);
            double v;
            if (ieee && e == maxExp()) {
                v = m == 0 ? Double.POSITIVE_INFINITY : Double.NaN;
            } else if (!ieee && e == maxExp() && m == (1 << mantBits) - 1) {
                v = Double.NaN;   // E4M3: only S.1111.111 is NaN
            } else if (e == 0) {
                v = Math.scalb((double) m, 1 - bias - mantBits);
            } else {
                v = Math.scalb((double) ((1 << mantBits) | m), e - bias - mantBits);
            }
            return sign != 0 ? -v : v;
        }

        boolean isNaNCode(int code) {
            return Double.isNaN(decode(code));
        }

        double max() {
            return finite[finite.length - 1];
        }

        /**
         * The code nearest to {@code v} (ties to even code), with the format's overflow rule:
         * IEEE formats round to infinity past max + ulp/2 (a tie there goes to the even
         * "infinity" code), E4M3 saturates every finite or infinite overflow to its max. NaN gives
         * -1 (callers check NaN-ness separately).
         */
        int encode(double v) {
            if (Double.isNaN(v)) {
                return -1;
            }
            int sign = (Double.doubleToRawLongBits(v) < 0) ? signBit() : 0;
            double a = Math.abs(v);
            int infCode = maxExp() << mantBits;
            int maxCode = codes[codes.length - 1];
            if (Double.isInfinite(a)) {
                return sign | (ieee ? infCode : maxCode);
            }
            if (a >= max()) {
                if (!ieee) {
                    return sign | maxCode;
                }
                double ulp = max() - finite[finite.length - 2];
                double mid = max() + ulp / 2;
                // The "next" value past max has an even code (the infinity code), so a tie overflows.
                return sign | (a < mid ? maxCode : infCode);
            }
            int i = Arrays.binarySearch(finite, a);
            if (i >= 0) {
                return sign | codes[i];
            }
            int hiIdx = -i - 1;
            int loIdx = hiIdx - 1;
            double lo = finite[loIdx];
            double hi = finite[hiIdx];
            // 2a vs lo + hi decides: both sides are exact in double for these formats.
            double twice = 2 * a;
            double sum = lo + hi;
            int code;
            if (twice < sum) {
                code = codes[loIdx];
            } else if (twice > sum) {
                code = codes[hiIdx];
            } else {
                code = (codes[loIdx] & 1) == 0 ? codes[loIdx] : codes[hiIdx];
            }
            return sign | code;
        }
    }

    static Format make(String name, int expBits, int mantBits, int bias, boolean ieee) {
        int positives = 1 << (expBits + mantBits);
        double[] values = new double[positives];
        int[] codes = new int[positives];
        Format probe = new Format(name, expBits, mantBits, bias, ieee, null, null);
        int k = 0;
        for (int c = 0; c < positives; c++) {
            double v = probe.decode(c);
            if (!Double.isNaN(v) && !Double.isInfinite(v)) {
                values[k] = v;
                codes[k] = c;
                k++;
            }
        }
        return new Format(name, expBits, mantBits, bias, ieee, Arrays.copyOf(values, k), Arrays.copyOf(codes, k));
    }

    static final Format FP16 = make("FLOAT16", 5, 10, 15, true);
    static final Format BF16 = make("BFLOAT16", 8, 7, 127, true);
    static final Format E4M3 = make("FLOAT8_E4M3", 4, 3, 7, false);
    static final Format E5M2 = make("FLOAT8_E5M2", 5, 2, 15, true);

    static Format format(DataType t) {
        return switch (t) {
            case FLOAT16 -> FP16;
            case BFLOAT16 -> BF16;
            case FLOAT8_E4M3 -> E4M3;
            case FLOAT8_E5M2 -> E5M2;
            default -> throw new IllegalArgumentException(t.toString());
        };
    }

    // ------------------------------------------------------------------ element <-> value

    /** Value of the raw bits of an element of a float type, exactly, as a double. */
    static double value(DataType t, long bits) {
        return switch (t) {
            case FLOAT32 -> Float.intBitsToFloat((int) bits);
            case FLOAT64 -> Double.longBitsToDouble(bits);
            default -> format(t).decode((int) bits & ((1 << t.byteSize() * 8) - 1));
        };
    }

    /** The documented canonical NaN every computed NaN result must be stored as. */
    static long canonicalNaN(DataType t) {
        return switch (t) {
            case FLOAT32 -> 0x7FC0_0000L;
            case FLOAT64 -> 0x7FF8_0000_0000_0000L;
            case BFLOAT16 -> 0x7FC0;
            case FLOAT16 -> 0x7E00;
            case FLOAT8_E4M3, FLOAT8_E5M2 -> 0x7F;
            default -> throw new IllegalArgumentException(t.toString());
        };
    }

    /**
     * Raw bits of {@code v} (a float-exact value for the float-accumulated types) in type t;
     * a NaN gives the canonical NaN.
     */
    static long encode(DataType t, double v) {
        if (Double.isNaN(v)) {
            return canonicalNaN(t);
        }
        return switch (t) {
            case FLOAT32 -> Float.floatToRawIntBits((float) v) & 0xFFFF_FFFFL;
            case FLOAT64 -> Double.doubleToRawLongBits(v);
            default -> format(t).encode(v);
        };
    }

    // ------------------------------------------------------------------ float arithmetic

    /** Rounds an exact-enough double to float: correct for one +, *, / of two floats. */
    static double f(double x) {
        return (float) x;
    }

    static double min(double x, double y) {
        if (Double.isNaN(x) || Double.isNaN(y)) {
            return Double.NaN;
        }
        if (x == y) {
            // Equal values: only zeros can differ (in sign); -0.0 is the smaller.
            return (Double.doubleToRawLongBits(x) < 0) ? x : y;
        }
        return x < y ? x : y;
    }

    static double max(double x, double y) {
        if (Double.isNaN(x) || Double.isNaN(y)) {
            return Double.NaN;
        }
        if (x == y) {
            return (Double.doubleToRawLongBits(x) < 0) ? y : x;
        }
        return x > y ? x : y;
    }

    /** x + y rounded to double exactly once (BigDecimal for finite operands). */
    static double add64(double x, double y) {
        if (!Double.isFinite(x) || !Double.isFinite(y)) {
            return x + y;   // IEEE special cases: inf + -inf = NaN, NaN propagates, inf wins
        }
        BigDecimal s = new BigDecimal(x).add(new BigDecimal(y));
        if (s.signum() == 0) {
            // Exact zero: -0.0 only when both operands are -0.0 (round to nearest).
            return (Double.doubleToRawLongBits(x) < 0 && Double.doubleToRawLongBits(y) < 0) ? -0.0 : 0.0;
        }
        return s.doubleValue();
    }

    static double mul64(double x, double y) {
        if (!Double.isFinite(x) || !Double.isFinite(y) || x == 0 || y == 0) {
            return x * y;
        }
        double r = new BigDecimal(x).multiply(new BigDecimal(y)).doubleValue();
        if (r == 0) {
            r = (x < 0) != (y < 0) ? -0.0 : 0.0;   // underflow keeps the product's sign
        }
        return r;
    }

    /** The reduction of one element over n inputs for a float type, as raw bits of the type. */
    static long reduceFloat(DataType t, ReduceOp op, long[] inputs, int n, int divisor) {
        boolean f64 = t == DataType.FLOAT64;
        if (n == 1 && switch (op.kind()) { case SUM, PROD, MIN, MAX -> true; default -> false; }) {
            return inputs[0];   // one input is copied unchanged
        }
        double s = f64 ? op.scalar() : (float) op.scalar();
        double acc = 0;
        for (int k = 0; k < n; k++) {
            double x = value(t, inputs[k]);
            if (k == 0) {
                acc = op.kind() == ReduceOp.Kind.PREMUL_SUM ? (f64 ? mul64(s, x) : f(s * x)) : x;
                continue;
            }
            acc = switch (op.kind()) {
                case SUM, AVG -> f64 ? add64(acc, x) : f(acc + x);
                case PROD -> f64 ? mul64(acc, x) : f(acc * x);
                case MIN -> min(acc, x);
                case MAX -> max(acc, x);
                case PREMUL_SUM -> f64 ? add64(acc, mul64(s, x)) : f(acc + f(s * x));
                default -> throw new IllegalArgumentException(op.toString());
            };
        }
        if (op.kind() == ReduceOp.Kind.AVG) {
            acc = f64 ? acc / divisor : f(acc / divisor);
        }
        return encode(t, acc);
    }

    // ------------------------------------------------------------------ integer arithmetic

    /** The element's value: sign-extended for signed types, zero-extended for unsigned (not UINT64). */
    static long intValue(DataType t, long bits) {
        int w = t.byteSize() * 8;
        if (w == 64) {
            return bits;
        }
        long masked = bits & ((1L << w) - 1);
        return t.kind() == DataType.Kind.SIGNED ? (masked << (64 - w)) >> (64 - w) : masked;
    }

    static BigInteger big(DataType t, long bits) {
        long v = intValue(t, bits);
        BigInteger b = BigInteger.valueOf(v);
        if (t == DataType.UINT64 && v < 0) {
            b = b.add(BigInteger.ONE.shiftLeft(64));
        }
        return b;
    }

    /** BigInteger reduced modulo 2^w into the type's raw bits. */
    static long wrap(DataType t, BigInteger v) {
        int w = t.byteSize() * 8;
        return v.mod(BigInteger.ONE.shiftLeft(w)).longValue();   // low w bits, as raw bits
    }

    static long reduceInt(DataType t, ReduceOp op, long[] inputs, int n, int divisor) {
        int w = t.byteSize() * 8;
        BigInteger modulus = BigInteger.ONE.shiftLeft(w);
        BigInteger s = BigInteger.valueOf((long) op.scalar());
        BigInteger acc = null;
        long bits = 0;
        for (int k = 0; k < n; k++) {
            BigInteger x = big(t, inputs[k]);
            switch (op.kind()) {
                case SUM, AVG -> acc = acc == null ? x : acc.add(x);
                case PROD -> acc = acc == null ? x : acc.multiply(x);
                case PREMUL_SUM -> acc = acc == null ? s.multiply(x) : acc.add(s.multiply(x));
                case MIN -> acc = acc == null || x.compareTo(acc) < 0 ? x : acc;
                case MAX -> acc = acc == null || x.compareTo(acc) > 0 ? x : acc;
                case BAND -> bits = k == 0 ? inputs[k] : bits & inputs[k];
                case BOR -> bits = k == 0 ? inputs[k] : bits | inputs[k];
                case BXOR -> bits = k == 0 ? inputs[k] : bits ^ inputs[k];
            }
        }
        if (op.isBitwise()) {
            return wrap(t, BigInteger.valueOf(bits));
        }
        if (op.kind() == ReduceOp.Kind.AVG) {
            // The wrapped sum, read back as the type's value, divided truncating toward zero.
            BigInteger wrapped = big(t, wrap(t, acc));
            acc = wrapped.divide(BigInteger.valueOf(divisor));
        }
        return acc.mod(modulus).longValue();
    }

    /** Expected raw bits (low byteSize*8 bits significant) of one reduced element. */
    static long reduce(DataType t, ReduceOp op, long[] inputs, int n, int divisor) {
        return t.isInteger() ? reduceInt(t, op, inputs, n, divisor) : reduceFloat(t, op, inputs, n, divisor);
    }

    /** Whether raw bits of a float type are a NaN. */
    static boolean isNaN(DataType t, long bits) {
        return !t.isInteger() && Double.isNaN(value(t, bits));
    }
}
