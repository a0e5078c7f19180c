package org.jccl.host.engine;

import java.util.concurrent.locks.LockSupport;

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
 * There, too, the worker leaves fresh works to the caller for a while: a caller that awaits a work
 * runs the works up to it itself, and the worker runs them only for a caller busy elsewhere.
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
    /** ... and parks after this long. */
    private static final long WORKER_YIELD_NANOS = 1_000_000;
    /**
     * A worker on one CPU leaves a queued work this long to the caller, who runs it when it awaits
     * it (EngineWork#await): the worker runs it only for a caller busy elsewhere meanwhile. Its
     * timed parks are as long: with 4 ranks on 2 cores, 1 ms parks (each wake-up preempting a rank
     * in a collective) made small async all-reduces 2-3x slower than 10 ms ones (docs/BENCHMARKS.md).
     */
    static final long SHARED_DEFER_NANOS = 10_000_000;
    /** ... and on an empty queue parks that long at a time, without being woken, for this long; then until woken. */
    private static final long SHARED_WORKER_LINGER_NANOS = 50_000_000;

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

    /** Whether this rank's threads have a CPU to spare (else they share one). */
    boolean spare() {
        return spare;
    }

    /** Whether a worker whose queue has been empty for {@code idleNanos} parks until an enqueue wakes it. */
    boolean workerParksAfter(long idleNanos) {
        return idleNanos >= (spare ? WORKER_YIELD_NANOS : SHARED_WORKER_LINGER_NANOS);
    }

    /**
     * One poll of a worker's empty queue. On one CPU a timed park that no enqueue interrupts: the
     * caller runs what it queues when it awaits it, and the worker looks again after {@value
     * #SHARED_DEFER_NANOS} ns, for works left to it.
     */
    void workerIdle(long idleNanos) {
        if (!spare) {
            LockSupport.parkNanos(SHARED_DEFER_NANOS);
        } else if (idleNanos < WORKER_SPIN_NANOS) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    /**
     * How long the worker leaves the queued works to the caller before running them, the last
     * one queued {@code ageNanos} ago: 0 with a CPU to spare (at once: the worker has a CPU of
     * its own), else what remains of {@value #SHARED_DEFER_NANOS} ns.
     */
    long workerDefers(long ageNanos) {
        return spare ? 0 : Math.max(0, SHARED_DEFER_NANOS - ageNanos);
    }

    /** One poll of a worker whose queue another thread is running ({@code EngineWork#await}). */
    void workerWaitsForHelper() {
        if (spare) {
            Thread.onSpinWait();
        } else {
            LockSupport.parkNanos(SHARED_DEFER_NANOS);
        }
    }

    @Override
    public String toString() {
        return spare ? "AsyncWaits[spin, yield, park]" : "AsyncWaits[one CPU: yield, park]";
    }
}
