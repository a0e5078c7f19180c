package org.jccl.mpi;

/**
 * Whether the MPI backend can run in this process: libmpi found (JCCL_MPI_LIBRARY, else
 * libmpi.so.40, else libmpi.so), it is Open MPI 4.x or 5.x, and it exports everything jccl binds.
 * Asking loads the library (once) but does not initialise MPI.
 */
public final class Mpi {
    private Mpi() {
    }

    /** True when Open MPI's libmpi is here and usable by jccl. */
    public static boolean isAvailable() {
        return unavailabilityCause() == null;
    }

    /** Why {@link #isAvailable()} is false (what is missing and what to install or set), or null. */
    public static String unavailabilityCause() {
        try {
            return MpiLibrary.UNAVAILABLE;
        } catch (LinkageError e) {
            // The binding itself failed to initialise (e.g. native access denied): say how to fix it.
            return "the MPI binding cannot load: " + e + " (run with --enable-native-access=ALL-UNNAMED, "
                    + "or =org.jccl.mpi on the module path)";
        }
    }

    /** The library's own version text (MPI_Get_library_version), or null when no library was loaded. */
    public static String libraryVersion() {
        try {
            return MpiLibrary.VERSION;
        } catch (LinkageError e) {
            return null;
        }
    }
}
