package org.jccl.cli.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.Map;
import org.jccl.DataType;

/**
 * Reads and writes elements of every {@link DataType} as doubles, in native byte order.
 *
 * <p>Writing is for the integer-valued numbers {@link TestData} generates, which every type holds
 * exactly; a value the type cannot hold exactly is a bug and throws. Reading decodes any bit
 * pattern (a wrong result can be anything, NaN included).
 */
public final class Values {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    /** Exact value -> code for the two FP8 formats, built from the decoders (256 codes each). */
    private static final Map<Double, Byte> E4M3_CODES = codes(true);
    private static final Map<Double, Byte> E5M2_CODES = codes(false);

    private Values() {
    }

    /** The element {@code index} of {@code seg}, decoded to a double. */
    public static double get(MemorySegment seg, DataType type, long index) {
        return switch (type) {
            case INT8 -> seg.get(ValueLayout.JAVA_BYTE, index);
            case UINT8 -> Byte.toUnsignedInt(seg.get(ValueLayout.JAVA_BYTE, index));
            case INT32 -> seg.get(I32, index * 4);
            case UINT32 -> Integer.toUnsignedLong(seg.get(I32, index * 4));
            case INT64 -> seg.get(I64, index * 8);
            case UINT64 -> unsignedToDouble(seg.get(I64, index * 8));
            case FLOAT16 -> Float.float16ToFloat(seg.get(I16, index * 2));
            case BFLOAT16 -> Float.intBitsToFloat((seg.get(I16, index * 2) & 0xFFFF) << 16);
            case FLOAT32 -> seg.get(F32, index * 4);
            case FLOAT64 -> seg.get(F64, index * 8);
            case FLOAT8_E4M3 -> decodeE4M3(seg.get(ValueLayout.JAVA_BYTE, index));
            case FLOAT8_E5M2 -> decodeE5M2(seg.get(ValueLayout.JAVA_BYTE, index));
        };
    }

    /**
     * Writes {@code value}, which {@code type} must hold exactly, at element {@code index}.
     *
     * @throws IllegalArgumentException when the type cannot hold the value exactly
     */
    public static void put(MemorySegment seg, DataType type, long index, double value) {
        switch (type) {
            case INT8, UINT8 -> seg.set(ValueLayout.JAVA_BYTE, index, (byte) exactLong(type, value));
            case INT32, UINT32 -> seg.set(I32, index * 4, (int) exactLong(type, value));
            case INT64, UINT64 -> seg.set(I64, index * 8, exactLong(type, value));
            case FLOAT16 -> {
                short h = Float.floatToFloat16((float) value);
                requireExact(type, value, Float.float16ToFloat(h));
                seg.set(I16, index * 2, h);
            }
            case BFLOAT16 -> {
                int bits = Float.floatToRawIntBits((float) value);
                requireExact(type, value, Float.intBitsToFloat(bits & 0xFFFF0000));
                seg.set(I16, index * 2, (short) (bits >>> 16));
            }
            case FLOAT32 -> {
                requireExact(type, value, (float) value);
                seg.set(F32, index * 4, (float) value);
            }
            case FLOAT64 -> seg.set(F64, index * 8, value);
            case FLOAT8_E4M3 -> seg.set(ValueLayout.JAVA_BYTE, index, fp8Code(E4M3_CODES, type, value));
            case FLOAT8_E5M2 -> seg.set(ValueLayout.JAVA_BYTE, index, fp8Code(E5M2_CODES, type, value));
        }
    }

    /** OCP FP8 E4M3: bias 7, no infinities, S.1111.111 is NaN, max 448. */
    public static double decodeE4M3(byte code) {
        int b = code & 0xFF;
        int sign = (b & 0x80) != 0 ? -1 : 1;
        int exp = (b >>> 3) & 0xF;
        int man = b & 0x7;
        if (exp == 0xF && man == 0x7) {
            return Double.NaN;
        }
        if (exp == 0) {
            return sign * (man / 8.0) * Math.scalb(1.0, -6);
        }
        return sign * (1 + man / 8.0) * Math.scalb(1.0, exp - 7);
    }

    /** OCP FP8 E5M2: bias 15, IEEE-like with infinities and NaN, max finite 57344. */
    public static double decodeE5M2(byte code) {
        int b = code & 0xFF;
        int sign = (b & 0x80) != 0 ? -1 : 1;
        int exp = (b >>> 2) & 0x1F;
        int man = b & 0x3;
        if (exp == 0x1F) {
            return man == 0 ? sign * Double.POSITIVE_INFINITY : Double.NaN;
        }
        if (exp == 0) {
            return sign * (man / 4.0) * Math.scalb(1.0, -14);
        }
        return sign * (1 + man / 4.0) * Math.scalb(1.0, exp - 15);
    }

    private static Map<Double, Byte> codes(boolean e4m3) {
        Map<Double, Byte> m = new HashMap<>();
        for (int b = 0; b < 256; b++) {
            double v = e4m3 ? decodeE4M3((byte) b) : decodeE5M2((byte) b);
            // 0x80 is -0.0, which equals +0.0 as a double: keep the first (+0.0, code 0).
            if (!Double.isNaN(v) && !Double.isInfinite(v)) {
                m.putIfAbsent(v == 0 ? 0.0 : v, (byte) b);
            }
        }
        return m;
    }

    private static byte fp8Code(Map<Double, Byte> codes, DataType type, double value) {
        Byte b = codes.get(value == 0 ? 0.0 : value);
        if (b == null) {
            throw new IllegalArgumentException(value + " is not exactly representable in " + type);
        }
        return b;
    }

    /** Whether {@link #put} can write {@code value} as a {@code type} (it holds it exactly). */
    public static boolean holds(DataType type, double value) {
        return switch (type) {
            case INT8, UINT8, INT32, UINT32, INT64, UINT64 -> fitsLong(type, value);
            case FLOAT16 -> Float.float16ToFloat(Float.floatToFloat16((float) value)) == value;
            case BFLOAT16 -> Float.intBitsToFloat(Float.floatToRawIntBits((float) value) & 0xFFFF0000) == value;
            case FLOAT32 -> (float) value == value;
            case FLOAT64 -> true;
            case FLOAT8_E4M3 -> E4M3_CODES.containsKey(value == 0 ? 0.0 : value);
            case FLOAT8_E5M2 -> E5M2_CODES.containsKey(value == 0 ? 0.0 : value);
        };
    }

    private static boolean fitsLong(DataType type, double value) {
        long v = (long) value;
        return v == value && switch (type) {
            case INT8 -> v >= Byte.MIN_VALUE && v <= Byte.MAX_VALUE;
            case UINT8 -> v >= 0 && v <= 0xFF;
            case INT32 -> v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE;
            case UINT32 -> v >= 0 && v <= 0xFFFF_FFFFL;
            case INT64 -> true;
            case UINT64 -> v >= 0;
            default -> false;
        };
    }

    private static long exactLong(DataType type, double value) {
        if (!fitsLong(type, value)) {
            throw new IllegalArgumentException(value + " is not exactly representable in " + type);
        }
        return (long) value;
    }

    private static void requireExact(DataType type, double wanted, double stored) {
        if (wanted != stored) {
            throw new IllegalArgumentException(wanted + " is not exactly representable in " + type);
        }
    }

    private static double unsignedToDouble(long v) {
        double d = (double) (v >>> 1) * 2.0;
        return d + (v & 1);
    }
}
