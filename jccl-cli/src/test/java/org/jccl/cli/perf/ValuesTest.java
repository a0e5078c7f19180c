package org.jccl.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jccl.DataType;
import org.junit.jupiter.api.Test;

class ValuesTest {
    @Test
    void fp8DecodesTheOcpSpecValues() {
        // OCP 8-bit floating point spec, tables of E4M3 and E5M2.
        assertEquals(448.0, Values.decodeE4M3((byte) 0x7E));
        assertEquals(-448.0, Values.decodeE4M3((byte) 0xFE));
        assertTrue(Double.isNaN(Values.decodeE4M3((byte) 0x7F)));
        assertTrue(Double.isNaN(Values.decodeE4M3((byte) 0xFF)));
        assertEquals(1.0, Values.decodeE4M3((byte) 0x38));
        assertEquals(Math.scalb(1.0, -9), Values.decodeE4M3((byte) 0x01));
        assertEquals(Math.scalb(1.0, -6), Values.decodeE4M3((byte) 0x08));
        assertEquals(Math.scalb(7.0, -9), Values.decodeE4M3((byte) 0x07));
        assertEquals(57344.0, Values.decodeE5M2((byte) 0x7B));
        assertEquals(Double.POSITIVE_INFINITY, Values.decodeE5M2((byte) 0x7C));
        assertEquals(Double.NEGATIVE_INFINITY, Values.decodeE5M2((byte) 0xFC));
        assertTrue(Double.isNaN(Values.decodeE5M2((byte) 0x7D)));
        assertEquals(1.0, Values.decodeE5M2((byte) 0x3C));
        assertEquals(Math.scalb(1.0, -16), Values.decodeE5M2((byte) 0x01));
        assertEquals(Math.scalb(1.0, -14), Values.decodeE5M2((byte) 0x04));
        // E5M2 is the top byte of a binary16: every code decodes like that half.
        for (int b = 0; b < 256; b++) {
            double half = Float.float16ToFloat((short) (b << 8));
            double e5m2 = Values.decodeE5M2((byte) b);
            assertTrue(Double.compare(half, e5m2) == 0 || (Double.isNaN(half) && Double.isNaN(e5m2)), "code " + b);
        }
    }

    @Test
    void everyTypeRoundTripsTheIntegersOfItsExactRange() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(8 * 16);
            for (DataType t : DataType.values()) {
                long lim = TestData.exactLimit(t);
                long lo = t.kind() == DataType.Kind.UNSIGNED ? 0 : -lim;
                long step = Math.max(1, (lim - lo) / 5000);
                for (long v = lo; v <= lim; v += step) {
                    Values.put(seg, t, 3, v);
                    assertEquals((double) v, Values.get(seg, t, 3), t + " " + v);
                }
                Values.put(seg, t, 5, lim);
                assertEquals((double) lim, Values.get(seg, t, 5), t + " limit");
            }
        }
    }

    @Test
    void storesNativeLittleEndianLayouts() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(16);
            Values.put(seg, DataType.FLOAT32, 1, 3.0);
            assertEquals(Float.floatToIntBits(3.0f), seg.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, 1));
            Values.put(seg, DataType.FLOAT16, 0, -2.0);
            assertEquals((short) 0xC000, seg.get(ValueLayout.JAVA_SHORT_UNALIGNED, 0));
            Values.put(seg, DataType.BFLOAT16, 0, 1.0);
            assertEquals((short) 0x3F80, seg.get(ValueLayout.JAVA_SHORT_UNALIGNED, 0));
            Values.put(seg, DataType.FLOAT8_E4M3, 0, -16.0);
            assertEquals(-16.0, Values.decodeE4M3(seg.get(ValueLayout.JAVA_BYTE, 0)));
            Values.put(seg, DataType.UINT32, 0, 4294967295.0);
            assertEquals(-1, seg.get(ValueLayout.JAVA_INT_UNALIGNED, 0));
            assertEquals(4294967295.0, Values.get(seg, DataType.UINT32, 0));
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, -1L);
            assertEquals(18446744073709551615.0, Values.get(seg, DataType.UINT64, 0));
        }
    }

    @Test
    void refusesValuesATypeCannotHold() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(16);
            assertThrows(IllegalArgumentException.class, () -> Values.put(seg, DataType.INT8, 0, 128));
            assertThrows(IllegalArgumentException.class, () -> Values.put(seg, DataType.UINT8, 0, -1));
            assertThrows(IllegalArgumentException.class, () -> Values.put(seg, DataType.INT32, 0, 0.5));
            assertThrows(IllegalArgumentException.class, () -> Values.put(seg, DataType.FLOAT16, 0, 2049));
            assertThrows(IllegalArgumentException.class, () -> Values.put(seg, DataType.BFLOAT16, 0, 257));
            assertThrows(IllegalArgumentException.class, () -> Values.put(seg, DataType.FLOAT8_E4M3, 0, 17));
            assertThrows(IllegalArgumentException.class, () -> Values.put(seg, DataType.FLOAT8_E5M2, 0, 9));
            assertThrows(IllegalArgumentException.class, () -> Values.put(seg, DataType.FLOAT32, 0, 16777217));
        }
    }

    @Test
    void holdsSaysExactlyWhichValuesPutAccepts() {
        double[] values = {0, -0.0, 1, -1, 0.5, -34.5, 127, 128, -128, -129, 255, 256, 448, 449, 2048, 2049,
            57344, 1 << 24, (1 << 24) + 1, 4294967295.0, 4294967296.0, 0.1, Math.scalb(1.0, -9), Math.scalb(1.0, -24),
            1e300};
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(16, 8);
            for (DataType t : DataType.values()) {
                for (double v : values) {
                    boolean accepted;
                    try {
                        Values.put(seg, t, 0, v);
                        accepted = true;
                        double got = Values.get(seg, t, 0);
                        assertTrue(got == v, t + " " + v + " read back as " + got); // (-0.0 == 0.0: integers)
                    } catch (IllegalArgumentException e) {
                        accepted = false;
                    }
                    assertEquals(accepted, Values.holds(t, v), t + " " + v);
                }
            }
        }
        assertTrue(Values.holds(DataType.INT8, -34));
        assertTrue(!Values.holds(DataType.INT8, -34.5), "an average of integers need not be one");
    }
}
