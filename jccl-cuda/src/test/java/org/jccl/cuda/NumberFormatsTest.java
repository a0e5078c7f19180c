package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.junit.jupiter.api.Test;

/** The element conversions the GPU tests and PreMulSum scalars rely on (no GPU needed). */
class NumberFormatsTest {

    @Test
    void fp8E4M3KnownCodes() {
        // OCP FP8 spec values: 0x7E is the largest finite (448), 0x08 the smallest normal (2^-6),
        // 0x01 the smallest subnormal (2^-9), 0x38 is 1.0, 0xB8 is -1.0, 0x7F is NaN.
        assertEquals(448.0, NumberFormats.fromFp8(0x7E, 4, 3));
        assertEquals(Math.scalb(1.0, -6), NumberFormats.fromFp8(0x08, 4, 3));
        assertEquals(Math.scalb(1.0, -9), NumberFormats.fromFp8(0x01, 4, 3));
        assertEquals(1.0, NumberFormats.fromFp8(0x38, 4, 3));
        assertEquals(-1.0, NumberFormats.fromFp8(0xB8, 4, 3));
        assertTrue(Double.isNaN(NumberFormats.fromFp8(0x7F, 4, 3)));
        assertEquals(0x38, NumberFormats.toFp8(1.0, 4, 3));
        assertEquals(0x7E, NumberFormats.toFp8(1000.0, 4, 3), "E4M3 saturates");
        assertEquals(0x7E | 0x80, NumberFormats.toFp8(-1e9, 4, 3));
        // 17 lies halfway between 16 and 18: ties to even mantissa (16 = 1.000 x 2^4).
        assertEquals(16.0, NumberFormats.fromFp8(NumberFormats.toFp8(17, 4, 3), 4, 3));
        assertEquals(20.0, NumberFormats.fromFp8(NumberFormats.toFp8(19, 4, 3), 4, 3));
    }

    @Test
    void fp8E5M2KnownCodes() {
        assertEquals(57344.0, NumberFormats.fromFp8(0x7B, 5, 2));
        assertEquals(Double.POSITIVE_INFINITY, NumberFormats.fromFp8(0x7C, 5, 2));
        assertEquals(1.0, NumberFormats.fromFp8(0x3C, 5, 2));
        assertEquals(Math.scalb(1.0, -16), NumberFormats.fromFp8(0x01, 5, 2));
        assertEquals(0x7C, NumberFormats.toFp8(1e6, 5, 2), "E5M2 overflows to infinity");
    }

    @Test
    void everyFp8CodeRoundTrips() {
        for (int e = 4; e <= 5; e++) {
            int m = 7 - e;
            for (int code = 0; code < 256; code++) {
                double v = NumberFormats.fromFp8(code, e, m);
                if (Double.isNaN(v) || code == 0x80) {
                    continue; // NaN payloads and -0 have several codes / sign handling
                }
                assertEquals(code, NumberFormats.toFp8(v, e, m), "e" + e + "m" + m + " code 0x" + Integer.toHexString(code));
            }
        }
    }

    @Test
    void smallIntegersAreExactInEveryType() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(64);
            for (DataType t : DataType.values()) {
                double limit = Matrix.limit(t);
                for (double v = t.kind() == DataType.Kind.UNSIGNED ? 0 : -limit; v <= limit; v++) {
                    NumberFormats.put(s, t, 3, v);
                    assertEquals(v, NumberFormats.get(s, t, 3), t + " " + v);
                }
            }
        }
    }

    @Test
    void bf16RoundsToNearestEven() {
        assertEquals((short) 0x3F80, NumberFormats.toBf16(1.0f));
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
        assertEquals((short) 0x3F80, NumberFormats.toBf16(1.0f + 0x1p-8f));
        assertEquals((short) 0x3F81, NumberFormats.toBf16(1.0f + 0x1p-8f + 0x1p-16f));
    }

    @Test
    void preMulSumScalarChecks() {
        NumberFormats.checkScalar(DataType.INT32, 3);
        NumberFormats.checkScalar(DataType.FLOAT16, 0.1);
        var e = assertThrows(IllegalArgumentException.class, () -> NumberFormats.checkScalar(DataType.INT32, 0.5));
        assertTrue(e.getMessage().contains("not an integer"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> NumberFormats.checkScalar(DataType.UINT8, -1));
        assertThrows(IllegalArgumentException.class, () -> NumberFormats.checkScalar(DataType.INT8, 300));
        assertThrows(IllegalArgumentException.class, () -> NumberFormats.checkScalar(DataType.FLOAT32,
                Double.POSITIVE_INFINITY));
    }
}
