package org.jccl;

/**
 * Base of every failure jccl reports. Subclasses tell the causes apart: {@link
 * CollectiveTimeoutException}, {@link PeerFailureException}, {@link CollectiveMismatchException},
 * {@link AbortedException} and {@link InvalidUsageException}.
 */
public class JcclException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** With a message. */
    public JcclException(String message) {
        super(message);
    }

    /** With a message and a cause. */
    public JcclException(String message, Throwable cause) {
        super(message, cause);
    }
}
