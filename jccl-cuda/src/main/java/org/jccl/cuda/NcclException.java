package org.jccl.cuda;

import org.jccl.JcclException;

/** An NCCL call or an NCCL communicator failed. Carries the ncclResult_t and NCCL's own error text. */
public final class NcclException extends JcclException {
    private static final long serialVersionUID = 1L;
    private final int result;

    /** With the failing call, the ncclResult_t, its description and ncclGetLastError's text. */
    public NcclException(String call, int result, String description, String lastError) {
        super(call + " failed: " + NcclLibrary.resultName(result) + " (" + description + ")"
                + (lastError == null || lastError.isBlank() ? "" : ": " + lastError.strip()));
        this.result = result;
    }

    /** The ncclResult_t value (e.g. 6 for ncclRemoteError). */
    public int result() {
        return result;
    }
}
