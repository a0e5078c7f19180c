package org.jccl;

import java.util.List;

/** A wait passed its deadline. Names the ranks that had not arrived when that is known. */
public class CollectiveTimeoutException extends JcclException {
    private static final long serialVersionUID = 1L;
    private final List<Integer> missingRanks;

    /** With a message and the ranks that did not arrive (may be empty when unknown). */
    public CollectiveTimeoutException(String message, List<Integer> missingRanks) {
        super(message);
        this.missingRanks = List.copyOf(missingRanks);
    }

    /** The ranks that had not arrived; empty when unknown. */
    public List<Integer> missingRanks() {
        return missingRanks;
    }
}
