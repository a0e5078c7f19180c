package org.jccl.bootstrap;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The times to error that docs/RELIABILITY.md documents, asserted per rank: each measured time
 * must be at most {@link #FACTOR} times the documented figure (the upper end of a documented
 * range), and a deadline must not fire before the deadline. Every check prints one {@code
 * TIME_TO_ERROR} line (scenario, rank, measured, documented, bound) so that runs can be compared.
 */
public final class TimeToError {
    /** How far above the documented figure a measured time may be (a shared 2-core CI machine). */
    public static final double FACTOR = 3.0;

    private TimeToError() {
    }

    /** Asserts that {@code rank}'s time to error {@code secs} is at most 3x {@code documentedSecs}. */
    public static void assertWithin(String scenario, int rank, double secs, double documentedSecs) {
        double bound = FACTOR * documentedSecs;
        System.out.printf("TIME_TO_ERROR %s: rank %d %.3f s (documented %.3f s, bound %.3f s)%n", scenario, rank, secs,
                documentedSecs, bound);
        assertTrue(secs >= 0, scenario + ": rank " + rank + " measured a negative time, " + secs + " s");
        assertTrue(secs <= bound, String.format("%s: rank %d failed after %.3f s; docs/RELIABILITY.md documents %.3f s, "
                + "asserted at <= %.0fx = %.3f s", scenario, rank, secs, documentedSecs, FACTOR, bound));
    }

    /**
     * A deadline: {@code rank}'s time {@code secs} is at most 3x {@code documentedSecs} (the deadline
     * plus its documented slack) and, measured from the start of the call, never less than {@code
     * deadlineSecs} (a timeout must not fire early).
     */
    public static void assertDeadline(String scenario, int rank, double secs, double deadlineSecs, double documentedSecs) {
        assertWithin(scenario, rank, secs, documentedSecs);
        assertTrue(secs >= deadlineSecs, String.format("%s: rank %d timed out after %.3f s, before its %.3f s deadline",
                scenario, rank, secs, deadlineSecs));
    }
}
