package org.jccl;

/** A peer rank died, closed its connection or reported a failure. */
public class PeerFailureException extends JcclException {
    private static final long serialVersionUID = 1L;
    private final int rank;

    /** With the failed rank and a message. */
    public PeerFailureException(int rank, String message) {
        super(message);
        this.rank = rank;
    }

    /** With the failed rank, a message and a cause. */
    public PeerFailureException(int rank, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
    }

    /** The rank (in the communicator that failed) that is gone. */
    public int rank() {
        return rank;
    }
}
