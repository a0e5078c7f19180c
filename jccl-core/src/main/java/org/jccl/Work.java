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
}
