package org.jccl.cuda;

/**
 * Whether NCCL can be used here, and which one. The library is looked for through
 * {@code JCCL_NCCL_LIBRARY}, the system search path, then known install places such as a Python
 * environment's {@code nvidia/nccl/lib}; versions older than 2.19 are refused.
 */
public final class Nccl {
    private Nccl() {
    }

    /** True when libnccl.so.2 (2.19 or newer) loaded and the CUDA driver is usable. */
    public static boolean isAvailable() {
        return unavailabilityCause() == null;
    }

    /** Why NCCL cannot be used, or null when it can. */
    public static String unavailabilityCause() {
        String cuda = Cuda.unavailabilityCause();
        if (cuda != null) {
            return "no CUDA driver: " + cuda;
        }
        try {
            return NcclLibrary.FAILURE;
        } catch (Throwable t) {
            return "the NCCL binding could not initialise: " + t;
        }
    }

    /** NCCL_VERSION_CODE of the loaded library (e.g. 22803 for 2.28.3), or 0 when none loaded. */
    public static int version() {
        try {
            return NcclLibrary.VERSION;
        } catch (Throwable t) {
            return 0;
        }
    }

    /** The version as "major.minor.patch", or "unknown". */
    public static String versionString() {
        return NcclLibrary.versionString(version());
    }

    /** The file libnccl.so.2 was loaded from, or null when none loaded. */
    public static String libraryPath() {
        try {
            return NcclLibrary.PATH;
        } catch (Throwable t) {
            return null;
        }
    }

    /** Whether this NCCL has native AlltoAll, Gather and Scatter (2.28 and newer). */
    public static boolean hasNativeAllToAll() {
        return isAvailable() && NcclLibrary.ncclAlltoAll != null && NcclLibrary.ncclGather != null
                && NcclLibrary.ncclScatter != null && version() >= 22800;
    }

    /** Whether this NCCL has ncclCommShrink (2.27 and newer). */
    public static boolean hasShrink() {
        return isAvailable() && NcclLibrary.ncclCommShrink != null && version() >= 22700;
    }

    /**
     * Whether NCCL symmetric memory can be used: {@link CudaDevice#allocateSymmetric} (ncclMemAlloc)
     * and {@link NcclCommunicator#register} (ncclCommWindowRegister, NCCL 2.27 and newer).
     */
    public static boolean hasSymmetricMemory() {
        return symmetricMemoryUnavailableCause() == null;
    }

    /**
     * Why NCCL symmetric memory cannot be used here, or null when it can. A null answer says that the
     * library has the calls; whether NCCL's symmetric kernels then run is NCCL's decision per
     * communicator (every rank's GPU reached from every other over NVLink) and per call (type,
     * operator, size): see {@link NcclCommunicator#register}.
     */
    public static String symmetricMemoryUnavailableCause() {
        String why = unavailabilityCause();
        if (why != null) {
            return why;
        }
        if (version() < NcclLibrary.WINDOW_VERSION || NcclLibrary.ncclCommWindowRegister == null
                || NcclLibrary.ncclCommWindowDeregister == null) {
            return "NCCL " + versionString() + " at " + libraryPath() + " has no ncclCommWindowRegister: symmetric "
                    + "memory needs NCCL 2.27 or newer (point JCCL_NCCL_LIBRARY at one)";
        }
        if (NcclLibrary.ncclMemAlloc == null || NcclLibrary.ncclMemFree == null) {
            return "NCCL " + versionString() + " at " + libraryPath() + " exports no ncclMemAlloc/ncclMemFree";
        }
        return null;
    }

    /** A new ncclUniqueId (128 bytes) for {@link NcclCommunicator#create}; rank 0 makes it, all ranks use it. */
    public static byte[] newUniqueId() {
        requireAvailable();
        return NcclLibrary.uniqueId();
    }

    static void requireAvailable() {
        String why = unavailabilityCause();
        if (why != null) {
            throw new org.jccl.JcclException("NCCL is not usable here: " + why
                    + " (set JCCL_NCCL_LIBRARY to the path of libnccl.so.2 to choose one)");
        }
    }
}
