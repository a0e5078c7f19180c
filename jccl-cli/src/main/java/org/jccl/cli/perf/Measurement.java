package org.jccl.cli.perf;

/**
 * One timed cell of the table: out-of-place or in-place.
 *
 * @param timeUs time of one collective in microseconds (the largest of the ranks' means)
 * @param algBw  algorithm bandwidth, GB/s
 * @param busBw  bus bandwidth, GB/s
 * @param wrong  wrong elements summed over ranks, or {@link #NOT_CHECKED}
 */
public record Measurement(double timeUs, double algBw, double busBw, long wrong) {
    /** {@link #wrong()} when results were not checked (-c 0, or in-place send/recv). */
    public static final long NOT_CHECKED = -1;

    /** Whether the results were checked. */
    public boolean checked() {
        return wrong != NOT_CHECKED;
    }
}
