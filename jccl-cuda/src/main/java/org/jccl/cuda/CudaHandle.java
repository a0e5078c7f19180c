package org.jccl.cuda;

/**
 * What a {@link CudaEvent} and a {@link CudaStream} hold the same way: the raw driver handle, the
 * device it belongs to, whether jccl destroys it, and whether it was closed.
 */
abstract sealed class CudaHandle permits CudaEvent, CudaStream {
    final CudaDevice device;
    final long handle;
    /** Whether {@code close()} destroys the handle (not for a pooled event or a wrapped stream). */
    final boolean owned;

    CudaHandle(CudaDevice device, long handle, boolean owned) {
        this.device = device;
        this.handle = handle;
        this.owned = owned;
    }

    private volatile boolean closed;

    /** Marks this closed: true for the call that did, false when it already was (close is idempotent). */
    final boolean markClosed() {
        if (closed) {
            return false;
        }
        closed = true;
        return true;
    }

    /** The handle while open; closed, throws "{@code what} 0x... is closed" followed by {@code advice}. */
    final long openHandle(String what, String advice) {
        if (closed) {
            throw new IllegalStateException(what + " " + hex() + " is closed" + advice);
        }
        return handle;
    }

    /** The device of an event, or of a stream jccl created; null for a wrapped stream. */
    public CudaDevice device() {
        return device;
    }

    /** The handle as {@code 0x...}, for messages. */
    final String hex() {
        return "0x" + Long.toHexString(handle);
    }
}
