package org.jccl.host.engine;

import java.util.concurrent.locks.LockSupport;

/**
 * How a waiting rank spends time: spin with {@link Thread#onSpinWait()} first (lowest latency
 * when every rank has a core), then yield (when ranks outnumber cores), then park with a growing
 * pause up to {@link #MAX_PARK_NANOS} (long waits cost no CPU). No thread per wait; no allocation.
 */
public final class IdleStrategy {
    /** Longest single park. */
    public static final long MAX_PARK_NANOS = 200_000;

    private final int spins;
    private final int yields;

    /**
     * @param spins  iterations of {@code onSpinWait} before yielding
     * @param yields iterations of {@code Thread.yield} before parking
     */
    public IdleStrategy(int spins, int yields) {
        if (spins < 0 || yields < 0) {
            throw new IllegalArgumentException("spins and yields must be >= 0");
        }
        this.spins = spins;
        this.yields = yields;
    }

    /** Spins long when the ranks fit the cores, else yields early. */
    public static IdleStrategy forRanks(int localRanks) {
        int cores = Runtime.getRuntime().availableProcessors();
        return localRanks <= cores ? new IdleStrategy(20_000, 1_000) : new IdleStrategy(50, 2_000);
    }

    /**
     * Idles once; {@code iteration} counts the failed checks of this wait (0 for the first).
     */
    public void idle(int iteration) {
        if (iteration < spins) {
            Thread.onSpinWait();
        } else if (iteration < spins + yields) {
            Thread.yield();
        } else {
            int over = iteration - spins - yields;
            long nanos = Math.min(MAX_PARK_NANOS, 1_000L << Math.min(over, 8));
            LockSupport.parkNanos(nanos);
        }
    }

    /** True when {@code iteration} is in the parking phase (cheap health checks are due). */
    public boolean isParking(int iteration) {
        return iteration >= spins + yields;
    }
}
