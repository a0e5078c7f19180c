package org.jccl.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** {@link ToSteady}: the time from the first call until a window of calls runs near the steady median. */
class ToSteadyTest {

    @Test
    void countsTheFirstCallAndTheSlowCallsBeforeTheFirstSteadyWindow() {
        long[] n = new long[100];
        Arrays.fill(n, 1_000);                     // steady: 1 us
        for (int i = 0; i < 10; i++) {
            n[i] = 50_000;                         // ten slow calls of 50 us after the first
        }
        // a window of 16 has a fast median (its 9th smallest) once it holds at most 7 slow calls:
        // from index 3 (calls 3..18: 7 slow, 9 fast)
        double s = ToSteady.seconds(200_000, n, n.length);
        assertEquals((200_000 + 3 * 50_000) / 1e9, s, 1e-12);
    }

    @Test
    void aFastFirstCallIsSteadyAtOnce() {
        long[] n = new long[64];
        Arrays.fill(n, 1_000);
        assertEquals(1.2e-6, ToSteady.seconds(1_200, n, n.length), 1e-15);
    }

    @Test
    void oneSlowCallInTheMiddleDoesNotDelayIt() {
        long[] n = new long[64];
        Arrays.fill(n, 1_000);
        n[0] = 2_000_000; // a preempted call: the window's median ignores it
        assertEquals(5e-6, ToSteady.seconds(5_000, n, n.length), 1e-15);
    }

    @Test
    void aSlowingTrendIsReachedLateAndTooShortARunIsNotReached() {
        long[] n = new long[64];
        for (int i = 0; i < n.length; i++) {
            n[i] = 100_000 - 1_000L * i; // getting faster all the time: steady is the second half's median
        }
        // second half: 68..37 us, its (upper) median 53 us; the window from i has median (its 9th
        // smallest) 93 - i us: within 1.3 x 53 = 68.9 us from i = 25
        long before = 500_000;
        for (int i = 0; i < 25; i++) {
            before += n[i];
        }
        assertEquals(before / 1e9, ToSteady.seconds(500_000, n, n.length), 1e-12);
        assertEquals(ToSteady.NOT_REACHED, ToSteady.seconds(1_000, new long[31], 31), "31 calls: fewer than two windows");
    }
}
