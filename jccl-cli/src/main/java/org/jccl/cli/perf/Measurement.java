package org.jccl.cli.perf;

/**
 * One timed cell of the table: out-of-place or in-place.
 *
 * @param timeUs time of one collective in microseconds (the largest of the ranks' means)
 * @param algBw  algorithm bandwidth, GB/s
 * @param busBw  bus bandwidth, GB/s
 * @param wrong  wrong elements summed over ranks, or {@link #NOT_CHECKED}
 * @param firstUs time of the first call of this size and placement in microseconds (the largest
 *               of the ranks'), before any other call of it: what a cold library costs; NaN when
 *               not measured (a run written before the field existed)
 * @param toSteadyUs microseconds from the start of the first call until the calls ran at steady
 *               speed ({@link ToSteady}, {@code --to-steady}; the largest of the ranks'), {@link
 *               ToSteady#NOT_REACHED} when the run ended first, NaN when not measured
 */
public record Measurement(double timeUs, double algBw, double busBw, long wrong, double firstUs, double toSteadyUs) {
    /** A cell without a first-call time. */
    public Measurement(double timeUs, double algBw, double busBw, long wrong) {
        this(timeUs, algBw, busBw, wrong, Double.NaN);
    }

    /** A cell without a time to steady state. */
    public Measurement(double timeUs, double algBw, double busBw, long wrong, double firstUs) {
        this(timeUs, algBw, busBw, wrong, firstUs, Double.NaN);
    }

    /** {@link #wrong()} when results were not checked (-c 0, or in-place send/recv). */
    public static final long NOT_CHECKED = -1;

    /** Whether the results were checked. */
    public boolean checked() {
        return wrong != NOT_CHECKED;
    }
}
