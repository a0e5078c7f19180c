package org.jccl;

/**
 * A compute device a communicator can be bound to (a GPU). Backends that drive devices provide
 * implementations, e.g. {@code org.jccl.cuda.CudaDevice}.
 */
public interface Device {
    /** Backend-specific ordinal of the device on this host. */
    int ordinal();

    /** The backend that drives this kind of device, e.g. "nccl". */
    String backend();
}
