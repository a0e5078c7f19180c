package org.jccl.host.kernel;

import org.jccl.DataType;

/**
 * Exact conversions between {@code float} and the low-precision formats jccl reduces:
 * FLOAT16 (IEEE binary16), BFLOAT16, FLOAT8_E4M3 and FLOAT8_E5M2 (OCP FP8). Every
 * low-precision value is exactly representable as a float, so decoding never rounds; encoding
 * rounds once, to nearest with ties to even.
 *
 * <p>Rules for encoding a float, per format:
 * <ul>
 *   <li><b>FLOAT16</b>: {@link Float#floatToFloat16(float)} of the JDK: IEEE round to nearest
 *       even, subnormals kept, overflow (at or above 65520) becomes infinity, infinity and NaN
 *       are kept (NaN keeps its sign and upper payload bits), -0.0 stays -0.0.</li>
 *   <li><b>BFLOAT16</b>: the upper half of the float rounded to nearest even: finite values at
 *       or above 0x1.FFp127 round to infinity, subnormals are kept (no flush to zero), infinity
 *       is kept, a NaN keeps its sign and its upper 7 payload bits and gets the quiet bit set
 *       ({@code (bits >>> 16) | 0x0040}, the rule of x86's VCVTNEPS2BF16), -0.0 stays -0.0.</li>
 *   <li><b>FLOAT8_E4M3</b> (bias 7, no infinities, 0x7F/0xFF are NaN, largest finite 448 =
 *       0x7E): round to nearest even with subnormals (smallest 2^-9); every finite value above
 *       448 (including ties that would round up) saturates to +-448, and so does +-infinity
 *       (saturation to finite, NVIDIA's {@code __NV_SATFINITE}); NaN becomes 0x7F or 0xFF,
 *       keeping its sign (NVIDIA's converter returns 0x7F whatever the sign); -0.0 becomes
 *       0x80.</li>
 *   <li><b>FLOAT8_E5M2</b> (bias 15, IEEE-like, largest finite 57344 = 0x7B): round to nearest
 *       even with subnormals (smallest 2^-16); overflow follows IEEE, so values at or above
 *       61440 (the midpoint to the next power, a tie that rounds to the even "infinity") become
 *       +-infinity (0x7C / 0xFC), infinity stays infinity, NaN becomes 0x7F or 0xFF keeping its
 *       sign; -0.0 becomes 0x80. This is NVIDIA's {@code __NV_NOSAT} behaviour: unlike its
 *       saturating mode, an overflowing E5M2 sum is reported as infinity, not as 57344.</li>
 * </ul>
 * Decoding an FP8 NaN code gives a quiet float NaN with the same sign; decoding a BFLOAT16 or
 * FLOAT16 NaN keeps its payload bits (FLOAT16 also sets the quiet bit, as the JDK does).
 * Reduction results never carry a NaN payload or sign: {@link Reductions} stores every NaN it
 * computes as the canonical one (0x7F for FP8, 0x7FC0 for BFLOAT16, 0x7E00 for FLOAT16).
 *
 * <p>All methods are static, allocation-free and safe on the reduction hot path.
 */
public final class LowPrecision {
    /** Largest finite FLOAT8_E4M3 value; finite overflow and infinity saturate to it. */
    public static final float E4M3_MAX = 448f;
    /** Largest finite FLOAT8_E5M2 value. */
    public static final float E5M2_MAX = 57344f;
    /** Largest finite BFLOAT16 value (0x7F7F). */
    public static final float BF16_MAX = 0x1.FEp127f;
    /** Largest finite FLOAT16 value (0x7BFF). */
    public static final float FP16_MAX = 65504f;

    private static final float[] E4M3_TO_FLOAT = fp8Table(3, 7, true);
    private static final float[] E5M2_TO_FLOAT = fp8Table(2, 15, false);

    private LowPrecision() {
    }

    /** The float value of BFLOAT16 bits (exact). */
    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** BFLOAT16 bits of {@code value}, rounded once to nearest even (rules in the class doc). */
    public static short floatToBf16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        // Adding 0x7FFF plus the lowest kept bit rounds half to even; a carry into the exponent
        // is the correct next binade (or infinity).
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    /** The float value of FLOAT16 bits (exact; {@link Float#float16ToFloat(short)}). */
    public static float fp16ToFloat(short bits) {
        return Float.float16ToFloat(bits);
    }

    /** FLOAT16 bits of {@code value}, rounded once to nearest even ({@link Float#floatToFloat16(float)}). */
    public static short floatToFp16(float value) {
        return Float.floatToFloat16(value);
    }

    /** The float value of FLOAT8_E4M3 bits (exact; 0x7F and 0xFF are NaN). */
    public static float e4m3ToFloat(byte bits) {
        return E4M3_TO_FLOAT[bits & 0xFF];
    }

    /** FLOAT8_E4M3 bits of {@code value}: nearest even, saturating to +-448 (rules in the class doc). */
    public static byte floatToE4m3(float value) {
        return (byte) toFp8(value, 3, 7, 0x7E, 0x7E);
    }

    /** The float value of FLOAT8_E5M2 bits (exact; 0x7C is infinity, 0x7D..0x7F NaN). */
    public static float e5m2ToFloat(byte bits) {
        return E5M2_TO_FLOAT[bits & 0xFF];
    }

    /** FLOAT8_E5M2 bits of {@code value}: nearest even, IEEE overflow to infinity (rules in the class doc). */
    public static byte floatToE5m2(float value) {
        return (byte) toFp8(value, 2, 15, 0x7B, 0x7C);
    }

    /**
     * The float value of the low {@code byteSize * 8} bits of {@code bits} for one of the types
     * FLOAT16, BFLOAT16, FLOAT8_E4M3, FLOAT8_E5M2.
     *
     * @throws IllegalArgumentException for any other type
     */
    public static float toFloat(DataType type, int bits) {
        return switch (type) {
            case FLOAT16 -> fp16ToFloat((short) bits);
            case BFLOAT16 -> bf16ToFloat((short) bits);
            case FLOAT8_E4M3 -> e4m3ToFloat((byte) bits);
            case FLOAT8_E5M2 -> e5m2ToFloat((byte) bits);
            default -> throw notLowPrecision(type);
        };
    }

    /**
     * The bits (zero-extended to an int) of {@code value} encoded as one of the types FLOAT16,
     * BFLOAT16, FLOAT8_E4M3, FLOAT8_E5M2, rounded once as the class doc says.
     *
     * @throws IllegalArgumentException for any other type
     */
    public static int fromFloat(DataType type, float value) {
        return switch (type) {
            case FLOAT16 -> floatToFp16(value) & 0xFFFF;
            case BFLOAT16 -> floatToBf16(value) & 0xFFFF;
            case FLOAT8_E4M3 -> floatToE4m3(value) & 0xFF;
            case FLOAT8_E5M2 -> floatToE5m2(value) & 0xFF;
            default -> throw notLowPrecision(type);
        };
    }

    /** True for FLOAT16, BFLOAT16, FLOAT8_E4M3 and FLOAT8_E5M2, the types this class converts. */
    public static boolean isLowPrecision(DataType type) {
        return type == DataType.FLOAT16 || type == DataType.BFLOAT16
                || type == DataType.FLOAT8_E4M3 || type == DataType.FLOAT8_E5M2;
    }

    private static IllegalArgumentException notLowPrecision(DataType type) {
        return new IllegalArgumentException("type " + type + " is not a low-precision float: "
                + "use FLOAT16, BFLOAT16, FLOAT8_E4M3 or FLOAT8_E5M2");
    }

    /**
     * Encodes a float as FP8 with {@code m} mantissa bits and exponent {@code bias}. Codes above
     * {@code maxFinite} become {@code overflowCode} (the largest finite code for E4M3, infinity
     * for E5M2); infinity becomes {@code overflowCode} as well.
     *
     * <p>Written with selects instead of branches (the JIT emits conditional moves), because
     * reduction data mixes normals, subnormals and zeros unpredictably. Both roundings are to
     * nearest even: the normal path adds half an FP8 ulp minus one plus the kept lowest bit
     * before truncating (a carry moves to the next binade, as it should); the subnormal path
     * lets the float adder round: {@code |x| + 2^(23 - bias - m + 1)} has a float ulp of exactly
     * the smallest FP8 subnormal, so the sum's low mantissa bits are the rounded code.
     */
    private static int toFp8(float value, int m, int bias, int maxFinite, int overflowCode) {
        int bits = Float.floatToRawIntBits(value);
        int sign = (bits >>> 24) & 0x80;
        int abs = bits & 0x7FFF_FFFF;
        int shift = 23 - m;
        int odd = (abs >>> shift) & 1;
        int normal = (abs + ((bias - 127) << 23) + (1 << (shift - 1)) - 1 + odd) >>> shift;
        int magicBits = (127 + 23 - bias - m + 1) << 23;   // the float 2^(24 - bias - m)
        int subnormal = Float.floatToRawIntBits(Float.intBitsToFloat(abs) + Float.intBitsToFloat(magicBits))
                - magicBits;
        int code = abs < ((128 - bias) << 23) ? subnormal : normal;   // below 2^(1 - bias): subnormal
        code = code > maxFinite ? overflowCode : code;                // also catches infinity
        code = abs > 0x7F80_0000 ? 0x7F : code;                       // NaN
        return sign | code;
    }

    private static float[] fp8Table(int m, int bias, boolean e4m3) {
        float[] table = new float[256];
        int expMax = (1 << (7 - m)) - 1;
        for (int c = 0; c < 256; c++) {
            int sign = c & 0x80;
            int exp = (c & 0x7F) >>> m;
            int mant = c & ((1 << m) - 1);
            float v;
            if (e4m3 ? (c & 0x7F) == 0x7F : (exp == expMax && mant != 0)) {
                v = Float.intBitsToFloat((sign << 24) | 0x7FC0_0000);
            } else if (!e4m3 && exp == expMax) {
                v = Float.POSITIVE_INFINITY;
            } else if (exp == 0) {
                v = Math.scalb((float) mant, 1 - bias - m);
            } else {
                v = Math.scalb((float) ((1 << m) | mant), exp - bias - m);
            }
            table[c] = sign != 0 && !Float.isNaN(v) ? -v : v;
        }
        return table;
    }
}
