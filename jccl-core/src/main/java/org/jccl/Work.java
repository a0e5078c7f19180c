package org.jccl;

import java.time.Duration;

/**
 * The handle of an asynchronous collective. Completes exactly once, with success or with the
 * failure that {@link #await()} rethrows.
 */
public interface Work {

    /** True once the operation finished, successfully or not. */
    boolean isDone();

    /**
     * Waits until the operation finishes or the communicator's deadline passes, and rethrows
     * its failure.
     *
     * @throws JcclException the failure of the operation, or a {@link CollectiveTimeoutException}
     */
    void await();

    /**
     * Waits at most {@code timeout}; rethrows the failure of the operation.
     *
     * @return true when the operation finished within the timeout, false when it is still pending
     * @throws JcclException the failure of the operation
     */
    boolean await(Duration timeout);

    /** The failure, once done and failed; null while pending or after success. */
    JcclException exception();

    /**
     * Waits at most {@code timeout} and fails when the operation is still pending then: unlike
     * {@link #await(Duration)}, whose false is easy to ignore, the caller cannot go on with an
     * unfilled buffer. The operation itself goes on (its own deadline still applies; a {@link
     * Communicator#withTimeout} view gives one call a shorter deadline that fails the call).
     *
     * @throws CollectiveTimeoutException when the operation is still pending after {@code timeout}
     *                                    (its {@code missingRanks()} is empty: which ranks are late
     *                                    is known at the operation's own deadline)
     * @throws JcclException              the failure of the operation
     * @throws IllegalArgumentException   when {@code timeout} is null, zero or negative
     */
    default void awaitWithin(Duration timeout) {
        Checks.timeout(timeout, "timeout");
        if (!await(timeout)) {
            throw new CollectiveTimeoutException(this + " is still pending after " + timeout + " (awaitWithin): it "
                    + "goes on until it completes or reaches its own deadline; await() waits for that", java.util.List.of());
        }
    }

    /**
     * A future that completes when this operation does, exceptionally with its failure (a {@link
     * JcclException}); a virtual thread waits for it, so use it to compose, not on hot paths.
     */
    default java.util.concurrent.CompletableFuture<Void> toCompletableFuture() {
        java.util.concurrent.CompletableFuture<Void> f = new java.util.concurrent.CompletableFuture<>();
        if (isDone() && exception() == null) {
            f.complete(null);
            return f;
        }
        Thread.ofVirtual().name("jccl-work-future").start(() -> {
            try {
                await();
                f.complete(null);
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }
}
