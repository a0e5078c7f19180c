package org.jccl.host.engine;

/**
 * How the two threads of a rank's async calls wait for each other: the caller in {@code
 * Work.await} for its work, the worker for the next work on an empty queue. Both poll first and
 * park, registered to be woken, only once the wait is long: a stream of small async calls then
 * never pays a wake-up (a system call, and on a VM an interrupt to a halted CPU) per call.
 *
 * <p>With a CPU to spare, that is a rank whose threads may use two or more CPUs, each thread spins
 * while the other is expected back within microseconds, then yields. On a single CPU the two share
 * it: the caller yields, then parks in short timed pauses without registering, so that the worker
 * finishing a work never has to wake it (a woken caller would preempt the worker it waits for).
 */
final class AsyncWaits {
    /** A caller with a CPU to spare spins this long for its work, then yields. */
    private static final long CALLER_SPIN_NANOS = 50_000;
    /** ... and registers and parks after this long. */
    private static final long CALLER_YIELD_NANOS = 200_000;
    /** A caller on one CPU: 20 yields, then parks from 1 us doubling to 50 us... */
    private static final org.jccl.spi.IdleStrategy SHARED_CALLER = new org.jccl.spi.BackoffIdleStrategy(0, 20, 1_000, 50_000);
    /** ... and registers and parks after this long. */
    private static final long SHARED_REGISTER_NANOS = 1_000_000;
    /** A worker with a CPU to spare spins this long on an empty queue, then yields. */
    private static final long WORKER_SPIN_NANOS = 50_000;
    /** ... and parks after this long (with one CPU: yields only, as long). */
    private static final long WORKER_YIELD_NANOS = 1_000_000;
    private static final long SHARED_WORKER_YIELD_NANOS = 20_000;

    private final boolean spare;

    private AsyncWaits(boolean spare) {
        this.spare = spare;
    }

    /**
     * The waits of a rank whose threads run where the calling thread may (a pinned rank's worker
     * inherits its caller's CPUs), with {@code localRanks} ranks on this host: a CPU to spare when
     * the thread may use two or more and the machine has two per local rank (ranks that outnumber
     * the CPUs are not pinned, and their threads must not spin).
     */
    static AsyncWaits ofCallingThread(int localRanks) {
        int mine = Runtime.getRuntime().availableProcessors();
        return new AsyncWaits(mine >= 2 && org.jccl.internal.Affinity.cpus() >= 2L * Math.max(1, localRanks));
    }

    /** Whether a caller that waited {@code waitedNanos} registers and parks until woken. */
    boolean registersAfter(long waitedNanos) {
        return waitedNanos >= (spare ? CALLER_YIELD_NANOS : SHARED_REGISTER_NANOS);
    }

    /** One poll of a caller's short wait ({@code iteration} counts the polls of this wait). */
    void callerIdle(int iteration, long waitedNanos) {
        if (spare) {
            if (waitedNanos < CALLER_SPIN_NANOS) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        } else {
            SHARED_CALLER.idle(iteration);
        }
    }

    /** Whether a worker whose queue has been empty for {@code idleNanos} parks until an enqueue wakes it. */
    boolean workerParksAfter(long idleNanos) {
        return idleNanos >= (spare ? WORKER_YIELD_NANOS : SHARED_WORKER_YIELD_NANOS);
    }

    /** One poll of a worker's empty queue. */
    void workerIdle(long idleNanos) {
        if (spare && idleNanos < WORKER_SPIN_NANOS) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    @Override
    public String toString() {
        return spare ? "AsyncWaits[spin, yield, park]" : "AsyncWaits[one CPU: yield, park]";
    }
}
