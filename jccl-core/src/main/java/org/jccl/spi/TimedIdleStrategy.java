package org.jccl.spi;

import java.util.concurrent.locks.LockSupport;

/**
 * An {@link IdleStrategy} that measures time from the wait's first poll (iteration 0): {@link
 * Thread#onSpinWait()} for the first {@code spinNanos}, which covers a short operation at the
 * lowest latency; {@link Thread#yield()} until {@code yieldNanos}, so that other threads get the
 * core; then parks of {@code parkNanos}, so that a long wait costs no CPU. It holds the wait's start:
 * one instance per wait (or per thread, reused wait after wait).
 */
public final class TimedIdleStrategy implements IdleStrategy {
    private final long spinNanos;
    private final long yieldNanos;
    private final long parkNanos;
    private long start;

    /**
     * @param spinNanos  spin this long (>= 0)
     * @param yieldNanos then yield until this long after the start (>= {@code spinNanos})
     * @param parkNanos  then park this long per poll (>= 1)
     */
    public TimedIdleStrategy(long spinNanos, long yieldNanos, long parkNanos) {
        if (spinNanos < 0 || yieldNanos < spinNanos || parkNanos < 1) {
            throw new IllegalArgumentException("need 0 <= spinNanos (" + spinNanos + ") <= yieldNanos (" + yieldNanos
                    + ") and parkNanos (" + parkNanos + ") >= 1");
        }
        this.spinNanos = spinNanos;
        this.yieldNanos = yieldNanos;
        this.parkNanos = parkNanos;
        this.start = System.nanoTime();
    }

    @Override
    public void idle(int iteration) {
        long waited = elapsed(iteration);
        if (waited < spinNanos) {
            Thread.onSpinWait();
        } else if (waited < yieldNanos) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(parkNanos);
        }
    }

    /** Idles once in the wait that began when this strategy was made (or at the last {@code idle(0)}). */
    public void idle() {
        idle(1);
    }

    @Override
    public boolean isParking(int iteration) {
        return System.nanoTime() - start >= yieldNanos;
    }

    /** Nanoseconds since this wait's first poll. */
    public long waited() {
        return System.nanoTime() - start;
    }

    private long elapsed(int iteration) {
        long now = System.nanoTime();
        if (iteration == 0) {
            start = now;
        }
        return now - start;
    }

    @Override
    public String toString() {
        return "TimedIdleStrategy[spin " + spinNanos + " ns, yield to " + yieldNanos + " ns, park " + parkNanos + " ns]";
    }
}
