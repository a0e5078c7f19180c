package org.jccl.spi;

/**
 * How a thread that polls for progress spends the time between two polls. Every wait of jccl goes
 * through one, on every backend: the host engine's transports, its async works, the MPI backend's
 * tests and the CUDA/NCCL backend's event and stream queries (the caller keeps its own deadline
 * and checks; the strategy only decides how to pass the time).
 *
 * <p>Two implementations cover the waits: {@link BackoffIdleStrategy} counts polls (spin, yield,
 * then park with a growing pause; immutable, shared), {@link TimedIdleStrategy} measures time
 * (spin for a while, yield for a while, then park; one per wait).
 */
public interface IdleStrategy {
    /**
     * Idles once. {@code iteration} counts the polls of this wait that found no progress, 0 for the
     * first: a new wait starts at 0, so that an implementation that measures time starts its clock.
     */
    void idle(int iteration);

    /**
     * Whether {@code idle(iteration)} parks the thread (the wait is long): the cue for a waiter's
     * costlier checks (peer health, deadlines), which would slow the short waits.
     */
    boolean isParking(int iteration);
}
