package org.jccl.host.engine;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.Work;

/**
 * Work of the host engine (every transport): completed by the communicator's worker thread, or by
 * the thread that awaits it ({@link #await()} runs the works queued up to it when no other thread
 * runs them).
 *
 * <p>A waiter polls first ({@link AsyncWaits}: spinning where the rank has a CPU to spare for it,
 * else yielding and short timed parks) and registers to be woken only when the wait turns long, so
 * that completing a short operation costs the worker no system call.
 */
final class EngineWork implements Work {
    /** The collective's name (null for a send or receive, described by {@link #p2p}); see {@link #description()}. */
    private final String what;
    private final int rank;
    private final Duration defaultTimeout;
    private final AsyncWaits waits;
    /** The deadline of the operation ({@code defaultTimeout} in nanoseconds). */
    final long timeoutNanos;
    final Runnable body;
    final P2p p2p;
    /** Flight recorder handle of a send/recv (set by the worker). */
    long trace = -1;
    /** Written before {@link #done} is set; read after it is seen. */
    private JcclException failure;
    private volatile boolean done;
    /** The thread parked in {@link #await(Duration)} for a long wait, to be woken on completion. */
    private volatile Thread waiter;
    /** Runs the queued works up to this one on the thread that awaits it, when no other thread runs them. */
    private final java.util.function.Consumer<EngineWork> helper;
    /** When it was queued (System.nanoTime), where the worker leaves fresh works to the caller; else 0. */
    long queuedNanos;

    /**
     * A collective {@code what} ({@code body}) or a send or receive ({@code p2p}, {@code what}
     * null) of rank {@code rank}; its description is built only when a message needs it.
     */
    EngineWork(String what, int rank, Duration defaultTimeout, Runnable body, P2p p2p, AsyncWaits waits,
               java.util.function.Consumer<EngineWork> helper) {
        this.what = what;
        this.rank = rank;
        this.defaultTimeout = defaultTimeout;
        this.timeoutNanos = defaultTimeout.toNanos();
        this.body = body;
        this.p2p = p2p;
        this.waits = waits;
        this.helper = helper;
    }

    /** E.g. "allReduce on rank 0", "send to rank 1 (FLOAT32 x 2) on rank 0". */
    String description() {
        if (p2p == null) {
            return what + " on rank " + rank;
        }
        return (p2p.isSend() ? "send to rank " : "recv from rank ") + p2p.peer() + " (" + p2p.buffer().type() + " x "
                + p2p.buffer().count() + ") on rank " + rank;
    }

    void complete() {
        done = true;
        wake();
    }

    void fail(JcclException e) {
        failure = e;
        done = true;
        wake();
    }

    private void wake() {
        Thread t = waiter;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    @Override
    public boolean isDone() {
        return done;
    }

    @Override
    public void await() {
        // With no deadline of its own, the wait may run the works up to this one itself (each has
        // the communicator's deadline); await(Duration) only waits, so that it returns in time.
        if (!done) {
            helper.accept(this);
        }
        if (!await(defaultTimeout.plusSeconds(1))) {
            throw new CollectiveTimeoutException(description() + " did not complete within " + defaultTimeout
                    + " (the communicator's timeout)", List.of());
        }
    }

    @Override
    public boolean await(Duration timeout) {
        if (!done) {
            long start = System.nanoTime();
            long end = start + timeout.toNanos();
            for (int i = 0; !done; i++) {
                long now = System.nanoTime();
                if (now - end >= 0) {
                    return false;
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw new AbortedException("interrupted while waiting for " + description());
                }
                long waited = now - start;
                if (!waits.registersAfter(waited)) {
                    waits.callerIdle(i, waited);
                    continue;
                }
                waiter = Thread.currentThread();
                if (!done) {
                    LockSupport.parkNanos(this, end - now);
                }
                waiter = null;
            }
        }
        JcclException f = failure;
        if (f != null) {
            throw f; // the original type, so callers can catch PeerFailureException etc.
        }
        return true;
    }

    @Override
    public JcclException exception() {
        return done ? failure : null;
    }

    @Override
    public String toString() {
        return "Work[" + description() + (done ? failure == null ? ", done]" : ", failed: " + failure.getMessage() + "]" : ", pending]");
    }
}
