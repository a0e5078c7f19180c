package org.jccl;

/** Ranks called different collectives (op, type, count or root differ) at the same step. */
public class CollectiveMismatchException extends JcclException {
    private static final long serialVersionUID = 1L;

    /** With a message that shows what each side called. */
    public CollectiveMismatchException(String message) {
        super(message);
    }
}
