package org.jccl.host;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.Work;
import org.jccl.host.algo.PointToPoint;

/** Work of the host engine: completed by the communicator's worker thread. */
final class HostWork implements Work {
    private final CountDownLatch latch = new CountDownLatch(1);
    private final String description;
    private final Duration defaultTimeout;
    /** The deadline of the operation ({@code defaultTimeout} in nanoseconds). */
    final long timeoutNanos;
    final Runnable body;
    final PointToPoint p2p;
    /** Flight recorder handle of a send/recv (set by the worker). */
    long trace = -1;
    private volatile JcclException failure;

    /** A collective or barrier run by the worker. */
    HostWork(String description, Duration defaultTimeout, Runnable body) {
        this.description = description;
        this.defaultTimeout = defaultTimeout;
        this.timeoutNanos = defaultTimeout.toNanos();
        this.body = body;
        this.p2p = null;
    }

    /** A send/recv progressed by the worker together with its neighbours in the queue. */
    HostWork(String description, Duration defaultTimeout, PointToPoint op) {
        this.description = description;
        this.defaultTimeout = defaultTimeout;
        this.timeoutNanos = defaultTimeout.toNanos();
        this.body = null;
        this.p2p = op;
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

    @Override
    public void await() {
        if (!await(defaultTimeout.plusSeconds(1))) {
            throw new CollectiveTimeoutException(description + " did not complete within " + defaultTimeout
                    + " (the communicator's timeout)", java.util.List.of());
        }
    }

    @Override
    public boolean await(Duration timeout) {
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
            // The original type, so callers can catch PeerFailureException etc.
            throw f;
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
