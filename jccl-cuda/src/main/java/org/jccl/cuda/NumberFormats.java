package org.jccl.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jccl.DataType;

/**
 * Conversions between double and the bit patterns of every {@link DataType}, rounding to nearest
 * even: used to write PreMulSum scalars in the element type NCCL expects, and by the tests to
 * build data and read results.
 */
final class NumberFormats {
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble DOUBLE = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private NumberFormats() {
    }

    /** Writes {@code v} as element {@code i} of type {@code t} (integers must be in range; they wrap like C). */
    static void put(MemorySegment s, DataType t, long i, double v) {
        switch (t) {
            case INT8, UINT8 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) (long) v);
            case INT32, UINT32 -> s.set(INT, i * 4, (int) (long) v);
            case INT64 -> s.set(LONG, i * 8, (long) v);
            case UINT64 -> s.set(LONG, i * 8, v >= 0x1p63 ? (long) (v - 0x1p64) : (long) v);
            case FLOAT16 -> s.set(SHORT, i * 2, Float.floatToFloat16((float) v));
            case BFLOAT16 -> s.set(SHORT, i * 2, toBf16((float) v));
            case FLOAT32 -> s.set(FLOAT, i * 4, (float) v);
            case FLOAT64 -> s.set(DOUBLE, i * 8, v);
            case FLOAT8_E4M3 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) toFp8(v, 4, 3));
            case FLOAT8_E5M2 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) toFp8(v, 5, 2));
        }
    }

    /** Element {@code i} of type {@code t} as a double (unsigned types read unsigned). */
    static double get(MemorySegment s, DataType t, long i) {
        return switch (t) {
            case INT8 -> s.get(ValueLayout.JAVA_BYTE, i);
            case UINT8 -> s.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
            case INT32 -> s.get(INT, i * 4);
            case UINT32 -> s.get(INT, i * 4) & 0xFFFFFFFFL;
            case INT64 -> s.get(LONG, i * 8);
            case UINT64 -> {
                long x = s.get(LONG, i * 8);
                yield x >= 0 ? x : x + 0x1p64;
            }
            case FLOAT16 -> Float.float16ToFloat(s.get(SHORT, i * 2));
            case BFLOAT16 -> Float.intBitsToFloat((s.get(SHORT, i * 2) & 0xFFFF) << 16);
            case FLOAT32 -> s.get(FLOAT, i * 4);
            case FLOAT64 -> s.get(DOUBLE, i * 8);
            case FLOAT8_E4M3 -> fromFp8(s.get(ValueLayout.JAVA_BYTE, i) & 0xFF, 4, 3);
            case FLOAT8_E5M2 -> fromFp8(s.get(ValueLayout.JAVA_BYTE, i) & 0xFF, 5, 2);
        };
    }

    /** float to bfloat16 bits, round to nearest even (NaN stays NaN). */
    static short toBf16(float f) {
        int b = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((b >>> 16) | 0x40);
        }
        int rounding = 0x7FFF + ((b >>> 16) & 1);
        return (short) ((b + rounding) >>> 16);
    }

    /**
     * double to an OCP FP8 byte with {@code e} exponent and {@code m} mantissa bits, round to
     * nearest even. E4M3 has no infinity and saturates to +-448; E5M2 overflows to infinity.
     */
    static int toFp8(double v, int e, int m) {
        boolean e4m3 = e == 4;
        int bias = (1 << (e - 1)) - 1;
        int sign = (v < 0 || (v == 0 && 1 / v < 0)) ? 0x80 : 0;
        double a = Math.abs(v);
        if (Double.isNaN(v)) {
            return 0x7F;
        }
        double max = e4m3 ? 448 : 57344;
        if (a == 0) {
            return sign;
        }
        int minExp = 1 - bias;
        int exp = Math.getExponent(a);
        int code;
        if (exp < minExp) {
            long q = (long) Math.rint(a / Math.scalb(1.0, minExp - m));
            code = (int) q; // q == 1 << m rolls into the smallest normal naturally
        } else {
            long q = (long) Math.rint(a / Math.scalb(1.0, exp - m));
            if (q == (1L << (m + 1))) {
                exp++;
                q = 1L << m;
            }
            code = ((exp + bias) << m) | (int) (q - (1L << m));
        }
        if ((code >> m) >= (1 << e) || fromFp8(code, e, m) > max || Double.isNaN(fromFp8(code, e, m)) || Double.isInfinite(fromFp8(code, e, m))) {
            code = e4m3 ? 0x7E : 0x7C; // E4M3: largest finite (448); E5M2: infinity
        }
        return sign | code;
    }

    /** An OCP FP8 byte to double. */
    static double fromFp8(int b, int e, int m) {
        int bias = (1 << (e - 1)) - 1;
        int exp = (b >> m) & ((1 << e) - 1);
        int mant = b & ((1 << m) - 1);
        double sign = (b & 0x80) != 0 ? -1 : 1;
        if (e == 4 && exp == 15 && mant == 7) {
            return Double.NaN;
        }
        if (e == 5 && exp == 31) {
            return mant == 0 ? sign * Double.POSITIVE_INFINITY : Double.NaN;
        }
        if (exp == 0) {
            return sign * mant * Math.scalb(1.0, 1 - bias - m);
        }
        return sign * (1 + mant / (double) (1 << m)) * Math.scalb(1.0, exp - bias);
    }

    /**
     * Checks that {@code scalar} can be a PreMulSum multiplier of {@code t}: integral and in range
     * for integer types.
     */
    static void checkScalar(DataType t, double scalar) {
        if (Double.isInfinite(scalar)) {
            throw new IllegalArgumentException("PREMUL_SUM scalar is infinite: give a finite multiplier");
        }
        if (t.isInteger()) {
            if (scalar != Math.rint(scalar)) {
                throw new IllegalArgumentException("PREMUL_SUM scalar " + scalar + " is not an integer but the data type is "
                        + t + ": integer types need an integer multiplier");
            }
            double lo = switch (t) {
                case INT8 -> -128;
                case INT32 -> Integer.MIN_VALUE;
                case INT64 -> -0x1p63;
                default -> 0;
            };
            double hi = switch (t) {
                case INT8 -> 127;
                case UINT8 -> 255;
                case INT32 -> Integer.MAX_VALUE;
                case UINT32 -> 0xFFFFFFFFL;
                case INT64 -> 0x1p63;
                default -> 0x1p64;
            };
            if (scalar < lo || scalar > hi) {
                throw new IllegalArgumentException("PREMUL_SUM scalar " + scalar + " does not fit " + t + " [" + lo + ", "
                        + hi + "]");
            }
        }
    }
}
