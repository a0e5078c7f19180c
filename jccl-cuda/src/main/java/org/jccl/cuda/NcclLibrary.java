package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * NCCL ({@code libnccl.so.2}) bound through the Foreign Function and Memory API. The library is
 * found through {@code JCCL_NCCL_LIBRARY}, then the system search path, then known install places
 * (Python environments' {@code nvidia/nccl/lib}). Loaded only when this class is first used.
 *
 * <p>Pointers, {@code ncclComm_t} and {@code cudaStream_t} travel as {@code long}. Functions that
 * NCCL added late ({@code ncclAlltoAll}, {@code ncclGather}, {@code ncclScatter} in 2.28,
 * {@code ncclCommShrink} in 2.27) are optional: their handle is null when the library lacks them.
 */
final class NcclLibrary {
    /** ncclSuccess. */
    static final int SUCCESS = 0;
    /** ncclInProgress: a nonblocking communicator is still working on the call. */
    static final int IN_PROGRESS = 7;
    /** The oldest NCCL jccl accepts: 2.19 (ncclCommInitRankConfig with commName, ncclCommSplit). */
    static final int MIN_VERSION = 21900;
    /** NCCL_UNIQUE_ID_BYTES. */
    static final int UNIQUE_ID_BYTES = 128;
    /** NCCL_CONFIG_UNDEF_INT. */
    static final int CONFIG_UNDEF_INT = Integer.MIN_VALUE;
    /** NCCL_API_MAGIC. */
    static final int API_MAGIC = 0xcafebeef;
    /** NCCL_SPLIT_NOCOLOR. */
    static final int SPLIT_NOCOLOR = -1;
    /** ncclScalarHostImmediate: the PreMulSum scalar is read from host memory during the create call. */
    static final int SCALAR_HOST_IMMEDIATE = 1;

    /**
     * The prefix of {@code ncclConfig_t} jccl fills in: size, magic, version, blocking,
     * cgaClusterSize, minCTAs, maxCTAs, netName, splitShare, trafficClass, commName. NCCL's struct
     * is append-only and NCCL copies {@code min(config.size, sizeof(its ncclConfig_t))} bytes over
     * its own NCCL_CONFIG_INITIALIZER, so passing this prefix with {@code size = 56} leaves every
     * later field at NCCL's default in every version since 2.18.
     */
    static final int CONFIG_SIZE = 56;
    static final long CFG_SIZE = 0, CFG_MAGIC = 8, CFG_VERSION = 12, CFG_BLOCKING = 16, CFG_CGA = 20,
            CFG_MIN_CTAS = 24, CFG_MAX_CTAS = 28, CFG_NET_NAME = 32, CFG_SPLIT_SHARE = 40,
            CFG_TRAFFIC_CLASS = 44, CFG_COMM_NAME = 48;

    private static final MemoryLayout UNIQUE_ID = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(UNIQUE_ID_BYTES, JAVA_BYTE));

    /**
     * Whether NCCL connects every algorithm of a communicator when it is created (jccl's default),
     * not at its first use. A first use that connects runs inside the enqueue of a blocking
     * communicator, waits there for every rank of the communicator, and no deadline can end it
     * safely (ncclCommAbort while another thread is inside the enqueue frees what that thread
     * uses); creation is polled with the deadline. Set before NCCL reads its parameters, and only
     * where the user did not set NCCL_RUNTIME_CONNECT: {@code NCCL_RUNTIME_CONNECT=1} restores
     * NCCL's lazy connection (less GPU memory for algorithms never used, e.g. NVLS buffers).
     */
    static final boolean EAGER_CONNECT = eagerConnect();

    private static final NativeBinder LIB = NativeBinder.open("libnccl.so.2", candidates());

    static final MethodHandle ncclGetVersion = LIB.required(FunctionDescriptor.of(JAVA_INT, ADDRESS), "ncclGetVersion");
    static final MethodHandle ncclGetUniqueId = LIB.required(FunctionDescriptor.of(JAVA_INT, ADDRESS), "ncclGetUniqueId");
    static final MethodHandle ncclGetErrorString = LIB.required(FunctionDescriptor.of(ADDRESS, JAVA_INT),
            "ncclGetErrorString");
    static final MethodHandle ncclGetLastError = LIB.required(FunctionDescriptor.of(ADDRESS, JAVA_LONG),
            "ncclGetLastError");
    static final MethodHandle ncclCommInitRankConfig = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT, ADDRESS), "ncclCommInitRankConfig");
    static final MethodHandle ncclCommSplit = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), "ncclCommSplit");
    static final MethodHandle ncclCommShrink = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), "ncclCommShrink");
    static final MethodHandle ncclCommFinalize = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG),
            "ncclCommFinalize");
    static final MethodHandle ncclCommDestroy = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG),
            "ncclCommDestroy");
    static final MethodHandle ncclCommAbort = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "ncclCommAbort");
    static final MethodHandle ncclCommGetAsyncError = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS), "ncclCommGetAsyncError");
    static final MethodHandle ncclCommCount = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS),
            "ncclCommCount");
    static final MethodHandle ncclCommUserRank = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS),
            "ncclCommUserRank");
    static final MethodHandle ncclCommCuDevice = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS),
            "ncclCommCuDevice");
    static final MethodHandle ncclAllReduce = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclAllReduce");
    static final MethodHandle ncclBroadcast = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclBroadcast");
    static final MethodHandle ncclReduce = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclReduce");
    static final MethodHandle ncclAllGather = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclAllGather");
    static final MethodHandle ncclReduceScatter = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclReduceScatter");
    static final MethodHandle ncclAlltoAll = LIB.optional(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclAlltoAll");
    static final MethodHandle ncclGather = LIB.optional(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclGather");
    static final MethodHandle ncclScatter = LIB.optional(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclScatter");
    static final MethodHandle ncclSend = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT,
            JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclSend");
    static final MethodHandle ncclRecv = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT,
            JAVA_INT, JAVA_LONG, JAVA_LONG), "ncclRecv");
    static final MethodHandle ncclGroupStart = LIB.required(FunctionDescriptor.of(JAVA_INT), "ncclGroupStart");
    static final MethodHandle ncclGroupEnd = LIB.required(FunctionDescriptor.of(JAVA_INT), "ncclGroupEnd");
    static final MethodHandle ncclRedOpCreatePreMulSum = LIB.required(FunctionDescriptor.of(JAVA_INT, ADDRESS,
            ADDRESS, JAVA_INT, JAVA_INT, JAVA_LONG), "ncclRedOpCreatePreMulSum");
    static final MethodHandle ncclRedOpDestroy = LIB.required(FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG),
            "ncclRedOpDestroy");
    static final MethodHandle ncclMemAlloc = LIB.optional(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG),
            "ncclMemAlloc");
    static final MethodHandle ncclMemFree = LIB.optional(FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "ncclMemFree");
    static final MethodHandle ncclCommRegister = LIB.optional(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, ADDRESS), "ncclCommRegister");
    static final MethodHandle ncclCommDeregister = LIB.optional(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG),
            "ncclCommDeregister");
    /**
     * {@code ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
     * int winFlags)} (NCCL 2.27+): collective over the communicator's ranks, same size everywhere.
     */
    static final MethodHandle ncclCommWindowRegister = LIB.optional(FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
            JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_INT), "ncclCommWindowRegister");
    /** {@code ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)} (NCCL 2.27+): local. */
    static final MethodHandle ncclCommWindowDeregister = LIB.optional(FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
            JAVA_LONG), "ncclCommWindowDeregister");
    /** NCCL_WIN_COLL_SYMMETRIC: the window may be used by NCCL's symmetric collective kernels. */
    static final int WIN_COLL_SYMMETRIC = 0x01;
    /** The first NCCL with ncclCommWindowRegister: 2.27.0. */
    static final int WINDOW_VERSION = 22700;

    /** NCCL_VERSION_CODE of the loaded library (e.g. 22803), or 0 when unavailable. */
    static final int VERSION;
    /** The file the library was loaded from (read back from /proc/self/maps), or the name asked for. */
    static final String PATH;
    /** Null when usable, else why not. */
    static final String FAILURE;

    static {
        String f = LIB.failure();
        int v = 0;
        if (f == null) {
            try {
                MemorySegment s = Scratch.get();
                int r = (int) ncclGetVersion.invokeExact(s);
                if (r != SUCCESS) {
                    f = "ncclGetVersion failed with " + r;
                } else {
                    v = s.get(JAVA_INT, 0);
                    if (v < MIN_VERSION) {
                        f = "NCCL " + versionString(v) + " at " + LIB.loadedName() + " is older than 2.19, the oldest jccl"
                                + " supports: install a newer NCCL or point JCCL_NCCL_LIBRARY at one";
                    }
                }
            } catch (Throwable t) {
                f = "ncclGetVersion failed: " + t;
            }
        }
        VERSION = v;
        FAILURE = f;
        PATH = LIB.loadedName() == null ? null : resolvedPath(LIB.loadedName());
    }

    private NcclLibrary() {
    }

    /** setenv("NCCL_RUNTIME_CONNECT", "0", 0) through libc; see {@link #EAGER_CONNECT}. */
    private static boolean eagerConnect() {
        String user = System.getenv("NCCL_RUNTIME_CONNECT");
        if (user != null) {
            return "0".equals(user.trim());
        }
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
            MethodHandle setenv = linker.downcallHandle(linker.defaultLookup().find("setenv").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
            // overwrite 0: a value set natively since the JVM started (another library, nccl.conf) stays
            return (int) setenv.invokeExact(a.allocateFrom("NCCL_RUNTIME_CONNECT"), a.allocateFrom("0"), 0) == 0;
        } catch (Throwable t) {
            return false;
        }
    }

    /** "2.28.3" for 22803 (and the pre-2.9 encoding 2708 -> "2.7.8"). */
    static String versionString(int code) {
        if (code <= 0) {
            return "unknown";
        }
        if (code < 10000) {
            return code / 1000 + "." + code % 1000 / 100 + "." + code % 100;
        }
        return code / 10000 + "." + code % 10000 / 100 + "." + code % 100;
    }

    /** Throws a clear exception when NCCL cannot be used. */
    static void requireAvailable() {
        if (FAILURE != null) {
            throw new org.jccl.JcclException("NCCL unavailable: " + FAILURE);
        }
    }

    static List<String> candidates() {
        List<String> c = NativeBinder.candidates("JCCL_NCCL_LIBRARY", "libnccl.so.2", "/usr/lib/x86_64-linux-gnu",
                "/usr/lib/aarch64-linux-gnu", "/usr/local/lib");
        String venv = System.getenv("VIRTUAL_ENV");
        if (venv != null) {
            addPythonPlaces(c, Path.of(venv, "lib"));
        }
        String conda = System.getenv("CONDA_PREFIX");
        if (conda != null) {
            c.add(conda + "/lib/libnccl.so.2");
            addPythonPlaces(c, Path.of(conda, "lib"));
        }
        addPythonPlaces(c, Path.of("/opt/torch/.venv/lib"));
        addPythonPlaces(c, Path.of("/usr/local/lib"));
        addPythonPlaces(c, Path.of("/usr/lib"));
        String home = System.getProperty("user.home");
        if (home != null) {
            addPythonPlaces(c, Path.of(home, ".local", "lib"));
        }
        return c;
    }

    /** Adds {@code <libDir>/python3.*}/{site,dist}-packages/nvidia/nccl/lib/libnccl.so.2. */
    private static void addPythonPlaces(List<String> out, Path libDir) {
        if (!Files.isDirectory(libDir)) {
            return;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(libDir, "python3*")) {
            for (Path py : ds) {
                for (String pk : new String[] {"site-packages", "dist-packages"}) {
                    Path p = py.resolve(pk).resolve("nvidia/nccl/lib/libnccl.so.2");
                    if (Files.isRegularFile(p)) {
                        out.add(p.toString());
                    }
                }
            }
        } catch (IOException | SecurityException e) {
            // An unreadable directory is simply not a candidate.
        }
    }

    /** The mapped file of the loaded library, from /proc/self/maps; falls back to {@code name}. */
    private static String resolvedPath(String name) {
        if (name.startsWith("/")) {
            return name;
        }
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int i = line.indexOf('/');
                if (i >= 0 && line.contains("libnccl.so")) {
                    return line.substring(i).trim();
                }
            }
        } catch (IOException | RuntimeException e) {
            // Not Linux or not readable: report the name that was loaded.
        }
        return name;
    }

    // ---- helpers used by the communicator ----

    /** ncclGetErrorString. */
    static String errorString(int result) {
        try {
            MemorySegment p = (MemorySegment) ncclGetErrorString.invokeExact(result);
            return p.equals(MemorySegment.NULL) ? "ncclResult " + result : p.reinterpret(4096).getString(0);
        } catch (Throwable t) {
            return "ncclResult " + result;
        }
    }

    /** ncclGetLastError for {@code comm} (0 allowed), or "" when none. */
    static String lastError(long comm) {
        try {
            MemorySegment p = (MemorySegment) ncclGetLastError.invokeExact(comm);
            return p.equals(MemorySegment.NULL) ? "" : p.reinterpret(8192).getString(0);
        } catch (Throwable t) {
            return "";
        }
    }

    /** The symbolic name of an ncclResult_t. */
    static String resultName(int r) {
        return switch (r) {
            case 0 -> "ncclSuccess";
            case 1 -> "ncclUnhandledCudaError";
            case 2 -> "ncclSystemError";
            case 3 -> "ncclInternalError";
            case 4 -> "ncclInvalidArgument";
            case 5 -> "ncclInvalidUsage";
            case 6 -> "ncclRemoteError";
            case 7 -> "ncclInProgress";
            case 8 -> "ncclTimeout";
            default -> "ncclResult(" + r + ")";
        };
    }

    /** ncclCommGetAsyncError; the scratch segment must be at least 4 bytes. */
    static int asyncError(long comm, MemorySegment scratch) {
        try {
            int r = (int) ncclCommGetAsyncError.invokeExact(comm, scratch);
            return r != SUCCESS ? r : scratch.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static int groupStart() {
        try {
            return (int) ncclGroupStart.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static int groupEnd() {
        try {
            return (int) ncclGroupEnd.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** A fresh ncclUniqueId (128 bytes). */
    static byte[] uniqueId() {
        requireAvailable();
        MemorySegment s = Scratch.get();
        int r;
        try {
            r = (int) ncclGetUniqueId.invokeExact(s);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (r != SUCCESS) {
            throw new NcclException("ncclGetUniqueId", r, errorString(r), lastError(0));
        }
        return s.asSlice(0, UNIQUE_ID_BYTES).toArray(JAVA_BYTE);
    }

    /** Writes a nonblocking ncclConfig_t prefix into {@code cfg} (at least CONFIG_SIZE bytes). */
    static void fillConfig(MemorySegment cfg, MemorySegment commName) {
        fillConfig(cfg, commName, false, false);
    }

    /**
     * Writes jccl's ncclConfig_t prefix into {@code cfg}: {@code blocking} 1 or 0, and
     * {@code splitShare} 1 (a split child shares the parent's channels and buffers) or NCCL's default.
     */
    static void fillConfig(MemorySegment cfg, MemorySegment commName, boolean blocking, boolean splitShare) {
        cfg.asSlice(0, CONFIG_SIZE).fill((byte) 0);
        cfg.set(JAVA_LONG, CFG_SIZE, CONFIG_SIZE);
        cfg.set(JAVA_INT, CFG_MAGIC, API_MAGIC);
        cfg.set(JAVA_INT, CFG_VERSION, VERSION);
        // Nonblocking: no NCCL call can block the calling thread, so every wait is ours and has a
        // deadline, and ncclCommAbort can always run. (jccl's data communicators are blocking: see
        // NcclCommunicator.)
        cfg.set(JAVA_INT, CFG_BLOCKING, blocking ? 1 : 0);
        cfg.set(JAVA_INT, CFG_CGA, CONFIG_UNDEF_INT);
        cfg.set(JAVA_INT, CFG_MIN_CTAS, CONFIG_UNDEF_INT);
        cfg.set(JAVA_INT, CFG_MAX_CTAS, CONFIG_UNDEF_INT);
        cfg.set(JAVA_LONG, CFG_NET_NAME, 0L);
        cfg.set(JAVA_INT, CFG_SPLIT_SHARE, splitShare ? 1 : CONFIG_UNDEF_INT);
        cfg.set(JAVA_INT, CFG_TRAFFIC_CLASS, CONFIG_UNDEF_INT);
        cfg.set(JAVA_LONG, CFG_COMM_NAME, commName == null ? 0L : commName.address());
    }
}
