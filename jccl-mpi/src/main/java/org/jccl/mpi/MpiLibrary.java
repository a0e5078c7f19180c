package org.jccl.mpi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The binding of libmpi: one static final downcall handle per MPI function jccl calls and the
 * addresses of Open MPI's predefined handles. Loaded when this class is first used (never by
 * merely having jccl-mpi on the class path): {@link Mpi#isAvailable()} does that safely.
 *
 * <h2>Where the library comes from</h2>
 * {@code JCCL_MPI_LIBRARY} (a path or a file name the dynamic linker finds), else
 * {@code libmpi.so.40} (Open MPI 4.x and 5.x), else {@code libmpi.so}. The library is opened
 * with {@code RTLD_GLOBAL} first, as Open MPI's plugins ({@code mca_*.so}) resolve their
 * symbols against the already loaded libmpi / libopen-pal.
 *
 * <h2>ABI</h2>
 * In Open MPI's ABI the handles ({@code MPI_Comm}, {@code MPI_Datatype}, {@code MPI_Op},
 * {@code MPI_Request}, {@code MPI_Errhandler}) are pointers, and the predefined ones
 * ({@code MPI_COMM_WORLD}, {@code MPI_FLOAT}, {@code MPI_SUM}, ...) are the addresses of
 * exported globals ({@code ompi_mpi_comm_world}, {@code ompi_mpi_float}, {@code ompi_mpi_op_sum},
 * ...). {@code MPI_IN_PLACE} is {@code (void *) 1}, {@code MPI_STATUS_IGNORE} is NULL and
 * {@code MPI_Status} is {@code {int MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled; size_t _ucount}}
 * (24 bytes; mpi.h of 4.1 and 5.0). Other implementations (MPICH and its derivatives use integer
 * handles) are detected by {@code MPI_Get_library_version} and refused.
 */
@SuppressWarnings("restricted") // binding a native library is what this class is for
final class MpiLibrary {
    private MpiLibrary() {
    }

    /** MPI_SUCCESS. */
    static final int SUCCESS = 0;
    /** MPI_UNDEFINED (the color of MPI_Comm_split that joins no communicator). */
    static final int UNDEFINED = -32766;
    /** MPI_THREAD_SINGLE .. MPI_THREAD_MULTIPLE. */
    static final int THREAD_SINGLE = 0, THREAD_FUNNELED = 1, THREAD_SERIALIZED = 2, THREAD_MULTIPLE = 3;
    /** MPI_MAX_ERROR_STRING and MPI_MAX_LIBRARY_VERSION_STRING of Open MPI (256 both). */
    static final int MAX_STRING = 256;
    /** Bytes of MPI_Status in Open MPI. */
    static final int STATUS_BYTES = 24;
    /** MPI_IN_PLACE. */
    static final MemorySegment IN_PLACE = MemorySegment.ofAddress(1);

    private static final Linker LINKER = Linker.nativeLinker();
    private static final List<String> MISSING = new ArrayList<>();
    private static final String[] LOADED = new String[1];
    private static final String OPEN_ERROR;
    private static final SymbolLookup LIB;

    static {
        SymbolLookup lib = null;
        String error = null;
        try {
            lib = open();
        } catch (RuntimeException | LinkageError e) {
            error = e.getMessage();
        }
        LIB = lib;
        OPEN_ERROR = error;
    }

    // ---- functions (null when the library is missing) ----
    private static final MethodHandle GET_LIBRARY_VERSION = fn("MPI_Get_library_version", ADDRESS, ADDRESS);
    private static final MethodHandle INITIALIZED = fn("MPI_Initialized", ADDRESS);
    private static final MethodHandle FINALIZED = fn("MPI_Finalized", ADDRESS);
    private static final MethodHandle INIT_THREAD = fn("MPI_Init_thread", ADDRESS, ADDRESS, JAVA_INT, ADDRESS);
    private static final MethodHandle FINALIZE = fn("MPI_Finalize");
    private static final MethodHandle QUERY_THREAD = fn("MPI_Query_thread", ADDRESS);
    private static final MethodHandle ABORT = fn("MPI_Abort", ADDRESS, JAVA_INT);
    private static final MethodHandle ERROR_STRING = fn("MPI_Error_string", JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle COMM_RANK = fn("MPI_Comm_rank", ADDRESS, ADDRESS);
    private static final MethodHandle COMM_SIZE = fn("MPI_Comm_size", ADDRESS, ADDRESS);
    private static final MethodHandle COMM_IDUP = fn("MPI_Comm_idup", ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle COMM_SPLIT = fn("MPI_Comm_split", ADDRESS, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle COMM_FREE = fn("MPI_Comm_free", ADDRESS);
    private static final MethodHandle COMM_SET_ERRHANDLER = fn("MPI_Comm_set_errhandler", ADDRESS, ADDRESS);
    private static final MethodHandle TYPE_CONTIGUOUS = fn("MPI_Type_contiguous", JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle TYPE_COMMIT = fn("MPI_Type_commit", ADDRESS);
    private static final MethodHandle OP_CREATE = fn("MPI_Op_create", ADDRESS, JAVA_INT, ADDRESS);
    private static final MethodHandle TEST = fn("MPI_Test", ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle GET_COUNT = fn("MPI_Get_count", ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle IALLREDUCE = fn("MPI_Iallreduce", ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
            ADDRESS, ADDRESS);
    private static final MethodHandle IBCAST = fn("MPI_Ibcast", ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle IREDUCE = fn("MPI_Ireduce", ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
            JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle IALLGATHER = fn("MPI_Iallgather", ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
            ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle IREDUCE_SCATTER_BLOCK = fn("MPI_Ireduce_scatter_block", ADDRESS, ADDRESS,
            JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle IALLTOALL = fn("MPI_Ialltoall", ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
            ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle IGATHER = fn("MPI_Igather", ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
            ADDRESS, JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle ISCATTER = fn("MPI_Iscatter", ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
            ADDRESS, JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle ISEND = fn("MPI_Isend", ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS,
            ADDRESS);
    private static final MethodHandle IRECV = fn("MPI_Irecv", ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS,
            ADDRESS);
    private static final MethodHandle IBARRIER = fn("MPI_Ibarrier", ADDRESS, ADDRESS);
    // Blocking forms, for JCCL_MPI_BLOCKING=native.
    private static final MethodHandle ALLREDUCE = fn("MPI_Allreduce", ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
            ADDRESS);
    private static final MethodHandle BCAST = fn("MPI_Bcast", ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
    private static final MethodHandle REDUCE = fn("MPI_Reduce", ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS,
            JAVA_INT, ADDRESS);
    private static final MethodHandle ALLGATHER = fn("MPI_Allgather", ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
            ADDRESS, ADDRESS);
    private static final MethodHandle REDUCE_SCATTER_BLOCK = fn("MPI_Reduce_scatter_block", ADDRESS, ADDRESS,
            JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle ALLTOALL = fn("MPI_Alltoall", ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
            ADDRESS, ADDRESS);
    private static final MethodHandle GATHER = fn("MPI_Gather", ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
            ADDRESS, JAVA_INT, ADDRESS);
    private static final MethodHandle SCATTER = fn("MPI_Scatter", ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT,
            ADDRESS, JAVA_INT, ADDRESS);
    private static final MethodHandle SEND = fn("MPI_Send", ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle RECV = fn("MPI_Recv", ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS,
            ADDRESS);
    private static final MethodHandle BARRIER = fn("MPI_Barrier", ADDRESS);

    // ---- predefined handles (NULL when the library is missing) ----
    static final MemorySegment COMM_WORLD = global("ompi_mpi_comm_world");
    static final MemorySegment COMM_NULL = global("ompi_mpi_comm_null");
    static final MemorySegment ERRORS_RETURN = global("ompi_mpi_errors_return");
    static final MemorySegment BYTE = global("ompi_mpi_byte");
    static final MemorySegment INT8_T = global("ompi_mpi_int8_t");
    static final MemorySegment UINT8_T = global("ompi_mpi_uint8_t");
    static final MemorySegment INT32_T = global("ompi_mpi_int32_t");
    static final MemorySegment UINT32_T = global("ompi_mpi_uint32_t");
    static final MemorySegment INT64_T = global("ompi_mpi_int64_t");
    static final MemorySegment UINT64_T = global("ompi_mpi_uint64_t");
    static final MemorySegment FLOAT = global("ompi_mpi_float");
    static final MemorySegment DOUBLE = global("ompi_mpi_double");
    static final MemorySegment OP_SUM = global("ompi_mpi_op_sum");
    static final MemorySegment OP_PROD = global("ompi_mpi_op_prod");
    static final MemorySegment OP_MIN = global("ompi_mpi_op_min");
    static final MemorySegment OP_MAX = global("ompi_mpi_op_max");
    static final MemorySegment OP_BAND = global("ompi_mpi_op_band");
    static final MemorySegment OP_BOR = global("ompi_mpi_op_bor");
    static final MemorySegment OP_BXOR = global("ompi_mpi_op_bxor");

    /** The library's own description (MPI_Get_library_version), or null when it could not be read. */
    static final String VERSION = readVersion();
    /** Why the library cannot be used, or null when it can. */
    static final String UNAVAILABLE = check();

    // ------------------------------------------------------------------ loading

    private static SymbolLookup open() {
        String env = org.jccl.internal.Settings.get("JCCL_MPI_LIBRARY");
        List<String> names = env != null && !env.isBlank() ? List.of(env.trim()) : List.of("libmpi.so.40", "libmpi.so");
        StringBuilder tried = new StringBuilder();
        for (String name : names) {
            String err = dlopenGlobal(name);
            if (err == null) {
                LOADED[0] = name;
                return SymbolLookup.libraryLookup(name, Arena.global());
            }
            tried.append(tried.isEmpty() ? "" : "; ").append(err);
        }
        if (env != null && !env.isBlank()) {
            throw new IllegalStateException("JCCL_MPI_LIBRARY=" + env + " cannot be loaded (" + tried
                    + "): point it at Open MPI's libmpi.so.40, e.g. /usr/lib/x86_64-linux-gnu/libmpi.so.40");
        }
        throw new IllegalStateException("no MPI library found (" + tried + "): install Open MPI "
                + "(Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev) or set JCCL_MPI_LIBRARY to its libmpi.so.40");
    }

    /** dlopen(name, RTLD_NOW | RTLD_GLOBAL); null on success, else dlerror()'s text. */
    private static String dlopenGlobal(String name) {
        SymbolLookup libc = LINKER.defaultLookup();
        MemorySegment dlopen = libc.find("dlopen").orElse(null);
        MemorySegment dlerror = libc.find("dlerror").orElse(null);
        if (dlopen == null) {
            // Not glibc 2.34+: the JDK's own loading (RTLD_LOCAL) is the best we can do.
            try {
                SymbolLookup.libraryLookup(name, Arena.global());
                return null;
            } catch (IllegalArgumentException e) {
                return name + ": " + e.getMessage();
            }
        }
        try (Arena a = Arena.ofConfined()) {
            MethodHandle open = LINKER.downcallHandle(dlopen, FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
            MemorySegment h = (MemorySegment) open.invokeExact(a.allocateFrom(name), 2 | 0x100);
            if (!h.equals(MemorySegment.NULL)) {
                return null;
            }
            if (dlerror != null) {
                MethodHandle err = LINKER.downcallHandle(dlerror, FunctionDescriptor.of(ADDRESS));
                MemorySegment msg = (MemorySegment) err.invokeExact();
                if (!msg.equals(MemorySegment.NULL)) {
                    return msg.reinterpret(4096).getString(0);
                }
            }
            return name + ": dlopen failed";
        } catch (Throwable t) {
            return name + ": " + t;
        }
    }

    /** The downcall handle of {@code int name(args)}, or null when the library or the symbol is missing. */
    private static MethodHandle fn(String name, ValueLayout... args) {
        MemorySegment addr = global(name);
        return addr.equals(MemorySegment.NULL) ? null : LINKER.downcallHandle(addr, FunctionDescriptor.of(JAVA_INT, args));
    }

    /** The address of the exported symbol {@code name}, or NULL when the library or the symbol is missing. */
    private static MemorySegment global(String name) {
        if (LIB == null) {
            return MemorySegment.NULL;
        }
        MemorySegment addr = LIB.find(name).orElse(null);
        if (addr == null) {
            MISSING.add(name);
            return MemorySegment.NULL;
        }
        return addr;
    }

    private static String readVersion() {
        if (GET_LIBRARY_VERSION == null) {
            return null;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(MAX_STRING + 1);
            MemorySegment len = a.allocate(JAVA_INT);
            int rc = (int) GET_LIBRARY_VERSION.invokeExact(buf, len);
            return rc == SUCCESS ? buf.getString(0).trim() : null;
        } catch (Throwable t) {
            return null;
        }
    }

    private static String check() {
        if (OPEN_ERROR != null) {
            return OPEN_ERROR;
        }
        String v = VERSION == null ? "(MPI_Get_library_version failed)" : VERSION.lines().findFirst().orElse(VERSION);
        if (VERSION == null || !VERSION.startsWith("Open MPI v")) {
            return LOADED[0] + " is not Open MPI (" + v + "): jccl's MPI backend binds Open MPI's ABI (4.1 and 5.x), "
                    + "whose handles are pointers; set JCCL_MPI_LIBRARY to Open MPI's libmpi.so.40";
        }
        int major = majorVersion(VERSION);
        if (major < 4 || major > 5) {
            return LOADED[0] + " is " + v + ": jccl's MPI backend supports Open MPI 4.x and 5.x; "
                    + "install one of them or set JCCL_MPI_LIBRARY to its libmpi.so.40";
        }
        if (!MISSING.isEmpty()) {
            return LOADED[0] + " (" + v + ") lacks " + MISSING + ": it is not a complete Open MPI 4.1/5.x libmpi";
        }
        return null;
    }

    /** The major version of an "Open MPI vX.Y.Z, ..." string, or -1. */
    static int majorVersion(String version) {
        int at = version.indexOf(" v");
        if (at < 0) {
            return -1;
        }
        int end = at + 2;
        while (end < version.length() && Character.isDigit(version.charAt(end))) {
            end++;
        }
        try {
            return Integer.parseInt(version.substring(at + 2, end));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The file name the library was loaded from, or null. */
    static String loadedName() {
        return LOADED[0];
    }

    // ------------------------------------------------------------------ calls

    /**
     * Held around every call when MPI gives less than MPI_THREAD_MULTIPLE (set once by
     * {@link MpiRuntime} right after MPI_Init_thread, before any other thread calls MPI), null
     * otherwise.
     */
    static volatile ReentrantLock serial;
    // Each wraps invokeExact so callers see plain ints; Throwable from the linker cannot happen
    // for these signatures and is rethrown as an Error.

    private static Error linkFailure(Throwable t) {
        return t instanceof Error e ? e : new AssertionError("MPI downcall failed", t);
    }

    /** Takes {@link #serial} when it is set and returns it (null when unset) for {@link #release}. */
    private static ReentrantLock acquire() {
        ReentrantLock l = serial;
        if (l != null) {
            l.lock();
        }
        return l;
    }

    private static void release(ReentrantLock l) {
        if (l != null) {
            l.unlock();
        }
    }

    static int initialized(MemorySegment flag) {
        ReentrantLock l = acquire();
        try {
            return (int) INITIALIZED.invokeExact(flag);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int finalized(MemorySegment flag) {
        ReentrantLock l = acquire();
        try {
            return (int) FINALIZED.invokeExact(flag);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int initThread(int required, MemorySegment provided) {
        ReentrantLock l = acquire();
        try {
            return (int) INIT_THREAD.invokeExact(MemorySegment.NULL, MemorySegment.NULL, required, provided);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int queryThread(MemorySegment provided) {
        ReentrantLock l = acquire();
        try {
            return (int) QUERY_THREAD.invokeExact(provided);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int finalizeMpi() {
        ReentrantLock l = acquire();
        try {
            return (int) FINALIZE.invokeExact();
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    /** MPI_Abort, without the serialising lock: it must get through while another thread is inside MPI. */
    static int abort(MemorySegment comm, int code) {
        try {
            return (int) ABORT.invokeExact(comm, code);
        } catch (Throwable t) {
            throw linkFailure(t);
        }
    }

    static int errorString(int code, MemorySegment buf, MemorySegment len) {
        ReentrantLock l = acquire();
        try {
            return (int) ERROR_STRING.invokeExact(code, buf, len);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int commRank(MemorySegment comm, MemorySegment out) {
        ReentrantLock l = acquire();
        try {
            return (int) COMM_RANK.invokeExact(comm, out);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int commSize(MemorySegment comm, MemorySegment out) {
        ReentrantLock l = acquire();
        try {
            return (int) COMM_SIZE.invokeExact(comm, out);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int commIdup(MemorySegment comm, MemorySegment newComm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) COMM_IDUP.invokeExact(comm, newComm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int commSplit(MemorySegment comm, int color, int key, MemorySegment newComm) {
        ReentrantLock l = acquire();
        try {
            return (int) COMM_SPLIT.invokeExact(comm, color, key, newComm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int commFree(MemorySegment commCell) {
        ReentrantLock l = acquire();
        try {
            return (int) COMM_FREE.invokeExact(commCell);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int commSetErrhandler(MemorySegment comm, MemorySegment handler) {
        ReentrantLock l = acquire();
        try {
            return (int) COMM_SET_ERRHANDLER.invokeExact(comm, handler);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int typeContiguous(int count, MemorySegment oldType, MemorySegment newTypeCell) {
        ReentrantLock l = acquire();
        try {
            return (int) TYPE_CONTIGUOUS.invokeExact(count, oldType, newTypeCell);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int typeCommit(MemorySegment typeCell) {
        ReentrantLock l = acquire();
        try {
            return (int) TYPE_COMMIT.invokeExact(typeCell);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int opCreate(MemorySegment function, int commute, MemorySegment opCell) {
        ReentrantLock l = acquire();
        try {
            return (int) OP_CREATE.invokeExact(function, commute, opCell);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int test(MemorySegment req, MemorySegment flag, MemorySegment status) {
        ReentrantLock l = acquire();
        try {
            return (int) TEST.invokeExact(req, flag, status);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int getCount(MemorySegment status, MemorySegment type, MemorySegment count) {
        ReentrantLock l = acquire();
        try {
            return (int) GET_COUNT.invokeExact(status, type, count);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int iallreduce(MemorySegment s, MemorySegment r, int count, MemorySegment type, MemorySegment op,
                          MemorySegment comm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IALLREDUCE.invokeExact(s, r, count, type, op, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int ibcast(MemorySegment buf, int count, MemorySegment type, int root, MemorySegment comm,
                      MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IBCAST.invokeExact(buf, count, type, root, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int ireduce(MemorySegment s, MemorySegment r, int count, MemorySegment type, MemorySegment op, int root,
                       MemorySegment comm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IREDUCE.invokeExact(s, r, count, type, op, root, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int iallgather(MemorySegment s, int sCount, MemorySegment sType, MemorySegment r, int rCount,
                          MemorySegment rType, MemorySegment comm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IALLGATHER.invokeExact(s, sCount, sType, r, rCount, rType, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int ireduceScatterBlock(MemorySegment s, MemorySegment r, int count, MemorySegment type,
                                   MemorySegment op, MemorySegment comm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IREDUCE_SCATTER_BLOCK.invokeExact(s, r, count, type, op, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int ialltoall(MemorySegment s, int sCount, MemorySegment sType, MemorySegment r, int rCount,
                         MemorySegment rType, MemorySegment comm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IALLTOALL.invokeExact(s, sCount, sType, r, rCount, rType, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int igather(MemorySegment s, int sCount, MemorySegment sType, MemorySegment r, int rCount,
                       MemorySegment rType, int root, MemorySegment comm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IGATHER.invokeExact(s, sCount, sType, r, rCount, rType, root, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int iscatter(MemorySegment s, int sCount, MemorySegment sType, MemorySegment r, int rCount,
                        MemorySegment rType, int root, MemorySegment comm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) ISCATTER.invokeExact(s, sCount, sType, r, rCount, rType, root, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int isend(MemorySegment buf, int count, MemorySegment type, int dest, int tag, MemorySegment comm,
                     MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) ISEND.invokeExact(buf, count, type, dest, tag, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int irecv(MemorySegment buf, int count, MemorySegment type, int source, int tag, MemorySegment comm,
                     MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IRECV.invokeExact(buf, count, type, source, tag, comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int ibarrier(MemorySegment comm, MemorySegment req) {
        ReentrantLock l = acquire();
        try {
            return (int) IBARRIER.invokeExact(comm, req);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int allreduce(MemorySegment s, MemorySegment r, int count, MemorySegment type, MemorySegment op, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) ALLREDUCE.invokeExact(s, r, count, type, op, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int bcast(MemorySegment buf, int count, MemorySegment type, int root, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) BCAST.invokeExact(buf, count, type, root, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int reduce(MemorySegment s, MemorySegment r, int count, MemorySegment type, MemorySegment op, int root, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) REDUCE.invokeExact(s, r, count, type, op, root, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int allgather(MemorySegment s, int sCount, MemorySegment sType, MemorySegment r, int rCount, MemorySegment rType, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) ALLGATHER.invokeExact(s, sCount, sType, r, rCount, rType, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int reduceScatterBlock(MemorySegment s, MemorySegment r, int count, MemorySegment type, MemorySegment op, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) REDUCE_SCATTER_BLOCK.invokeExact(s, r, count, type, op, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int alltoall(MemorySegment s, int sCount, MemorySegment sType, MemorySegment r, int rCount, MemorySegment rType, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) ALLTOALL.invokeExact(s, sCount, sType, r, rCount, rType, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int gather(MemorySegment s, int sCount, MemorySegment sType, MemorySegment r, int rCount, MemorySegment rType, int root, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) GATHER.invokeExact(s, sCount, sType, r, rCount, rType, root, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int scatter(MemorySegment s, int sCount, MemorySegment sType, MemorySegment r, int rCount, MemorySegment rType, int root, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) SCATTER.invokeExact(s, sCount, sType, r, rCount, rType, root, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int send(MemorySegment buf, int count, MemorySegment type, int dest, int tag, MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) SEND.invokeExact(buf, count, type, dest, tag, comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int recv(MemorySegment buf, int count, MemorySegment type, int source, int tag, MemorySegment comm, MemorySegment status) {
        ReentrantLock l = acquire();
        try {
            return (int) RECV.invokeExact(buf, count, type, source, tag, comm, status);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }

    static int barrier(MemorySegment comm) {
        ReentrantLock l = acquire();
        try {
            return (int) BARRIER.invokeExact(comm);
        } catch (Throwable t) {
            throw linkFailure(t);
        } finally {
            release(l);
        }
    }
}
