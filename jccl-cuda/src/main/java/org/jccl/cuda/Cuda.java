package org.jccl.cuda;

/**
 * Whether the CUDA driver can be used here. Calling these methods loads {@code libcuda.so.1}
 * (through {@code JCCL_CUDA_LIBRARY} when set) and runs cuInit once; nothing else in jccl touches
 * the driver before a GPU is asked for.
 */
public final class Cuda {
    private Cuda() {
    }

    /** True when libcuda.so.1 loaded, every needed symbol is exported and cuInit succeeded. */
    public static boolean isAvailable() {
        return unavailabilityCause() == null;
    }

    /** Why the driver cannot be used, or null when it can. */
    public static String unavailabilityCause() {
        try {
            return CudaDriver.failure();
        } catch (Throwable t) {
            return "the CUDA binding could not initialise: " + t;
        }
    }

    /** The driver's CUDA version, e.g. 13000 for 13.0. */
    public static int driverVersion() {
        CudaDriver.requireAvailable();
        return CudaDriver.driverVersion();
    }

    /** The number of CUDA devices visible to this process (0 when the driver is unavailable). */
    public static int deviceCount() {
        return isAvailable() ? CudaDriver.deviceCount() : 0;
    }

    /** The soname or path libcuda was loaded from, or null. */
    public static String libraryName() {
        try {
            return CudaDriver.loadedName();
        } catch (Throwable t) {
            return null;
        }
    }
}
