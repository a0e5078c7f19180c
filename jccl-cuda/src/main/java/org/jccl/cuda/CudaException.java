package org.jccl.cuda;

import org.jccl.JcclException;

/** A CUDA driver call failed. Carries the CUresult, its name and its description. */
public final class CudaException extends JcclException {
    private static final long serialVersionUID = 1L;
    private final int code;
    private final String errorName;

    /** With the failing call, the CUresult, its name and its description. */
    public CudaException(String call, int code, String errorName, String description) {
        super(call + " failed: " + errorName + " (" + code + "): " + description);
        this.code = code;
        this.errorName = errorName;
    }

    /** The CUresult value. */
    public int code() {
        return code;
    }

    /** The CUresult name, e.g. CUDA_ERROR_OUT_OF_MEMORY. */
    public String errorName() {
        return errorName;
    }
}
