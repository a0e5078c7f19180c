package org.jccl;

/** The communicator was aborted (locally or by a peer) while this operation was pending. */
public class AbortedException extends JcclException {
    private static final long serialVersionUID = 1L;

    /** With a message. */
    public AbortedException(String message) {
        super(message);
    }
}
