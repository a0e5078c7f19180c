package org.jccl.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class SizesTest {
    @Test
    void parsesLikeNcclTests() {
        assertEquals(8, Sizes.parse("8"));
        assertEquals(64 * 1024, Sizes.parse("64K"));
        assertEquals(64 * 1024, Sizes.parse("64k"));
        assertEquals(32L << 20, Sizes.parse("32M"));
        assertEquals(1L << 30, Sizes.parse("1G"));
        assertEquals(512 * 1024, Sizes.parse("0.5M"));
        assertEquals(0, Sizes.parse("0"));
        for (String bad : new String[] {"", "abc", "-1", "1X", "1e400", "NaN", "Infinity", "1d", "0x10", "K"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Sizes.parse(bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'") && e.getMessage().contains("32M"), e.getMessage());
        }
    }

    @Test
    void sweepsByFactorOrIncrement() {
        assertEquals(List.of(8L, 16L, 32L, 64L), Sizes.sweep(8, 64, 1, 2));
        assertEquals(List.of(8L, 32L), Sizes.sweep(8, 100, 1, 4));
        assertEquals(List.of(100L, 150L, 200L), Sizes.sweep(100, 200, 50, 1));
        assertEquals(List.of(0L, 10L, 20L), Sizes.sweep(0, 25, 10, 1));
        assertEquals(List.of(64L), Sizes.sweep(64, 64, 1, 2));
        assertEquals(27, Sizes.sweep(1, 1L << 26, 1, 2).size());
        assertThrows(IllegalArgumentException.class, () -> Sizes.sweep(0, 64, 1, 2));
        assertThrows(IllegalArgumentException.class, () -> Sizes.sweep(65, 64, 1, 2));
        assertThrows(IllegalArgumentException.class, () -> Sizes.sweep(1, 64, 0, 1));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Sizes.sweep(1, 1L << 30, 1, 1));
        assertTrue(e.getMessage().contains("-i"), e.getMessage());
    }

    @Test
    void sweepStopsBeforeOverflow() {
        List<Long> s = Sizes.sweep(1L << 61, Long.MAX_VALUE, 1, 2);
        assertEquals(List.of(1L << 61, 1L << 62), s);
    }

    @Test
    void humanSizes() {
        assertEquals("8", Sizes.human(8));
        assertEquals("1K", Sizes.human(1024));
        assertEquals("32M", Sizes.human(32L << 20));
        assertEquals("1.5K", Sizes.human(1536));
        assertEquals("1G", Sizes.human(1L << 30));
        assertEquals("1023", Sizes.human(1023));
    }
}
