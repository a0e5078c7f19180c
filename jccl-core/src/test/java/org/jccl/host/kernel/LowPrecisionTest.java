package org.jccl.host.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.jccl.DataType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * LowPrecision against the definitions in {@link Ref}: every code of every format decoded,
 * round-tripped, every rounding tie between neighbours, overflow and NaN rules, random floats.
 */
class LowPrecisionTest {

    static Stream<DataType> formats() {
        return Stream.of(DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2);
    }

    private static String hex(int code) {
        return "0x" + Integer.toHexString(code);
    }

    @ParameterizedTest
    @MethodSource("formats")
    void everyCodeDecodesExactlyAndRoundTrips(DataType t) {
        Ref.Format f = Ref.format(t);
        int codes = 1 << f.bits();
        int mask = codes - 1;
        for (int c = 0; c < codes; c++) {
            double expected = f.decode(c);
            float actual = LowPrecision.toFloat(t, c);
            if (Double.isNaN(expected)) {
                assertTrue(Float.isNaN(actual), t + " code " + hex(c) + " must decode to NaN");
                int back = LowPrecision.fromFloat(t, actual);
                assertTrue(f.isNaNCode(back), t + " NaN code " + hex(c) + " re-encodes to non-NaN " + hex(back));
                continue;
            }
            assertEquals(Double.doubleToRawLongBits(expected), Double.doubleToRawLongBits(actual),
                    t + " code " + hex(c) + ": value (sign of zero included)");
            assertEquals(c, LowPrecision.fromFloat(t, actual) & mask, t + " round trip of code " + hex(c));
        }
    }

    @ParameterizedTest
    @MethodSource("formats")
    void tiesRoundToEvenAndNeighboursRoundToNearest(DataType t) {
        Ref.Format f = Ref.format(t);
        double[] v = f.finite();
        int[] codes = f.codes();
        int ties = 0;
        for (int i = 0; i + 1 < v.length; i++) {
            // Neighbours differ in the last mantissa bit, so their midpoint has one more bit and
            // is exact in float for every format here.
            float mid = (float) ((v[i] + v[i + 1]) / 2);
            assertEquals((v[i] + v[i + 1]) / 2, mid, 0.0, "midpoint must be exact in float");
            int even = (codes[i] & 1) == 0 ? codes[i] : codes[i + 1];
            for (int sign : new int[] {1, -1}) {
                int s = sign < 0 ? f.signBit() : 0;
                assertEquals(s | even, LowPrecision.fromFloat(t, sign * mid), t + " tie " + (sign * mid));
                assertEquals(s | codes[i + 1], LowPrecision.fromFloat(t, sign * Math.nextUp(mid)),
                        t + " just above tie " + (sign * mid));
                assertEquals(s | codes[i], LowPrecision.fromFloat(t, sign * Math.nextDown(mid)),
                        t + " just below tie " + (sign * mid));
                ties++;
            }
        }
        assertTrue(ties > 200, "checked " + ties + " ties");
    }

    @ParameterizedTest
    @MethodSource("formats")
    void randomFloatsRoundLikeTheReference(DataType t) {
        Ref.Format f = Ref.format(t);
        SplittableRandom rnd = new SplittableRandom(42 + t.ordinal());
        double max = f.max();
        for (int i = 0; i < 300_000; i++) {
            float x = switch (i % 3) {
                case 0 -> Float.intBitsToFloat(rnd.nextInt());                       // any float
                case 1 -> (float) ((rnd.nextDouble() * 2 - 1) * max * 1.1);           // the format's range
                default -> (float) ((rnd.nextDouble() * 2 - 1) * f.finite()[1] * 8);   // subnormal range
            };
            int actual = LowPrecision.fromFloat(t, x);
            if (Float.isNaN(x)) {
                assertTrue(f.isNaNCode(actual), t + " NaN must stay NaN");
                continue;
            }
            assertEquals(f.encode(x), actual, t + " encoding of " + x + " (" + Float.floatToRawIntBits(x) + ")");
        }
    }

    @Test
    void e4m3SaturatesToFiniteAndKeepsNaN() {
        assertEquals(0x7E, LowPrecision.floatToE4m3(448f) & 0xFF);
        assertEquals(0x7E, LowPrecision.floatToE4m3(464f) & 0xFF, "tie above max saturates");
        assertEquals(0x7E, LowPrecision.floatToE4m3(500f) & 0xFF);
        assertEquals(0x7E, LowPrecision.floatToE4m3(Float.MAX_VALUE) & 0xFF);
        assertEquals(0x7E, LowPrecision.floatToE4m3(Float.POSITIVE_INFINITY) & 0xFF);
        assertEquals(0xFE, LowPrecision.floatToE4m3(Float.NEGATIVE_INFINITY) & 0xFF);
        assertEquals(0xFE, LowPrecision.floatToE4m3(-1e30f) & 0xFF);
        assertEquals(0x7F, LowPrecision.floatToE4m3(Float.NaN) & 0xFF);
        assertEquals(0xFF, LowPrecision.floatToE4m3(Float.intBitsToFloat(0xFFC0_0000)) & 0xFF, "negative NaN");
        assertEquals(0x80, LowPrecision.floatToE4m3(-0.0f) & 0xFF);
        assertEquals(0x00, LowPrecision.floatToE4m3(0x1p-10f) & 0xFF, "half the smallest subnormal ties to 0");
        assertEquals(0x01, LowPrecision.floatToE4m3(Math.nextUp(0x1p-10f)) & 0xFF);
        assertEquals(0x02, LowPrecision.floatToE4m3(0x3p-10f) & 0xFF, "1.5 subnormals ties to even 2");
        assertEquals(0x08, LowPrecision.floatToE4m3(0x1p-6f) & 0xFF, "smallest normal");
        assertEquals(0x80, LowPrecision.floatToE4m3(-Float.MIN_VALUE) & 0xFF);
        assertEquals(448f, LowPrecision.e4m3ToFloat((byte) 0x7E));
        assertEquals(LowPrecision.E4M3_MAX, LowPrecision.e4m3ToFloat((byte) 0x7E));
        assertTrue(Float.isNaN(LowPrecision.e4m3ToFloat((byte) 0xFF)));
    }

    @Test
    void e5m2OverflowsToInfinityAsIeee() {
        assertEquals(0x7B, LowPrecision.floatToE5m2(57344f) & 0xFF);
        assertEquals(0x7B, LowPrecision.floatToE5m2(Math.nextDown(61440f)) & 0xFF);
        assertEquals(0x7C, LowPrecision.floatToE5m2(61440f) & 0xFF, "tie past max goes to infinity");
        assertEquals(0xFC, LowPrecision.floatToE5m2(-1e9f) & 0xFF);
        assertEquals(0x7C, LowPrecision.floatToE5m2(Float.POSITIVE_INFINITY) & 0xFF);
        assertEquals(0x7F, LowPrecision.floatToE5m2(Float.NaN) & 0xFF);
        assertEquals(0xFF, LowPrecision.floatToE5m2(Float.intBitsToFloat(0xFFC0_0000)) & 0xFF);
        assertEquals(0x80, LowPrecision.floatToE5m2(-0.0f) & 0xFF);
        assertEquals(0x01, LowPrecision.floatToE5m2(0x1p-16f) & 0xFF, "smallest subnormal");
        assertEquals(0x00, LowPrecision.floatToE5m2(0x1p-17f) & 0xFF);
        assertEquals(Float.POSITIVE_INFINITY, LowPrecision.e5m2ToFloat((byte) 0x7C));
        assertEquals(LowPrecision.E5M2_MAX, LowPrecision.e5m2ToFloat((byte) 0x7B));
    }

    @Test
    void bf16RoundsNearestEvenAndQuietsNaN() {
        assertEquals(0x3F80, LowPrecision.floatToBf16(1f) & 0xFFFF);
        assertEquals(0x3F80, LowPrecision.floatToBf16(Float.intBitsToFloat(0x3F80_8000)) & 0xFFFF, "tie to even");
        assertEquals(0x3F82, LowPrecision.floatToBf16(Float.intBitsToFloat(0x3F81_8000)) & 0xFFFF, "tie to even up");
        assertEquals(0x7F80, LowPrecision.floatToBf16(Float.MAX_VALUE) & 0xFFFF, "overflow to infinity");
        assertEquals(0x7F7F, LowPrecision.floatToBf16(LowPrecision.BF16_MAX) & 0xFFFF);
        assertEquals(0x7FC1, LowPrecision.floatToBf16(Float.intBitsToFloat(0x7F81_0000)) & 0xFFFF,
                "signalling NaN is quieted, payload kept");
        assertEquals(0xFFC0, LowPrecision.floatToBf16(Float.intBitsToFloat(0xFF80_0001)) & 0xFFFF,
                "NaN with payload only in the low bits stays NaN");
        assertEquals(0x8000, LowPrecision.floatToBf16(-0.0f) & 0xFFFF);
        assertEquals(0x0001, LowPrecision.floatToBf16(Float.intBitsToFloat(0x0000_8001)) & 0xFFFF,
                "subnormals are kept");
    }

    @Test
    void fp16IsTheJdkConversion() {
        for (int c = 0; c < 65536; c++) {
            assertEquals(Float.floatToRawIntBits(Float.float16ToFloat((short) c)),
                    Float.floatToRawIntBits(LowPrecision.fp16ToFloat((short) c)));
        }
        assertEquals(0x7BFF, LowPrecision.floatToFp16(LowPrecision.FP16_MAX) & 0xFFFF);
        assertEquals(0x7C00, LowPrecision.floatToFp16(65520f) & 0xFFFF, "tie past max goes to infinity");
    }

    @Test
    void otherTypesAreRejectedWithTheirName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LowPrecision.toFloat(DataType.FLOAT32, 0));
        assertTrue(e.getMessage().contains("FLOAT32"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> LowPrecision.fromFloat(DataType.INT8, 1f));
    }
}
