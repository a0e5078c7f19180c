package org.jccl.host.engine;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.Work;

/** Work of the host engine (every transport): completed by the communicator's worker thread. */
final class EngineWork implements Work {
    private final CountDownLatch latch = new CountDownLatch(1);
    private final String description;
    private final Duration defaultTimeout;
    /** The deadline of the operation ({@code defaultTimeout} in nanoseconds). */
    final long timeoutNanos;
    final Runnable body;
    final P2p p2p;
    /** Flight recorder handle of a send/recv (set by the worker). */
    long trace = -1;
    private volatile JcclException failure;

    EngineWork(String description, Duration defaultTimeout, Runnable body, P2p p2p) {
        this.description = description;
        this.defaultTimeout = defaultTimeout;
        this.timeoutNanos = defaultTimeout.toNanos();
        this.body = body;
        this.p2p = p2p;
    }

    void complete() {
        latch.countDown();
    }

    void fail(JcclException e) {
        failure = e;
        latch.countDown();
    }

    @Override
    public boolean isDone() {
        return latch.getCount() == 0;
    }

    /** A waiter's idling: 20 yields, then parks from 1 us doubling to 50 us. */
    private static final org.jccl.spi.IdleStrategy AWAIT = new org.jccl.spi.BackoffIdleStrategy(0, 20, 1_000, 50_000);

    @Override
    public void await() {
        if (!await(defaultTimeout.plusSeconds(1))) {
            throw new CollectiveTimeoutException(description + " did not complete within " + defaultTimeout
                    + " (the communicator's timeout)", List.of());
        }
    }

    @Override
    public boolean await(Duration timeout) {
        if (latch.getCount() != 0) {
            // Wait without registering as a waiter: a few yields, then parks of growing length (1 us
            // to 50 us). The worker's countDown then never has a thread to wake, so completing an
            // operation costs it no system call and no context switch on the caller's behalf; on
            // a machine with few cores that keeps a stream of async calls as fast as blocking ones.
            long end = System.nanoTime() + timeout.toNanos();
            for (int i = 0; latch.getCount() != 0 && !Thread.currentThread().isInterrupted(); i++) {
                if (AWAIT.isParking(i) && System.nanoTime() - end > 0) {
                    return false;
                }
                AWAIT.idle(i);
            }
        }
        try {
            if (!latch.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                return false;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AbortedException("interrupted while waiting for " + description);
        }
        JcclException f = failure;
        if (f != null) {
            throw f; // the original type, so callers can catch PeerFailureException etc.
        }
        return true;
    }

    @Override
    public JcclException exception() {
        return isDone() ? failure : null;
    }

    @Override
    public String toString() {
        return "Work[" + description + (isDone() ? failure == null ? ", done]" : ", failed: " + failure.getMessage() + "]" : ", pending]");
    }
}
