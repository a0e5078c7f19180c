package org.jccl.mpi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.internal.Log;

/**
 * MPI in this process: initialised once (MPI_Init_thread), finalised once at JVM exit, and the
 * per-process objects every communicator shares (data types and user-defined reduction ops).
 *
 * <h2>Threads</h2>
 * jccl asks for MPI_THREAD_MULTIPLE. When the library gives MPI_THREAD_SERIALIZED only, every MPI
 * call holds one process-wide lock ({@link MpiLibrary#serial}) and a warning says so; less than
 * that is refused (jccl's async waits and the exit hook call MPI from other threads). The system
 * property {@code jccl.mpi.threadLevel=serialized} asks for MPI_THREAD_SERIALIZED on purpose (tests
 * use it to exercise the serialised path).
 *
 * <h2>Blocking calls</h2>
 * By default ({@code JCCL_MPI_BLOCKING=poll}) every call, blocking or not, is MPI's nonblocking
 * form completed by MPI_Test polling against the communicator's deadline: a late rank gives a
 * {@link CollectiveTimeoutException}, as with every jccl backend. {@code JCCL_MPI_BLOCKING=native}
 * sends blocking calls to MPI's blocking forms (MPI_Allreduce, ...): Open MPI then uses its
 * tuned algorithms for them, faster than its nonblocking ones (docs/BENCHMARKS.md), but a blocking
 * MPI call cannot be abandoned, so a watchdog thread ends the job with MPI_Abort when one passes
 * the deadline (the user asked for that by choosing native). Async calls are nonblocking in both.
 *
 * <h2>Lifetime</h2>
 * MPI cannot be initialised twice in a process, so it stays initialised while the JVM runs (any
 * number of communicators may come and go) and MPI_Finalize runs in a shutdown hook, which waits
 * at most the longest communicator timeout seen (MPI_Finalize waits for the other processes of
 * the job). When an operation is still pending in MPI at exit (a collective that timed out) the
 * hook skips MPI_Finalize, so that the launcher ends the whole job at once. When something else in the process initialised MPI first, jccl uses it as it is and
 * leaves finalising to its owner. A process that ends through {@link Runtime#halt} skips the
 * hook, and Open MPI's launcher then reports it as ended without MPI_Finalize.
 *
 * <h2>Reductions MPI lacks</h2>
 * FLOAT16, BFLOAT16 and the FP8 types travel as their own committed contiguous types (2 and 1
 * bytes), one per jccl type, and reduce through user-defined ops (MPI_Op_create, commutative):
 * an FFM upcall stub per operator that calls {@link Reductions#accumulate}, the host engine's
 * kernel, on the two vectors MPI hands over. Sums of INT8 and UINT8 take the same path (see
 * {@link #op}). Each call of the user function costs one upcall plus the kernel over the
 * vector MPI passes (a whole message, or a segment of a pipelined one): a fixed cost per call
 * that shows in small messages, and nothing measurable per element in large ones
 * (docs/BENCHMARKS.md, MPI backend). PREMUL_SUM scales each
 * rank's input with {@link Reductions#scale} before a sum; AVG divides the sum once with
 * {@link Reductions#divide}.
 */
@SuppressWarnings("restricted") // upcall stubs and views of the memory MPI hands to them
final class MpiRuntime {
    private static final Log LOG = Log.get(MpiRuntime.class);

    /** User-op slots: the operators MPI cannot apply to the low-precision types. */
    static final int U_SUM = 0, U_PROD = 1, U_MIN = 2, U_MAX = 3;
    private static final ReduceOp[] USER_OPS = {ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX};

    private static MpiRuntime instance;
    private static Throwable initFailure;

    /** A failure inside a user-op upcall (an exception must not unwind into C): reported by the next reduction. */
    static final AtomicReference<Throwable> UPCALL_FAILURE = new AtomicReference<>();

    final int worldRank;
    final int worldSize;
    final int threadLevel;
    /** JCCL_MPI_BLOCKING=native: blocking calls use MPI's blocking forms, watched by {@link #watch()}. */
    final boolean nativeBlocking;
    private Thread watchdog;
    private final MemorySegment[] types = new MemorySegment[DataType.values().length];
    private final MemorySegment[] userOps = new MemorySegment[USER_OPS.length];
    /** The types the user ops reduce: the low-precision ones (first {@link #N_LOW}) and the 8-bit integers (sums only). */
    private static final DataType[] USER_TYPES = {DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT8_E4M3,
        DataType.FLOAT8_E5M2, DataType.INT8, DataType.UINT8};
    private static final int N_LOW = 4;
    /** Addresses of the MPI types of {@link #USER_TYPES}: the upcall maps the handle MPI passes back with them. */
    private static final long[] USER_TYPE_ADDRESSES = new long[USER_TYPES.length];
    private volatile long finalizeWaitNanos;
    /** Communicators not (cleanly) closed: the exit hook asks them whether MPI is done with their operations. */
    private final java.util.Set<MpiCommunicator> live = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private MpiRuntime(int worldRank, int worldSize, int threadLevel, boolean nativeBlocking) {
        this.worldRank = worldRank;
        this.worldSize = worldSize;
        this.threadLevel = threadLevel;
        this.nativeBlocking = nativeBlocking;
    }

    /** Reads JCCL_MPI_BLOCKING: {@code poll} (default) or {@code native}. */
    static boolean parseBlocking(String value) {
        if (value == null || value.isBlank() || value.trim().equalsIgnoreCase("poll")) {
            return false;
        }
        if (value.trim().equalsIgnoreCase("native")) {
            return true;
        }
        throw new IllegalArgumentException("JCCL_MPI_BLOCKING=" + value + " is not valid: use poll (the default: MPI's "
                + "nonblocking operations, polled against the deadline) or native (MPI's blocking operations; past the "
                + "deadline MPI_Abort ends the job)");
    }

    /**
     * The process's MPI, initialised on first use within {@code timeout}.
     *
     * @throws JcclException when MPI is unavailable, was finalised, fails to start, or gives too
     *                       little thread support
     */
    static synchronized MpiRuntime get(Duration timeout) {
        if (instance != null) {
            instance.extendFinalizeWait(timeout);
            return instance;
        }
        if (initFailure != null) {
            throw new JcclException("MPI failed to start earlier in this process: " + initFailure.getMessage(), initFailure);
        }
        if (!Mpi.isAvailable()) {
            throw new JcclException("the MPI backend is not available here: " + Mpi.unavailabilityCause());
        }
        try {
            instance = start(timeout);
            instance.extendFinalizeWait(timeout);
            return instance;
        } catch (RuntimeException | Error e) {
            initFailure = e;
            throw e;
        }
    }

    private void extendFinalizeWait(Duration timeout) {
        finalizeWaitNanos = Math.max(finalizeWaitNanos, timeout.toNanos());
    }

    private static MpiRuntime start(Duration timeout) {
        boolean nativeBlocking = parseBlocking(org.jccl.internal.Settings.get("JCCL_MPI_BLOCKING"));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment flag = a.allocate(JAVA_INT);
            check(MpiLibrary.finalized(flag), "MPI_Finalized");
            if (flag.get(JAVA_INT, 0) != 0) {
                throw new JcclException("MPI was already finalised in this process and cannot start again: "
                        + "form jccl MPI communicators before MPI_Finalize");
            }
            check(MpiLibrary.initialized(flag), "MPI_Initialized");
            boolean owns = flag.get(JAVA_INT, 0) == 0;
            int level;
            if (owns) {
                int wanted = "serialized".equalsIgnoreCase(System.getProperty("jccl.mpi.threadLevel"))
                        ? MpiLibrary.THREAD_SERIALIZED : MpiLibrary.THREAD_MULTIPLE;
                level = initThread(wanted, timeout);
            } else {
                check(MpiLibrary.queryThread(flag), "MPI_Query_thread");
                level = flag.get(JAVA_INT, 0);
                LOG.info(-1, () -> "MPI was initialised by someone else in this process; jccl uses it and leaves MPI_Finalize to its owner");
            }
            if (level < MpiLibrary.THREAD_SERIALIZED) {
                throw new JcclException("MPI gives thread level " + levelName(level) + " but jccl needs at least "
                        + "MPI_THREAD_SERIALIZED (async waits and the exit hook call MPI from other threads): use an "
                        + "Open MPI built with thread support, or initialise MPI with MPI_THREAD_MULTIPLE before jccl");
            }
            if (level < MpiLibrary.THREAD_MULTIPLE) {
                MpiLibrary.serial = new ReentrantLock();
                String why = owns && System.getProperty("jccl.mpi.threadLevel") != null
                        ? "as -Djccl.mpi.threadLevel asks" : "MPI gives no MPI_THREAD_MULTIPLE";
                LOG.warn(-1, "MPI runs at " + levelName(level) + " (" + why + "): jccl serialises every MPI call "
                        + "through one lock");
            }
            check(MpiLibrary.commSetErrhandler(MpiLibrary.COMM_WORLD, MpiLibrary.ERRORS_RETURN),
                    "MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)");
            check(MpiLibrary.commRank(MpiLibrary.COMM_WORLD, flag), "MPI_Comm_rank");
            int rank = flag.get(JAVA_INT, 0);
            check(MpiLibrary.commSize(MpiLibrary.COMM_WORLD, flag), "MPI_Comm_size");
            int size = flag.get(JAVA_INT, 0);
            MpiRuntime rt = new MpiRuntime(rank, size, level, nativeBlocking);
            rt.createTypesAndOps();
            if (owns) {
                Runtime.getRuntime().addShutdownHook(new Thread(rt::finalizeAtExit, "jccl-mpi-finalize"));
            }
            LOG.info(rank, () -> "MPI started: " + MpiLibrary.VERSION.lines().findFirst().orElse("") + ", rank " + rank
                    + " of " + size + ", " + levelName(level));
            return rt;
        }
    }

    /** MPI_Init_thread on a helper thread, so that a launcher that never answers cannot hang us past the deadline. */
    private static int initThread(int wanted, Duration timeout) {
        int[] result = {-1, -1};
        CountDownLatch done = new CountDownLatch(1);
        Thread.ofPlatform().daemon().name("jccl-mpi-init").start(() -> {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment provided = a.allocate(JAVA_INT);
                result[0] = MpiLibrary.initThread(wanted, provided);
                result[1] = provided.get(JAVA_INT, 0);
            } finally {
                done.countDown();
            }
        });
        try {
            if (!done.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new CollectiveTimeoutException("MPI_Init_thread did not return within " + timeout
                        + ": the MPI launcher (mpirun / srun) did not complete the start-up of this job; check that "
                        + "every rank was started and can reach the others", List.of());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new JcclException("interrupted while MPI_Init_thread was running", e);
        }
        if (result[0] != MpiLibrary.SUCCESS) {
            // Error strings may not work before MPI is up: give the code.
            throw new JcclException("MPI_Init_thread failed with error code " + result[0]
                    + ": see Open MPI's messages above (is this process started by mpirun?)");
        }
        return result[1];
    }

    void register(MpiCommunicator c) {
        live.add(c);
        if (nativeBlocking) {
            synchronized (this) {
                if (watchdog == null) {
                    watchdog = Thread.ofPlatform().daemon().name("jccl-mpi-watchdog").start(this::watch);
                }
            }
        }
    }

    /**
     * JCCL_MPI_BLOCKING=native: a blocking MPI call cannot be given a deadline, so this thread
     * watches the deadline of every communicator's blocking call in progress and, past it, has
     * the communicator end the job with MPI_Abort (after saying which operation and rank).
     */
    private void watch() {
        while (true) {
            long period = TimeUnit.MILLISECONDS.toNanos(100);
            long now = System.nanoTime();
            for (MpiCommunicator c : live) {
                c.watch(now);
                // Sampling keeps the deadline to within a period: a twentieth of the shortest timeout.
                period = Math.max(TimeUnit.MILLISECONDS.toNanos(1), Math.min(period, c.timeout().toNanos() / 20));
            }
            LockSupport.parkNanos(period);
        }
    }

    void forget(MpiCommunicator c) {
        live.remove(c);
    }

    /**
     * The exit hook. When an operation is still pending in MPI (a timed-out collective, work
     * never awaited), MPI_Finalize would wait for ranks that will never come: it is skipped, and
     * Open MPI's launcher, seeing a process end without it, ends the job at once instead of the
     * other ranks waiting for their deadlines. Otherwise MPI_Finalize runs, for at most the
     * longest communicator timeout.
     */
    private void finalizeAtExit() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment flag = a.allocate(JAVA_INT);
            if (MpiLibrary.finalized(flag) != MpiLibrary.SUCCESS || flag.get(JAVA_INT, 0) != 0) {
                return;
            }
        }
        long settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        for (MpiCommunicator c : live) {
            if (!c.settledForExit(settle)) {
                exitWarning("exiting with operations of " + c.id + " still pending in MPI: skipping MPI_Finalize, "
                        + "so the MPI launcher ends the job");
                return;
            }
        }
        CountDownLatch done = new CountDownLatch(1);
        Thread.ofPlatform().daemon().name("jccl-mpi-finalize-call").start(() -> {
            try {
                MpiLibrary.finalizeMpi();
            } finally {
                done.countDown();
            }
        });
        try {
            long wait = Math.max(finalizeWaitNanos, TimeUnit.SECONDS.toNanos(1));
            if (!done.await(wait, TimeUnit.NANOSECONDS)) {
                exitWarning("MPI_Finalize did not return within " + Duration.ofNanos(wait)
                        + " (other ranks of the job did not finalise): exiting without it");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Straight to stderr: java.util.logging may already be shut down while exit hooks run. */
    private void exitWarning(String message) {
        System.err.println("[" + worldRank + "] jccl WARNING: " + message);
        System.err.flush();
    }

    // ------------------------------------------------------------------ types and ops

    private void createTypesAndOps() {
        types[DataType.INT8.ordinal()] = MpiLibrary.INT8_T;
        types[DataType.UINT8.ordinal()] = MpiLibrary.UINT8_T;
        types[DataType.INT32.ordinal()] = MpiLibrary.INT32_T;
        types[DataType.UINT32.ordinal()] = MpiLibrary.UINT32_T;
        types[DataType.INT64.ordinal()] = MpiLibrary.INT64_T;
        types[DataType.UINT64.ordinal()] = MpiLibrary.UINT64_T;
        types[DataType.FLOAT32.ordinal()] = MpiLibrary.FLOAT;
        types[DataType.FLOAT64.ordinal()] = MpiLibrary.DOUBLE;
        Arena global = Arena.global();
        for (int i = 0; i < N_LOW; i++) {
            // A type of its own per jccl type (not MPI_BYTE): the user op learns the element type from the handle.
            MemorySegment cell = global.allocate(ADDRESS);
            check(MpiLibrary.typeContiguous(USER_TYPES[i].byteSize(), MpiLibrary.BYTE, cell), "MPI_Type_contiguous");
            check(MpiLibrary.typeCommit(cell), "MPI_Type_commit");
            types[USER_TYPES[i].ordinal()] = cell.get(ADDRESS, 0);
        }
        for (int i = 0; i < USER_TYPES.length; i++) {
            USER_TYPE_ADDRESSES[i] = types[USER_TYPES[i].ordinal()].address();
        }
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(MpiRuntime.class, "userReduce",
                    MethodType.methodType(void.class, int.class, MemorySegment.class, MemorySegment.class,
                            MemorySegment.class, MemorySegment.class));
            FunctionDescriptor fd = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, ADDRESS);
            for (int k = 0; k < USER_OPS.length; k++) {
                MemorySegment stub = Linker.nativeLinker().upcallStub(MethodHandles.insertArguments(target, 0, k), fd, global);
                MemorySegment cell = global.allocate(ADDRESS);
                check(MpiLibrary.opCreate(stub, 1, cell), "MPI_Op_create");
                userOps[k] = cell.get(ADDRESS, 0);
            }
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * MPI_User_function: {@code inout[i] = op(inout[i], in[i])} for {@code *len} elements of
     * {@code *type}, by the host engine's kernel. Never throws into C.
     */
    @SuppressWarnings("unused") // called through the upcall stubs
    private static void userReduce(int slot, MemorySegment in, MemorySegment inout, MemorySegment len,
                                   MemorySegment type) {
        try {
            int n = len.reinterpret(JAVA_INT.byteSize()).get(JAVA_INT, 0);
            long t = type.reinterpret(ADDRESS.byteSize()).get(ADDRESS, 0).address();
            DataType dt = null;
            for (int i = 0; i < USER_TYPES.length; i++) {
                if (USER_TYPE_ADDRESSES[i] == t) {
                    dt = USER_TYPES[i];
                }
            }
            if (dt == null) {
                throw new IllegalStateException("jccl's MPI user op got an MPI datatype it did not create (0x"
                        + Long.toHexString(t) + ")");
            }
            long bytes = (long) n * dt.byteSize();
            Reductions.accumulate(dt, USER_OPS[slot], inout.reinterpret(bytes), 0, in.reinterpret(bytes), 0, n);
        } catch (Throwable e) {
            UPCALL_FAILURE.compareAndSet(null, e);
        }
    }

    /** The MPI datatype of a jccl type. */
    MemorySegment type(DataType t) {
        return types[t.ordinal()];
    }

    /**
     * The MPI op that reduces {@code t} for {@code op}: MPI's own for the types MPI knows, a
     * user op for the low-precision ones. AVG and PREMUL_SUM map to the sum (the caller scales
     * before and divides after). Sums of INT8 and UINT8 use the user op too: Open MPI 4.1's
     * AVX reduction component ({@code op/avx}) saturates 8-bit sums instead of wrapping them
     * (100 + 100 gives 127 for MPI_INT8_T), which C, NCCL and the host engine do not.
     */
    MemorySegment op(ReduceOp op, DataType t) {
        boolean low = t == DataType.FLOAT16 || t == DataType.BFLOAT16 || t == DataType.FLOAT8_E4M3
                || t == DataType.FLOAT8_E5M2;
        boolean byteInt = t == DataType.INT8 || t == DataType.UINT8;
        return switch (op.kind()) {
            case SUM, AVG, PREMUL_SUM -> low || byteInt ? userOps[U_SUM] : MpiLibrary.OP_SUM;
            case PROD -> low ? userOps[U_PROD] : MpiLibrary.OP_PROD;
            case MIN -> low ? userOps[U_MIN] : MpiLibrary.OP_MIN;
            case MAX -> low ? userOps[U_MAX] : MpiLibrary.OP_MAX;
            case BAND -> MpiLibrary.OP_BAND;
            case BOR -> MpiLibrary.OP_BOR;
            case BXOR -> MpiLibrary.OP_BXOR;
        };
    }

    // ------------------------------------------------------------------ errors

    /** Throws a JcclException with MPI_Error_string's text when {@code rc} is not MPI_SUCCESS. */
    static void check(int rc, String what) {
        if (rc != MpiLibrary.SUCCESS) {
            throw error(rc, what);
        }
    }

    /** A JcclException for MPI error code {@code rc}: "what failed: MPI error rc (text)". */
    static JcclException error(int rc, String what) {
        return new JcclException(what + " failed: MPI error " + rc + " (" + errorString(rc) + ")");
    }

    /** MPI_Error_string of {@code rc}, or a note when even that fails. */
    static String errorString(int rc) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(MpiLibrary.MAX_STRING + 1);
            MemorySegment len = a.allocate(JAVA_INT);
            if (MpiLibrary.errorString(rc, buf, len) != MpiLibrary.SUCCESS) {
                return "MPI_Error_string does not know this code";
            }
            return buf.getString(0).trim();
        }
    }

    static String levelName(int level) {
        return switch (level) {
            case MpiLibrary.THREAD_SINGLE -> "MPI_THREAD_SINGLE";
            case MpiLibrary.THREAD_FUNNELED -> "MPI_THREAD_FUNNELED";
            case MpiLibrary.THREAD_SERIALIZED -> "MPI_THREAD_SERIALIZED";
            case MpiLibrary.THREAD_MULTIPLE -> "MPI_THREAD_MULTIPLE";
            default -> "thread level " + level;
        };
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "MpiRuntime[rank %d of %d, %s]", worldRank, worldSize, levelName(threadLevel));
    }
}
