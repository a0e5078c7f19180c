package org.jccl;

/** The API was used in a way that can never work (closed communicator, wrong thread, ...). */
public class InvalidUsageException extends JcclException {
    private static final long serialVersionUID = 1L;

    /** With a message that says what to do instead. */
    public InvalidUsageException(String message) {
        super(message);
    }
}
