package org.jccl.cli.perf;

import java.util.Arrays;

/**
 * Time to steady state of one size and placement ({@code jccl perf --to-steady}): from the start of
 * its first call until the calls run at their steady speed, where steady is the median call of the
 * second half of the timed loop and "at steady speed" means the median of a window of {@value
 * #WINDOW} consecutive calls within {@value #TOLERANCE}x of it (the tolerance #17 sets for a cold
 * library). A median rather than a mean, so that one preempted call neither ends nor prolongs it.
 * Steady is reached within the run by that definition once it has two windows of calls; a shorter
 * run reports {@link #NOT_REACHED}.
 */
public final class ToSteady {
    /** Calls per window. */
    static final int WINDOW = 16;
    /** How close to steady a window's median must be. */
    static final double TOLERANCE = 1.3;
    /** {@link #seconds} when no window came within the tolerance before the run ended. */
    public static final double NOT_REACHED = -1;

    private ToSteady() {
    }

    /**
     * Seconds from the start of the first call until the first window of calls at steady speed
     * begins ({@code firstNanos}, the first call, plus the calls before that window), or {@link
     * #NOT_REACHED}. {@code nanos} holds the timed calls after the first, {@code n} of them; fewer
     * than two windows' worth: {@link #NOT_REACHED} (too short a run to tell).
     */
    public static double seconds(long firstNanos, long[] nanos, int n) {
        if (n < 2 * WINDOW) {
            return NOT_REACHED;
        }
        long steady = median(nanos, n / 2, n - n / 2);
        if (firstNanos <= TOLERANCE * steady) {
            return firstNanos / 1e9;
        }
        long before = firstNanos;
        for (int i = 0; i + WINDOW <= n; i++) {
            if (median(nanos, i, WINDOW) <= TOLERANCE * steady) {
                return before / 1e9;
            }
            before += nanos[i];
        }
        return NOT_REACHED;
    }

    private static long median(long[] v, int from, int len) {
        long[] c = Arrays.copyOfRange(v, from, from + len);
        Arrays.sort(c);
        return c[len / 2];
    }
}
