package org.jccl.cuda;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A symmetric buffer registered with an {@link NcclCommunicator} as an NCCL window
 * ({@code ncclCommWindowRegister} with {@code NCCL_WIN_COLL_SYMMETRIC}), made by
 * {@link NcclCommunicator#register}. While it is open, collectives of that communicator whose
 * buffers all lie in windows (the buffer or slices of it, at the same offsets on every rank) may
 * run NCCL's symmetric kernels.
 *
 * <p>{@link #close()} deregisters it ({@code ncclCommWindowDeregister}, local). Close it on every
 * rank at the same point of the program, after the last collective that uses it; the communicator's
 * {@code close()} deregisters the windows still open.
 */
public final class SymmetricWindow implements AutoCloseable {
    final NcclCommunicator comm;
    final DeviceBuffer buffer;
    /** The ncclWindow_t. */
    final long handle;
    final AtomicBoolean open = new AtomicBoolean(true);

    SymmetricWindow(NcclCommunicator comm, DeviceBuffer buffer, long handle) {
        this.comm = comm;
        this.buffer = buffer;
        this.handle = handle;
    }

    /** The registered buffer (the whole allocation of {@link CudaDevice#allocateSymmetric}). */
    public DeviceBuffer buffer() {
        return buffer;
    }

    /** The communicator the window belongs to. */
    public NcclCommunicator communicator() {
        return comm;
    }

    /** The registered size in bytes (the same on every rank). */
    public long byteSize() {
        return buffer.byteSize();
    }

    /** False once closed, here or by the communicator's close. */
    public boolean isOpen() {
        return open.get();
    }

    /**
     * Deregisters the window: first waits, with the communicator's deadline, for the work queued on
     * the buffer's GPU (no kernel may still reach peers through the window), then
     * {@code ncclCommWindowDeregister}. Idempotent; after the communicator was closed or aborted it
     * only marks the window closed (NCCL's teardown released it). A buffer closed while registered
     * goes back to NCCL here.
     *
     * @throws org.jccl.CollectiveTimeoutException when the GPU still had work after the deadline (the
     *                                             window stays open: close the communicator)
     */
    @Override
    public void close() {
        NcclSymmetric.deregister(this);
    }

    @Override
    public String toString() {
        return "SymmetricWindow[" + buffer.byteSize() + " bytes of " + buffer + " on " + comm.describe()
                + (isOpen() ? "" : ", closed") + "]";
    }
}
