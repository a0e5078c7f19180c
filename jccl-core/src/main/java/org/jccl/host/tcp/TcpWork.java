package org.jccl.host.tcp;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.Work;

/** Work of the TCP and hierarchical communicators: completed by the communicator's worker thread. */
final class TcpWork implements Work {
    private static final long SPIN_NANOS = 20_000;
    private final CountDownLatch latch = new CountDownLatch(1);
    private final String description;
    private final Duration defaultTimeout;
    final Runnable body;
    final CommunicatorCore.P2p p2p;
    private volatile JcclException failure;

    TcpWork(String description, Duration defaultTimeout, Runnable body, CommunicatorCore.P2p p2p) {
        this.description = description;
        this.defaultTimeout = defaultTimeout;
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
            // Most operations finish within microseconds: poll briefly before parking, which
            // spares the worker a wake-up system call per completed operation.
            long end = System.nanoTime() + Math.min(SPIN_NANOS, timeout.toNanos());
            while (latch.getCount() != 0 && System.nanoTime() - end < 0) {
                Thread.onSpinWait();
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
