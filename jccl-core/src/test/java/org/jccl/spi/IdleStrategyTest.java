package org.jccl.spi;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The phases of the two idle strategies, and their refusal of impossible settings. */
class IdleStrategyTest {

    @Test
    void backoffSpinsThenYieldsThenParksByPollCount() {
        BackoffIdleStrategy s = new BackoffIdleStrategy(3, 2, 1_000, 4_000);
        for (int i = 0; i < 5; i++) {
            assertFalse(s.isParking(i), "poll " + i);
            s.idle(i);
        }
        assertTrue(s.isParking(5));
        assertTrue(s.isParking(Integer.MAX_VALUE));
        // a park never exceeds the maximum, however long the wait (no shift overflow)
        long t0 = System.nanoTime();
        s.idle(Integer.MAX_VALUE);
        s.idle(5 + 63);
        assertTrue(System.nanoTime() - t0 < 1_000_000_000L, "two parks of at most 4 us took over a second");
    }

    @Test
    void backoffForRanksParksOnlyAfterSpinningAndYielding() {
        BackoffIdleStrategy many = BackoffIdleStrategy.forRanks(Integer.MAX_VALUE);
        BackoffIdleStrategy few = BackoffIdleStrategy.forRanks(1);
        assertFalse(few.isParking(20_000));
        assertTrue(few.isParking(21_000));
        assertFalse(many.isParking(2_049));
        assertTrue(many.isParking(2_050));
    }

    @Test
    void timedStrategyParksOnlyAfterItsYieldTimeFromTheFirstPoll() throws InterruptedException {
        TimedIdleStrategy s = new TimedIdleStrategy(0, 50_000_000L, 1_000);
        s.idle(0);
        assertFalse(s.isParking(1), "parking right after the wait began");
        Thread.sleep(80);
        assertTrue(s.isParking(2), "not parking 80 ms into a wait whose yielding ends at 50 ms");
        assertTrue(s.waited() >= 80_000_000L);
        s.idle(); // goes on with the same wait
        assertTrue(s.isParking(3));
        s.idle(0); // a new wait starts the clock again
        assertFalse(s.isParking(1));
        assertTrue(s.waited() < 50_000_000L);
    }

    @Test
    void impossibleSettingsAreRefusedNamingThem() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(-1, 0, 1, 1))
                .getMessage().contains("spins (-1)"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(0, 0, 5, 4))
                .getMessage().contains("maxParkNanos (4)"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new TimedIdleStrategy(10, 5, 1))
                .getMessage().contains("yieldNanos (5)"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new TimedIdleStrategy(0, 0, 0))
                .getMessage().contains("parkNanos (0)"));
    }
}
