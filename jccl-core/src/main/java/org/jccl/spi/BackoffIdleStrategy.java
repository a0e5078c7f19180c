package org.jccl.spi;

import java.util.concurrent.locks.LockSupport;

/**
 * An {@link IdleStrategy} that counts polls: {@code spins} polls with {@link Thread#onSpinWait()}
 * (lowest latency while every waiting thread has a core), then {@code yields} with {@link
 * Thread#yield()} (threads outnumber cores), then parks for {@code minParkNanos}, doubling up to
 * {@code maxParkNanos} (a long wait costs no CPU). Immutable: one instance serves every wait and
 * every thread. No allocation.
 */
public final class BackoffIdleStrategy implements IdleStrategy {
    private final int spins;
    private final int yields;
    private final long minParkNanos;
    private final long maxParkNanos;

    /**
     * @param spins        polls with {@code onSpinWait} before yielding (>= 0)
     * @param yields       polls with {@code yield} before parking (>= 0)
     * @param minParkNanos the first park (>= 1)
     * @param maxParkNanos the longest park (>= {@code minParkNanos})
     */
    public BackoffIdleStrategy(int spins, int yields, long minParkNanos, long maxParkNanos) {
        if (spins < 0 || yields < 0) {
            throw new IllegalArgumentException("spins (" + spins + ") and yields (" + yields + ") must be >= 0");
        }
        if (minParkNanos < 1 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("parks must satisfy 1 <= minParkNanos (" + minParkNanos
                    + ") <= maxParkNanos (" + maxParkNanos + ")");
        }
        this.spins = spins;
        this.yields = yields;
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
    }

    /**
     * The host engine's waits for {@code localRanks} ranks on this machine: spin long when the
     * ranks fit the cores, else yield early; parks of 1 to 200 us.
     */
    public static BackoffIdleStrategy forRanks(int localRanks) {
        int cores = org.jccl.internal.Affinity.cpus();
        return localRanks <= cores ? new BackoffIdleStrategy(20_000, 1_000, 1_000, 200_000)
                : new BackoffIdleStrategy(50, 2_000, 1_000, 200_000);
    }

    @Override
    public void idle(int iteration) {
        if (iteration < spins) {
            Thread.onSpinWait();
        } else if (iteration < spins + yields) {
            Thread.yield();
        } else {
            int over = Math.min(iteration - spins - yields, Long.numberOfLeadingZeros(minParkNanos) - 1);
            long nanos = minParkNanos << over; // doubles per poll, without overflow
            LockSupport.parkNanos(Math.min(nanos, maxParkNanos));
        }
    }

    @Override
    public boolean isParking(int iteration) {
        return iteration >= spins + yields;
    }

    @Override
    public String toString() {
        return "BackoffIdleStrategy[spins=" + spins + ", yields=" + yields + ", park=" + minParkNanos + ".." + maxParkNanos
                + " ns]";
    }
}
