package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.jccl.AbortedException;
import org.jccl.Buffer;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.ReduceOp;
import org.jccl.internal.Log;
import org.jccl.spi.Liveness;

/**
 * A communicator over GPUs, run by NCCL. One rank per GPU; the ranks are processes (one GPU
 * each, {@link #create}, or {@link org.jccl.Jccl#init} with the nccl backend) or one process
 * driving several GPUs ({@link #initAll}).
 *
 * <p>Every collective is enqueued on a stream (the communicator's own, or the caller's
 * {@link CudaStream}) and returns an {@link NcclWork} completed by a CUDA event; the blocking
 * forms wait for it with the communicator's deadline. Arguments are checked in Java before NCCL
 * sees them: buffers must be live {@link DeviceBuffer}s of this communicator's GPU with matching
 * types and counts; bitwise operators, FP8 without sm_90 + NCCL 2.24, and ranks out of range are
 * refused with an {@link IllegalArgumentException}.
 *
 * <p>Two NCCL communicators stand behind each rank. The <em>control</em> communicator is created
 * nonblocking ({@code blocking = 0} in ncclConfig_t): initialisation, split and shrink never block
 * a Java thread, jccl polls them with the deadline, and an abort always gets through. The
 * <em>data</em> communicator that runs the collectives is split from it ({@code ncclCommSplit},
 * run in the parent's nonblocking mode) with {@code blocking = 1} and {@code splitShare = 1}: on
 * NCCL 2.28 every operation of a nonblocking communicator costs a thread start (about 50 us), a
 * blocking one enqueues in a few microseconds, and sharing keeps one set of buffers. A blocking
 * enqueue can only wait inside NCCL for the CUDA launch queue (jccl caps outstanding work so it
 * never fills) or for a first send or receive between two ranks, which connects them and waits
 * for the peer's matching call. Every collective algorithm is connected when the communicator is
 * created, with the deadline ({@code NCCL_RUNTIME_CONNECT=0}, which jccl sets unless the user
 * did; see {@link NcclLibrary#EAGER_CONNECT}).
 * {@code JCCL_NCCL_NONBLOCKING=1} runs the collectives on the nonblocking communicator instead.
 *
 * <p>A watchdog aborts the communicator when a work passes its deadline or NCCL reports an
 * asynchronous error (a dead peer, a network error) and fails every pending work with the cause.
 */
public final class NcclCommunicator implements Communicator {
    private static final Log LOG = Log.get(NcclCommunicator.class);
    private static final AtomicLong IDS = new AtomicLong();

    static final int ALL_REDUCE = 0, BROADCAST = 1, REDUCE = 2, ALL_GATHER = 3, REDUCE_SCATTER = 4, ALL_TO_ALL = 5,
            GATHER = 6, SCATTER = 7, SEND = 8, RECV = 9, BARRIER = 10;
    private static final String[] OP_NAMES = {"allReduce", "broadcast", "reduce", "allGather", "reduceScatter",
            "allToAll", "gather", "scatter", "send", "recv", "barrier"};

    private static final int OPEN = 0, ABORTED = 1, CLOSED = 2;
    /** Open communicators of this process per GPU ordinal (see {@link #severalGpus}). */
    private static final java.util.concurrent.ConcurrentHashMap<Integer, AtomicInteger> LIVE_PER_GPU =
            new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Whether this process has communicators on another GPU than this one's. Only then can NCCL's
     * teardown of one wait for another rank's thread (see {@link LateAborts#offThread}), and only
     * then does it run on a thread of its own; a process per GPU keeps it on the caller.
     */
    private boolean severalGpus() {
        for (Map.Entry<Integer, AtomicInteger> e : LIVE_PER_GPU.entrySet()) {
            if (e.getKey() != device.ordinal() && e.getValue().get() > 0) {
                return true;
            }
        }
        return false;
    }
    /** Collectives on the nonblocking control communicator (slower small messages; see the class comment). */
    static final boolean NONBLOCKING_DATA = "1".equals(org.jccl.internal.Settings.get("JCCL_NCCL_NONBLOCKING"));
    /**
     * While this communicator launched something less than this long ago, the watchdog makes no
     * CUDA or NCCL call for it (see {@link #watch}): the owner is enqueuing and will wait itself.
     */
    private static final long YOUNG_NANOS = Long.getLong("jccl.nccl.watchdogYoungNanos", 1_000_000);
    /** {@link #lastLaunch} is rewritten only when older than this. */
    private static final long LAUNCH_STAMP_NANOS = 100_000;

    private final CudaDevice device;
    private final boolean ownsDevice;
    /** The data communicator: every collective runs here. */
    private final long comm;
    /** The nonblocking control communicator (the same handle as {@link #comm} in nonblocking mode). */
    private final long ctl;
    private final int rank;
    private final int size;
    private final Duration timeout;
    private final long timeoutNanos;
    private final String name;
    private final Arena arena;
    /** The store this communicator and those derived from it release when they close, or null. */
    private final SharedStore store;
    /** Deaths the job's heartbeats learned, in this communicator's ranks; null without heartbeats. */
    private volatile Liveness.Watch watch;
    /** The job's store (for JCCL_CHECK and shrink after a failure), or null. Not closed by this communicator. */
    private final org.jccl.bootstrap.Store jobStore;
    /** JCCL_CHECK's fingerprint exchange, or null when off. */
    private final CollectiveCheck check;
    /** This communicator's part of the store's key space: the same on every rank. */
    private final String scope;
    private int shrinks;
    private int derived;
    private final java.util.Set<Integer> failedRanks = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Collectives issued (sends and receives are not counted: they need not pair up across ranks). */
    private long collIssued;
    private final CudaStream stream;
    private final long streamHandle;
    private final MemorySegment lockedScratch;
    private final MemorySegment watchScratch;
    private final ReentrantLock lock = new ReentrantLock();
    /**
     * Launched works and their events; at most {@link WorkRing#CAPACITY} in flight, so an enqueue
     * never waits for CUDA's launch queue. Armed under {@link #lock}.
     */
    private final WorkRing ring = new WorkRing();
    private final AtomicInteger state = new AtomicInteger(OPEN);
    private final java.util.concurrent.atomic.AtomicBoolean nativeAborted = new java.util.concurrent.atomic.AtomicBoolean();
    private final AtomicReference<JcclException> failure = new AtomicReference<>();
    private final Map<Long, Integer> preMulOps = new HashMap<>();
    /**
     * System.nanoTime of a recent launch, for the watchdog: written at most once per 100 us (a
     * volatile write costs a fence; the read before it is a plain load on x86). Starts far in the past.
     */
    private volatile long lastLaunch = System.nanoTime() - (1L << 62);
    private long seq;
    private DeviceBuffer barrierBuffer;
    private DeviceBuffer scratch;
    private final List<DeviceBuffer> retiredScratch = new ArrayList<>();
    /** Tests set this to run AlltoAll/Gather/Scatter through grouped send/recv even on NCCL 2.28+. */
    volatile boolean forceSendRecvFallback;

    private NcclCommunicator(CudaDevice device, boolean ownsDevice, long ctl, long comm, int rank, int size,
                             Duration timeout, String name, Arena arena, SharedStore store,
                             org.jccl.bootstrap.Store jobStore, String scope) {
        this.jobStore = jobStore;
        this.scope = scope;
        this.check = checkFor(jobStore, scope + "/check", rank, size, timeout);
        this.device = device;
        this.ownsDevice = ownsDevice;
        this.ctl = ctl;
        this.comm = comm;
        this.rank = rank;
        this.size = size;
        this.timeout = timeout;
        this.timeoutNanos = timeout.toNanos();
        this.name = name;
        this.arena = arena;
        this.store = store;
        this.lockedScratch = arena.allocate(64, 16);
        this.watchScratch = arena.allocate(64, 16);
        this.stream = device.createStream();
        this.streamHandle = stream.handle();
        LIVE_PER_GPU.computeIfAbsent(device.ordinal(), k -> new AtomicInteger()).incrementAndGet();
        Watchdog.register(this);
        if (jobStore != null) {
            FailureWatch.register(this);
        }
        LOG.info(rank, () -> "NCCL communicator " + name + " ready: rank " + rank + " of " + size + " on " + device
                + ", NCCL " + Nccl.versionString() + " from " + Nccl.libraryPath());
    }

    // ------------------------------------------------------------------ creation

    /**
     * Forms this rank's communicator of a job of {@code size} ranks, one GPU per rank. Collective:
     * every rank calls it with the same {@code uniqueId} (rank 0 makes it with
     * {@link Nccl#newUniqueId()} and hands it to the others, e.g. through a store).
     *
     * @throws CollectiveTimeoutException when not every rank joined within {@code timeout}
     */
    public static NcclCommunicator create(CudaDevice device, int rank, int size, byte[] uniqueId, Duration timeout) {
        return create(device, false, rank, size, uniqueId, timeout, null, null, "nccl");
    }

    /**
     * As {@link #create(CudaDevice, int, int, byte[], Duration)}, with the job's store: it enables
     * {@code JCCL_CHECK=1} and {@link #shrink(java.util.Set)} after a failure. The store is not
     * closed by the communicator.
     */
    public static NcclCommunicator create(CudaDevice device, int rank, int size, byte[] uniqueId, Duration timeout,
                                          org.jccl.bootstrap.Store store) {
        Objects.requireNonNull(store, "store");
        return create(device, false, rank, size, uniqueId, timeout, null, store, "nccl");
    }

    static NcclCommunicator create(CudaDevice device, boolean ownsDevice, int rank, int size, byte[] uniqueId,
                                   Duration timeout, AutoCloseable store, org.jccl.bootstrap.Store jobStore,
                                   String scope) {
        Nccl.requireAvailable();
        Objects.requireNonNull(device, "device");
        checkCreateArgs(rank, size, uniqueId, timeout);
        device.ensureOpen();
        Arena arena = Arena.ofShared();
        long c = 0;
        long data = 0;
        try {
            String name = commName(rank);
            MemorySegment cname = arena.allocateFrom(name);
            MemorySegment cfg = arena.allocate(NcclLibrary.CONFIG_SIZE + 8, 8);
            NcclLibrary.fillConfig(cfg, cname);
            MemorySegment uid = arena.allocate(NcclLibrary.UNIQUE_ID_BYTES, 8);
            uid.copyFrom(MemorySegment.ofArray(uniqueId));
            MemorySegment out = arena.allocate(8, 8);
            long deadline = System.nanoTime() + timeout.toNanos();
            device.makeCurrent();
            int r;
            try {
                r = (int) NcclLibrary.ncclCommInitRankConfig.invokeExact(out, size, uid, rank, cfg);
            } catch (Throwable t) {
                throw rethrow(t);
            }
            c = out.get(JAVA_LONG, 0);
            String what = "ncclCommInitRankConfig (rank " + rank + " of " + size + " on GPU " + device.ordinal() + ")";
            if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                throw new NcclException(what, r, NcclLibrary.errorString(r), NcclLibrary.lastError(c));
            }
            MemorySegment scratch = arena.allocate(8, 8);
            awaitReady(c, deadline, timeout, what, scratch);
            if (NONBLOCKING_DATA) {
                data = c;
            } else {
                MemorySegment dataOut = arena.allocate(8, 8);
                startDataSplit(c, rank, arena, name, dataOut);
                data = finishDataSplit(c, dataOut, deadline, timeout, what, scratch);
            }
            return new NcclCommunicator(device, ownsDevice, c, data, rank, size, timeout, name, arena,
                    store == null ? null : new SharedStore(store), jobStore, scope);
        } catch (RuntimeException | Error e) {
            // Abort before the arena goes: NCCL may still write into it while a call is in progress.
            if (data != 0 && data != c) {
                abortQuietly(data);
            }
            abortQuietly(c);
            arena.close();
            throw e;
        }
    }

    /** Issues ncclCommSplit(ctl, color 0, key) for a blocking data communicator sharing ctl's resources. */
    private static void startDataSplit(long ctl, int key, Arena arena, String name, MemorySegment out) {
        MemorySegment cname = arena.allocateFrom(name + "-data");
        MemorySegment cfg = arena.allocate(NcclLibrary.CONFIG_SIZE + 8, 8);
        NcclLibrary.fillConfig(cfg, cname, true, true);
        out.set(JAVA_LONG, 0, 0L);
        int r;
        try {
            r = (int) NcclLibrary.ncclCommSplit.invokeExact(ctl, 0, key, out, cfg);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
            throw new NcclException("ncclCommSplit of the data communicator", r, NcclLibrary.errorString(r),
                    NcclLibrary.lastError(ctl));
        }
    }

    /** Waits for the data split issued by {@link #startDataSplit}; NCCL sets the new handle only when done. */
    private static long finishDataSplit(long ctl, MemorySegment out, long deadline, Duration timeout, String what,
                                        MemorySegment scratch) {
        awaitReady(ctl, deadline, timeout, what + " splitting its data communicator", scratch);
        long data = out.get(JAVA_LONG, 0);
        if (data == 0) {
            throw new JcclException(what + ": ncclCommSplit returned no data communicator");
        }
        awaitReady(data, deadline, timeout, what + " readying its data communicator", scratch);
        return data;
    }

    /**
     * One process driving several GPUs: forms a communicator per device (rank i on
     * {@code devices.get(i)}), initialised together in one NCCL group. Use each from its own
     * thread, or all from one thread inside {@link NcclGroup}s.
     */
    public static List<NcclCommunicator> initAll(List<CudaDevice> devices, Duration timeout) {
        Nccl.requireAvailable();
        Objects.requireNonNull(devices, "devices");
        Objects.requireNonNull(timeout, "timeout");
        if (devices.isEmpty()) {
            throw new IllegalArgumentException("devices is empty: pass at least one CudaDevice");
        }
        for (int i = 0; i < devices.size(); i++) {
            CudaDevice d = Objects.requireNonNull(devices.get(i), "devices[" + i + "]");
            d.ensureOpen();
            for (int j = 0; j < i; j++) {
                if (devices.get(j).ordinal() == d.ordinal()) {
                    throw new IllegalArgumentException("devices[" + j + "] and devices[" + i + "] are both GPU " + d.ordinal()
                            + ": NCCL needs one rank per GPU");
                }
            }
        }
        int n = devices.size();
        byte[] uniqueId = Nccl.newUniqueId();
        checkCreateArgs(0, n, uniqueId, timeout);
        long deadline = System.nanoTime() + timeout.toNanos();
        Arena[] arenas = new Arena[n];
        long[] comms = new long[n];
        long[] datas = new long[n];
        String[] names = new String[n];
        List<NcclCommunicator> result = new ArrayList<>(n);
        boolean ok = false;
        try {
            int gs = NcclLibrary.groupStart();
            if (gs != NcclLibrary.SUCCESS) {
                throw new NcclException("ncclGroupStart", gs, NcclLibrary.errorString(gs), NcclLibrary.lastError(0));
            }
            int firstError = NcclLibrary.SUCCESS;
            for (int i = 0; i < n; i++) {
                arenas[i] = Arena.ofShared();
                names[i] = commName(i);
                MemorySegment cname = arenas[i].allocateFrom(names[i]);
                MemorySegment cfg = arenas[i].allocate(NcclLibrary.CONFIG_SIZE + 8, 8);
                NcclLibrary.fillConfig(cfg, cname);
                MemorySegment uid = arenas[i].allocate(NcclLibrary.UNIQUE_ID_BYTES, 8);
                uid.copyFrom(MemorySegment.ofArray(uniqueId));
                MemorySegment out = arenas[i].allocate(8, 8);
                devices.get(i).makeCurrent();
                int r;
                try {
                    r = (int) NcclLibrary.ncclCommInitRankConfig.invokeExact(out, n, uid, i, cfg);
                } catch (Throwable t) {
                    throw rethrow(t);
                }
                comms[i] = out.get(JAVA_LONG, 0);
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS && firstError == NcclLibrary.SUCCESS) {
                    firstError = r;
                }
            }
            int ge = NcclLibrary.groupEnd();
            if (firstError != NcclLibrary.SUCCESS || (ge != NcclLibrary.SUCCESS && ge != NcclLibrary.IN_PROGRESS)) {
                int r = firstError != NcclLibrary.SUCCESS ? firstError : ge;
                throw new NcclException("ncclCommInitRankConfig of " + n + " GPUs in a group", r, NcclLibrary.errorString(r),
                        NcclLibrary.lastError(0));
            }
            MemorySegment[] scratch = new MemorySegment[n];
            for (int i = 0; i < n; i++) {
                scratch[i] = arenas[i].allocate(8, 8);
                awaitReady(comms[i], deadline, timeout, "ncclCommInitRankConfig (rank " + i + " of " + n + " on GPU "
                        + devices.get(i).ordinal() + ")", scratch[i]);
            }
            if (NONBLOCKING_DATA) {
                System.arraycopy(comms, 0, datas, 0, n);
            } else {
                MemorySegment[] outs = new MemorySegment[n];
                int g = NcclLibrary.groupStart();
                if (g != NcclLibrary.SUCCESS) {
                    throw new NcclException("ncclGroupStart", g, NcclLibrary.errorString(g), NcclLibrary.lastError(0));
                }
                try {
                    for (int i = 0; i < n; i++) {
                        outs[i] = arenas[i].allocate(8, 8);
                        devices.get(i).makeCurrent();
                        startDataSplit(comms[i], i, arenas[i], names[i], outs[i]);
                    }
                } finally {
                    g = NcclLibrary.groupEnd();
                }
                if (g != NcclLibrary.SUCCESS && g != NcclLibrary.IN_PROGRESS) {
                    throw new NcclException("ncclCommSplit of " + n + " data communicators in a group", g,
                            NcclLibrary.errorString(g), NcclLibrary.lastError(0));
                }
                for (int i = 0; i < n; i++) {
                    datas[i] = finishDataSplit(comms[i], outs[i], deadline, timeout, "rank " + i + " of " + n, scratch[i]);
                }
            }
            // One process: JCCL_CHECK's exchange goes through a store in memory shared by these ranks.
            org.jccl.bootstrap.Store local = CollectiveCheck.enabledByEnv() ? new MemoryStore() : null;
            for (int i = 0; i < n; i++) {
                result.add(new NcclCommunicator(devices.get(i), false, comms[i], datas[i], i, n, timeout, names[i],
                        arenas[i], null, local, "nccl"));
            }
            ok = true;
            return result;
        } finally {
            if (!ok) {
                for (NcclCommunicator c : result) {
                    c.abort();
                    c.close();
                }
                for (int i = result.size(); i < n; i++) {
                    if (datas[i] != 0 && datas[i] != comms[i]) {
                        abortQuietly(datas[i]);
                    }
                    abortQuietly(comms[i]);
                    if (arenas[i] != null) {
                        arenas[i].close();
                    }
                }
            }
        }
    }

    private static CollectiveCheck checkFor(org.jccl.bootstrap.Store store, String prefix, int rank, int size,
                                            Duration timeout) {
        if (!CollectiveCheck.enabledByEnv()) {
            return null;
        }
        if (store == null) {
            LOG.warn(rank, "JCCL_CHECK=1 is ignored for this NCCL communicator: it was made without a store (pass one to "
                    + "NcclCommunicator.create, or use Jccl.init)");
            return null;
        }
        LOG.info(rank, () -> "JCCL_CHECK=1: every collective's fingerprint is compared across ranks through the store");
        return new CollectiveCheck(store, prefix, rank, size, timeout);
    }

    private static void checkCreateArgs(int rank, int size, byte[] uniqueId, Duration timeout) {
        if (size < 1) {
            throw new IllegalArgumentException("size is " + size + ": a communicator needs at least one rank");
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank is " + rank + " but size is " + size + ": rank must be in [0, size)");
        }
        Objects.requireNonNull(uniqueId, "uniqueId");
        if (uniqueId.length != NcclLibrary.UNIQUE_ID_BYTES) {
            throw new IllegalArgumentException("uniqueId has " + uniqueId.length + " bytes: an ncclUniqueId has "
                    + NcclLibrary.UNIQUE_ID_BYTES + " (make it with Nccl.newUniqueId())");
        }
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout is " + timeout + ": give a positive duration");
        }
    }

    private static String commName(int rank) {
        return "jccl-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet() + "-r" + rank;
    }

    /** Polls a nonblocking communicator until it leaves ncclInProgress; the caller aborts it on failure. */
    private static void awaitReady(long c, long deadline, Duration timeout, String what, MemorySegment scratch) {
        Backoff b = new Backoff();
        while (true) {
            int s = NcclLibrary.asyncError(c, scratch);
            if (s == NcclLibrary.SUCCESS) {
                return;
            }
            if (s != NcclLibrary.IN_PROGRESS) {
                throw new NcclException(what, s, NcclLibrary.errorString(s), NcclLibrary.lastError(c));
            }
            if (System.nanoTime() - deadline > 0) {
                throw new CollectiveTimeoutException(what + " did not finish within " + timeout
                        + ": not every rank joined (check that all ranks call it with the same unique id and size)",
                        List.of());
            }
            b.idle();
        }
    }

    private static void abortQuietly(long c) {
        if (c == 0) {
            return;
        }
        try {
            int r = (int) NcclLibrary.ncclCommAbort.invokeExact(c);
            if (r != NcclLibrary.SUCCESS) {
                LOG.warn(-1, "ncclCommAbort returned " + NcclLibrary.resultName(r));
            }
        } catch (Throwable t) {
            LOG.warn(-1, "ncclCommAbort failed: " + t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    // ------------------------------------------------------------------ properties

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    /** "nccl". */
    @Override
    public String backend() {
        return "nccl";
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    /** The GPU this rank runs on. */
    public CudaDevice device() {
        return device;
    }

    /** The communicator's own stream (collectives without a stream argument run here). */
    public CudaStream stream() {
        return stream;
    }

    /** The NCCL commName given at creation (it appears in NCCL's logs). */
    public String name() {
        return name;
    }

    /** The raw ncclComm_t, for interop with other NCCL code in the process. */
    public long handle() {
        ensureOpen();
        return comm;
    }

    /** What this communicator's NCCL and GPU can do. */
    public NcclCapabilities capabilities() {
        return NcclCapabilities.of(device);
    }

    /** Starts an {@link NcclGroup} on this thread (the same as {@link NcclGroup#start()}). */
    public NcclGroup group() {
        return NcclGroup.start();
    }

    /** Whether the communicator was aborted (by {@link #abort()}, a deadline or an NCCL error). */
    public boolean isAborted() {
        return state.get() == ABORTED || (state.get() == CLOSED && failure.get() != null);
    }

    /** The sequence number of the last operation issued (0 before the first): tests use it to prove that bad input never reached NCCL. */
    long sequenceNumber() {
        lock.lock();
        try {
            return seq;
        } finally {
            lock.unlock();
        }
    }

    String describe() {
        return "rank " + rank + " of " + size + " (NCCL comm " + name + ", GPU " + device.ordinal() + ")";
    }

    static String opName(int kind) {
        return OP_NAMES[kind];
    }

    JcclException failure() {
        return failure.get();
    }

    // ------------------------------------------------------------------ validation

    private DeviceBuffer dev(Buffer b, String what) {
        if (b == null) {
            throw new IllegalArgumentException(what + " is null: pass a DeviceBuffer of GPU " + device.ordinal());
        }
        if (!(b instanceof DeviceBuffer d)) {
            throw new IllegalArgumentException(what + " is a " + b.getClass().getSimpleName() + " in " + b.location()
                    + " memory: the nccl backend moves GPU memory; copy it into a DeviceBuffer (CudaDevice.allocate, "
                    + "DeviceBuffer.copyFrom) or use the host backend");
        }
        if (!d.isLive()) {
            throw new IllegalArgumentException(what + " " + d + " was closed or its memory freed: pass a live buffer");
        }
        if (d.device().ordinal() != device.ordinal()) {
            throw new IllegalArgumentException(what + " lives on GPU " + d.device().ordinal() + " but this communicator ("
                    + describe() + ") runs on GPU " + device.ordinal() + ": allocate it on GPU " + device.ordinal());
        }
        checkType(d.type(), what);
        return d;
    }

    /** A buffer that only the root reads or writes: null is fine elsewhere. */
    private DeviceBuffer devOrNull(Buffer b, String what, boolean needed) {
        if (b == null && !needed) {
            return null;
        }
        return dev(b, what);
    }

    private void checkType(DataType t, String what) {
        if ((t == DataType.FLOAT8_E4M3 || t == DataType.FLOAT8_E5M2) && !device.supportsFp8()) {
            throw new IllegalArgumentException(what + " is " + t + ", but FP8 collectives need a GPU of compute capability 9.0+"
                    + " and NCCL 2.24+ (this is sm_" + device.computeCapabilityMajor() + device.computeCapabilityMinor()
                    + " with NCCL " + Nccl.versionString() + "): use FLOAT16 or BFLOAT16");
        }
    }

    private static void checkOp(ReduceOp op, DataType type) {
        if (op == null) {
            throw new IllegalArgumentException("op is null: pass a ReduceOp such as ReduceOp.SUM");
        }
        if (op.isBitwise()) {
            throw new IllegalArgumentException("op " + op + " is not supported by NCCL (no bitwise reductions): use SUM, "
                    + "PROD, MIN, MAX, AVG or PREMUL_SUM, or the host backend for bitwise ops");
        }
        if (op.kind() == ReduceOp.Kind.PREMUL_SUM) {
            NumberFormats.checkScalar(type, op.scalar());
        }
    }

    private static void sameShape(DeviceBuffer a, String an, DeviceBuffer b, String bn) {
        if (a.type() != b.type()) {
            throw new IllegalArgumentException(an + " is " + a.type() + " but " + bn + " is " + b.type()
                    + ": both buffers must have the same data type");
        }
        if (a.count() != b.count()) {
            throw new IllegalArgumentException(an + " has " + a.count() + " elements but " + bn + " has " + b.count()
                    + ": both buffers must have the same count");
        }
    }

    private static void sameType(DeviceBuffer a, String an, DeviceBuffer b, String bn) {
        if (a.type() != b.type()) {
            throw new IllegalArgumentException(an + " is " + a.type() + " but " + bn + " is " + b.type()
                    + ": both buffers must have the same data type");
        }
    }

    /** Same start is in place; any other overlap is refused. */
    private static void inPlaceOrDisjoint(DeviceBuffer send, DeviceBuffer recv, long expectedSendPtr, String layout) {
        if (send.overlaps(recv) && send.rawPointer() != expectedSendPtr) {
            throw new IllegalArgumentException("send and recv overlap but are not the in-place layout (" + layout
                    + "): use that layout or disjoint buffers");
        }
    }

    private long scaled(long count, DataType t) {
        return count * t.byteSize();
    }

    private void checkPeer(int peer, String what) {
        if (peer < 0 || peer >= size) {
            throw new IllegalArgumentException(what + " is " + peer + " but the communicator has ranks 0.." + (size - 1)
                    + ": pass a rank in that range");
        }
    }

    // ------------------------------------------------------------------ all-reduce

    @Override
    public void allReduce(Buffer send, Buffer recv, ReduceOp op) {
        allReduceAsync(send, recv, op, null, true).await();
    }

    /** All-reduce on the caller's stream; returns when done. */
    public void allReduce(Buffer send, Buffer recv, ReduceOp op, CudaStream stream) {
        allReduceAsync(send, recv, op, Objects.requireNonNull(stream, "stream"), true).await();
    }

    /** In-place all-reduce on the caller's stream; returns when done. */
    public void allReduce(Buffer buffer, ReduceOp op, CudaStream stream) {
        allReduce(buffer, buffer, op, stream);
    }

    @Override
    public NcclWork allReduceAsync(Buffer send, Buffer recv, ReduceOp op) {
        return allReduceAsync(send, recv, op, null, false);
    }

    @Override
    public NcclWork allReduceAsync(Buffer buffer, ReduceOp op) {
        return allReduceAsync(buffer, buffer, op, null, false);
    }

    /** Asynchronous all-reduce on the caller's stream. */
    public NcclWork allReduceAsync(Buffer send, Buffer recv, ReduceOp op, CudaStream stream) {
        return allReduceAsync(send, recv, op, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork allReduceAsync(Buffer send, Buffer recv, ReduceOp op, CudaStream s, boolean blocking) {
        DeviceBuffer sb = dev(send, "send");
        DeviceBuffer rb = dev(recv, "recv");
        sameShape(sb, "send", rb, "recv");
        checkOp(op, sb.type());
        inPlaceOrDisjoint(sb, rb, rb.rawPointer(), "send == recv");
        return launch(ALL_REDUCE, sb, rb, sb.count(), sb.type(), op, 0, s, blocking);
    }

    // ------------------------------------------------------------------ broadcast

    @Override
    public void broadcast(Buffer send, Buffer recv, int root) {
        broadcastAsync(send, recv, root, null, true).await();
    }

    /** Broadcast on the caller's stream; returns when done. */
    public void broadcast(Buffer send, Buffer recv, int root, CudaStream stream) {
        broadcastAsync(send, recv, root, Objects.requireNonNull(stream, "stream"), true).await();
    }

    @Override
    public NcclWork broadcastAsync(Buffer send, Buffer recv, int root) {
        return broadcastAsync(send, recv, root, null, false);
    }

    @Override
    public NcclWork broadcastAsync(Buffer buffer, int root) {
        return broadcastAsync(buffer, buffer, root, null, false);
    }

    /** Asynchronous broadcast on the caller's stream ({@code send} is read on the root only; null elsewhere is fine). */
    public NcclWork broadcastAsync(Buffer send, Buffer recv, int root, CudaStream stream) {
        return broadcastAsync(send, recv, root, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork broadcastAsync(Buffer send, Buffer recv, int root, CudaStream s, boolean blocking) {
        checkPeer(root, "root");
        DeviceBuffer rb = dev(recv, "recv");
        DeviceBuffer sb = devOrNull(send, "send", rank == root);
        if (sb == null) {
            sb = rb; // NCCL ignores sendbuff on non-root ranks
        }
        sameShape(sb, "send", rb, "recv");
        inPlaceOrDisjoint(sb, rb, rb.rawPointer(), "send == recv");
        return launch(BROADCAST, sb, rb, rb.count(), rb.type(), null, root, s, blocking);
    }

    // ------------------------------------------------------------------ reduce

    @Override
    public void reduce(Buffer send, Buffer recv, ReduceOp op, int root) {
        reduceAsync(send, recv, op, root, null, true).await();
    }

    /** Reduce on the caller's stream; returns when done. */
    public void reduce(Buffer send, Buffer recv, ReduceOp op, int root, CudaStream stream) {
        reduceAsync(send, recv, op, root, Objects.requireNonNull(stream, "stream"), true).await();
    }

    @Override
    public NcclWork reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root) {
        return reduceAsync(send, recv, op, root, null, false);
    }

    @Override
    public NcclWork reduceAsync(Buffer buffer, ReduceOp op, int root) {
        return reduceAsync(buffer, buffer, op, root, null, false);
    }

    /** Asynchronous reduce on the caller's stream ({@code recv} may be null on non-root ranks). */
    public NcclWork reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root, CudaStream stream) {
        return reduceAsync(send, recv, op, root, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root, CudaStream s, boolean blocking) {
        checkPeer(root, "root");
        DeviceBuffer sb = dev(send, "send");
        DeviceBuffer rb = devOrNull(recv, "recv", rank == root);
        if (rb != null) {
            sameShape(sb, "send", rb, "recv");
            inPlaceOrDisjoint(sb, rb, rb.rawPointer(), "send == recv");
        }
        checkOp(op, sb.type());
        return launch(REDUCE, sb, rb, sb.count(), sb.type(), op, root, s, blocking);
    }

    // ------------------------------------------------------------------ all-gather

    @Override
    public void allGather(Buffer send, Buffer recv) {
        allGatherAsync(send, recv, null, true).await();
    }

    /** All-gather on the caller's stream; returns when done. */
    public void allGather(Buffer send, Buffer recv, CudaStream stream) {
        allGatherAsync(send, recv, Objects.requireNonNull(stream, "stream"), true).await();
    }

    @Override
    public NcclWork allGatherAsync(Buffer send, Buffer recv) {
        return allGatherAsync(send, recv, null, false);
    }

    /** Asynchronous all-gather on the caller's stream. */
    public NcclWork allGatherAsync(Buffer send, Buffer recv, CudaStream stream) {
        return allGatherAsync(send, recv, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork allGatherAsync(Buffer send, Buffer recv, CudaStream s, boolean blocking) {
        DeviceBuffer sb = dev(send, "send");
        DeviceBuffer rb = dev(recv, "recv");
        sameType(sb, "send", rb, "recv");
        if (rb.count() != sb.count() * size) {
            throw new IllegalArgumentException("recv has " + rb.count() + " elements but all-gather of " + sb.count()
                    + " per rank over " + size + " ranks needs " + sb.count() * size);
        }
        inPlaceOrDisjoint(sb, rb, rb.rawPointer() + scaled(rank * sb.count(), sb.type()),
                "send == slice rank of recv");
        return launch(ALL_GATHER, sb, rb, sb.count(), sb.type(), null, 0, s, blocking);
    }

    // ------------------------------------------------------------------ reduce-scatter

    @Override
    public void reduceScatter(Buffer send, Buffer recv, ReduceOp op) {
        reduceScatterAsync(send, recv, op, null, true).await();
    }

    /** Reduce-scatter on the caller's stream; returns when done. */
    public void reduceScatter(Buffer send, Buffer recv, ReduceOp op, CudaStream stream) {
        reduceScatterAsync(send, recv, op, Objects.requireNonNull(stream, "stream"), true).await();
    }

    @Override
    public NcclWork reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op) {
        return reduceScatterAsync(send, recv, op, null, false);
    }

    /** Asynchronous reduce-scatter on the caller's stream. */
    public NcclWork reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op, CudaStream stream) {
        return reduceScatterAsync(send, recv, op, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op, CudaStream s, boolean blocking) {
        DeviceBuffer sb = dev(send, "send");
        DeviceBuffer rb = dev(recv, "recv");
        sameType(sb, "send", rb, "recv");
        if (sb.count() != rb.count() * size) {
            throw new IllegalArgumentException("send has " + sb.count() + " elements but reduce-scatter into " + rb.count()
                    + " per rank over " + size + " ranks needs " + rb.count() * size);
        }
        checkOp(op, sb.type());
        // In place: recv is slice `rank` of send, i.e. sendbuff == recvbuff - rank * count.
        if (sb.overlaps(rb) && rb.rawPointer() != sb.rawPointer() + scaled(rank * rb.count(), sb.type())) {
            throw new IllegalArgumentException("send and recv overlap but are not the in-place layout (recv == slice rank"
                    + " of send): use that layout or disjoint buffers");
        }
        return launch(REDUCE_SCATTER, sb, rb, rb.count(), sb.type(), op, 0, s, blocking);
    }

    // ------------------------------------------------------------------ all-to-all

    @Override
    public void allToAll(Buffer send, Buffer recv) {
        allToAllAsync(send, recv, null, true).await();
    }

    /** All-to-all on the caller's stream; returns when done. */
    public void allToAll(Buffer send, Buffer recv, CudaStream stream) {
        allToAllAsync(send, recv, Objects.requireNonNull(stream, "stream"), true).await();
    }

    @Override
    public NcclWork allToAllAsync(Buffer send, Buffer recv) {
        return allToAllAsync(send, recv, null, false);
    }

    @Override
    public NcclWork allToAllAsync(Buffer buffer) {
        return allToAllAsync(buffer, buffer, null, false);
    }

    /** Asynchronous all-to-all on the caller's stream. */
    public NcclWork allToAllAsync(Buffer send, Buffer recv, CudaStream stream) {
        return allToAllAsync(send, recv, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork allToAllAsync(Buffer send, Buffer recv, CudaStream s, boolean blocking) {
        DeviceBuffer sb = dev(send, "send");
        DeviceBuffer rb = dev(recv, "recv");
        sameShape(sb, "send", rb, "recv");
        if (sb.count() % size != 0) {
            throw new IllegalArgumentException("send has " + sb.count() + " elements, not a multiple of the " + size
                    + " ranks: give it size() x per-rank count elements");
        }
        inPlaceOrDisjoint(sb, rb, rb.rawPointer(), "send == recv");
        return launch(ALL_TO_ALL, sb, rb, sb.count() / size, sb.type(), null, 0, s, blocking);
    }

    // ------------------------------------------------------------------ gather / scatter

    @Override
    public void gather(Buffer send, Buffer recv, int root) {
        gatherAsync(send, recv, root, null, true).await();
    }

    @Override
    public NcclWork gatherAsync(Buffer send, Buffer recv, int root) {
        return gatherAsync(send, recv, root, null, false);
    }

    /** Asynchronous gather on the caller's stream ({@code recv} may be null on non-root ranks). */
    public NcclWork gatherAsync(Buffer send, Buffer recv, int root, CudaStream stream) {
        return gatherAsync(send, recv, root, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork gatherAsync(Buffer send, Buffer recv, int root, CudaStream s, boolean blocking) {
        checkPeer(root, "root");
        DeviceBuffer sb = dev(send, "send");
        DeviceBuffer rb = devOrNull(recv, "recv", rank == root);
        if (rank == root) {
            sameType(sb, "send", rb, "recv");
            if (rb.count() != sb.count() * size) {
                throw new IllegalArgumentException("recv has " + rb.count() + " elements but gathering " + sb.count()
                        + " per rank from " + size + " ranks needs " + sb.count() * size);
            }
            inPlaceOrDisjoint(sb, rb, rb.rawPointer() + scaled(root * sb.count(), sb.type()),
                    "send == slice root of recv");
        } else {
            rb = null;
        }
        return launch(GATHER, sb, rb, sb.count(), sb.type(), null, root, s, blocking);
    }

    @Override
    public void scatter(Buffer send, Buffer recv, int root) {
        scatterAsync(send, recv, root, null, true).await();
    }

    @Override
    public NcclWork scatterAsync(Buffer send, Buffer recv, int root) {
        return scatterAsync(send, recv, root, null, false);
    }

    /** Asynchronous scatter on the caller's stream ({@code send} may be null on non-root ranks). */
    public NcclWork scatterAsync(Buffer send, Buffer recv, int root, CudaStream stream) {
        return scatterAsync(send, recv, root, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork scatterAsync(Buffer send, Buffer recv, int root, CudaStream s, boolean blocking) {
        checkPeer(root, "root");
        DeviceBuffer rb = dev(recv, "recv");
        DeviceBuffer sb = devOrNull(send, "send", rank == root);
        if (rank == root) {
            sameType(sb, "send", rb, "recv");
            if (sb.count() != rb.count() * size) {
                throw new IllegalArgumentException("send has " + sb.count() + " elements but scattering " + rb.count()
                        + " per rank to " + size + " ranks needs " + rb.count() * size);
            }
            if (sb.overlaps(rb) && rb.rawPointer() != sb.rawPointer() + scaled(root * rb.count(), sb.type())) {
                throw new IllegalArgumentException("send and recv overlap but are not the in-place layout (recv == slice "
                        + "root of send): use that layout or disjoint buffers");
            }
        } else {
            sb = null;
        }
        return launch(SCATTER, sb, rb, rb.count(), rb.type(), null, root, s, blocking);
    }

    // ------------------------------------------------------------------ point to point

    @Override
    public void send(Buffer buffer, int peer) {
        sendAsync(buffer, peer, null, true).await();
    }

    @Override
    public NcclWork sendAsync(Buffer buffer, int peer) {
        return sendAsync(buffer, peer, null, false);
    }

    /** Asynchronous send on the caller's stream. */
    public NcclWork sendAsync(Buffer buffer, int peer, CudaStream stream) {
        return sendAsync(buffer, peer, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork sendAsync(Buffer buffer, int peer, CudaStream s, boolean blocking) {
        checkPeer(peer, "peer");
        checkSelf(peer);
        DeviceBuffer b = dev(buffer, "buffer");
        return launch(SEND, b, null, b.count(), b.type(), null, peer, s, blocking);
    }

    @Override
    public void recv(Buffer buffer, int peer) {
        recvAsync(buffer, peer, null, true).await();
    }

    @Override
    public NcclWork recvAsync(Buffer buffer, int peer) {
        return recvAsync(buffer, peer, null, false);
    }

    /** Asynchronous receive on the caller's stream. */
    public NcclWork recvAsync(Buffer buffer, int peer, CudaStream stream) {
        return recvAsync(buffer, peer, Objects.requireNonNull(stream, "stream"), false);
    }

    private NcclWork recvAsync(Buffer buffer, int peer, CudaStream s, boolean blocking) {
        checkPeer(peer, "peer");
        checkSelf(peer);
        DeviceBuffer b = dev(buffer, "buffer");
        return launch(RECV, null, b, b.count(), b.type(), null, peer, s, blocking);
    }

    private void checkSelf(int peer) {
        if (peer == rank && NcclGroup.current() == null) {
            throw new IllegalArgumentException("peer is this rank (" + rank + "): a send to self only completes with its "
                    + "matching recv in the same NcclGroup");
        }
    }

    // ------------------------------------------------------------------ barrier

    @Override
    public void barrier() {
        barrierAsync(true).await();
    }

    @Override
    public NcclWork barrierAsync() {
        return barrierAsync(false);
    }

    private NcclWork barrierAsync(boolean blocking) {
        DeviceBuffer b;
        ensureNotClosed();
        lock.lock();
        try {
            ensureOpen();
            if (barrierBuffer == null) {
                barrierBuffer = device.allocate(DataType.INT32, 1);
            }
            b = barrierBuffer;
        } finally {
            lock.unlock();
        }
        // NCCL has no barrier: an all-reduce of one integer makes every rank wait for all others.
        return launch(BARRIER, b, b, 1, DataType.INT32, ReduceOp.SUM, 0, null, blocking);
    }

    // ------------------------------------------------------------------ the launch path

    private NcclWork launch(int kind, DeviceBuffer send, DeviceBuffer recv, long count, DataType type, ReduceOp op,
                            int root, CudaStream userStream, boolean blocking) {
        NcclGroup group = NcclGroup.current();
        if (blocking && group != null) {
            throw new InvalidUsageException("blocking " + OP_NAMES[kind] + " inside an NcclGroup can never finish before "
                    + "the group is launched: call " + OP_NAMES[kind] + "Async and wait after closing the group");
        }
        ensureNotClosed();
        if (group == null && !ring.hasRoom()) {
            makeRoom(); // outside the lock
        }
        if (watch != null) {
            checkLiveness(null, OP_NAMES[kind]);
        }
        long sp = send == null ? 0 : send.rawPointer();
        long rp = recv == null ? 0 : recv.rawPointer();
        long sh = userStream == null ? streamHandle : userStream.handle();
        NcclWork w;
        if (check != null && kind != SEND && kind != RECV) {
            return launchChecked(kind, sp, rp, count, type, op, root, sh, blocking, group);
        }
        lock.lock();
        try {
            ensureOpen();
            long s = ++seq;
            int r = callNative(kind, s, sp, rp, count, type, op, root, sh);
            w = newWork(kind, s, type, count, sh, op, root, kind != SEND && kind != RECV ? ++collIssued : 0, blocking);
            if (group != null) {
                group.add(this, w);
                return w;
            }
            arm(w, r);
        } finally {
            lock.unlock();
        }
        return handOver(w, blocking);
    }

    /**
     * The native call(s) of operation {@code s} with the context made current: SUCCESS or
     * IN_PROGRESS, else an NcclException. Under the lock.
     */
    private int callNative(int kind, long s, long sp, long rp, long count, DataType type, ReduceOp op, int root,
                           long sh) {
        device.makeCurrent(lockedScratch); // the lock's own scratch: no thread-local lookup
        int red = op == null ? 0 : redOp(op, type);
        int r = call(kind, sp, rp, count, type, red, root, sh);
        if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
            throw new NcclException("nccl " + OP_NAMES[kind] + " #" + s + " (" + type + " x " + count + ") on "
                    + describe(), r, NcclLibrary.errorString(r), NcclLibrary.lastError(comm));
        }
        return r;
    }

    /**
     * The work of operation {@code s}, its deadline starting now. Under the lock. The flight
     * recorder learns of it later, from the ring (see {@link #flushTrace}).
     */
    private NcclWork newWork(int kind, long s, DataType type, long count, long sh, ReduceOp op, int root,
                             long collective, boolean blocking) {
        long budget = callBudgetNanos();
        long now = System.nanoTime(); // the one clock reading of a launch: deadline, trace, watchdog
        noteLaunch(now);
        NcclWork w = new NcclWork(this, kind, s, type, count, sh, now + budget, blocking,
                op == null ? -1 : op.kind().ordinal());
        w.budgetNanos = budget;
        w.peer = root;
        w.collective = collective;
        return w;
    }

    /** Records the event that completes {@code w} once NCCL has enqueued it ({@code r}: the call's result). Under the lock. */
    private void arm(NcclWork w, int r) {
        if (r == NcclLibrary.IN_PROGRESS) {
            waitNotInProgress(w);
        }
        // Blocking calls wait on an event too: polling the stream instead measured ~3 us slower per call
        // on 4x H200 (NCCL 2.28), though it saves the record.
        armInRing(w);
    }

    /**
     * Records the event of the ring's next slot after {@code w} and publishes {@code w} there.
     * Under the lock, with the context current.
     */
    private void armInRing(NcclWork w) {
        if (!ring.hasRoom()) {
            ring.advanceHead();
            if (ring.blocker() != null) {
                awaitSlotLocked(w);
            }
        }
        w.arm(ring.eventFor(device));
        ring.publish(w);
    }

    /**
     * Another thread filled the ring between this launch's check and its lock (or a group arms
     * more works than the ring has free slots): waits here for the oldest work, with its deadline.
     */
    private void awaitSlotLocked(NcclWork w) {
        Backoff b = new Backoff();
        NcclWork full;
        while ((full = ring.blocker()) != null) {
            if (full.pollEvent()) {
                continue;
            }
            if (System.nanoTime() - full.deadline > 0) {
                onTimeout(full); // aborts the communicator: every pending work fails
            }
            if (state.get() != OPEN) {
                JcclException f = failure.get();
                JcclException e = failureFor(w, f != null ? f : new AbortedException(describe() + " is closed"));
                w.fail(e);
                throw e;
            }
            b.idle();
        }
    }

    /**
     * The ring looks full: settles finished works (most are, by now, on the GPU). One query of the
     * work half a ring younger than the oldest completes everything before it on its stream, so a
     * caller that never waits pays one query per {@link WorkRing#CAPACITY}/2 launches, not one per
     * launch; else it waits for the oldest work.
     */
    private void makeRoom() {
        long head = ring.advanceHead();
        if (ring.hasRoom()) {
            return;
        }
        NcclWork mid = ring.at(head + WorkRing.CAPACITY / 2);
        if (mid != null && !mid.isFinished()) {
            device.makeCurrent();
            mid.pollEvent();
            head = ring.advanceHead();
            if (ring.hasRoom()) {
                return;
            }
        }
        NcclWork oldest = ring.blocker();
        if (oldest != null) {
            awaitQuietly(oldest);
            ring.advanceHead();
        }
    }

    /** Waits for {@code w}; a failure is left to the caller's launch to report. */
    private static void awaitQuietly(NcclWork w) {
        try {
            w.await();
        } catch (JcclException e) {
            // the communicator failed: the launch that waited reports it
        }
    }

    /** An asynchronous work is the watchdog's to watch; a blocking one is awaited by the caller. */
    private NcclWork handOver(NcclWork w, boolean blocking) {
        if (!blocking) {
            Watchdog.wake();
        }
        return w;
    }

    /**
     * JCCL_CHECK: the fingerprint exchange runs before NCCL sees the call, outside the lock (an
     * abort must never wait behind a store read). Inside a group the native call is deferred to
     * the group's close, which verifies every fingerprint first.
     */
    private NcclWork launchChecked(int kind, long sp, long rp, long count, DataType type, ReduceOp op, int root, long sh,
                                   boolean blocking, NcclGroup group) {
        long cs;
        lock.lock();
        try {
            ensureOpen();
            cs = ++collIssued;
        } finally {
            lock.unlock();
        }
        byte[] fp = CollectiveCheck.fingerprint(kind, type, count, root, op);
        check.post(cs, fp);
        if (group == null) {
            verifyCheck(cs, fp, kind);
        }
        NcclWork w;
        lock.lock();
        try {
            ensureOpen();
            long s = ++seq;
            w = newWork(kind, s, type, count, sh, op, root, cs, blocking);
            if (group != null) {
                group.addChecked(this, w, cs, fp, () -> deferredCall(w, kind, sp, rp, count, type, op, root, sh));
                return w;
            }
            arm(w, callNative(kind, s, sp, rp, count, type, op, root, sh));
        } finally {
            lock.unlock();
        }
        return handOver(w, blocking);
    }

    /** JCCL_CHECK: compares this rank's fingerprint of collective {@code cs} with every other rank's. */
    void verifyCheck(long cs, byte[] fp, int kind) {
        try {
            verifyCheck0(cs, fp, kind);
        } catch (CollectiveTimeoutException e) {
            noteFailure(e);
            throw e;
        }
    }

    private void verifyCheck0(long cs, byte[] fp, int kind) {
        check.verify(cs, fp, OP_NAMES[kind] + " (collective #" + cs + ") on " + describe(), () -> {
            if (state.get() == OPEN) {
                return null;
            }
            JcclException f = failure.get();
            return f != null ? f : new AbortedException(describe() + " was closed while JCCL_CHECK waited for the other ranks");
        });
    }

    /** A checked operation of a group, called by the group's close after every fingerprint matched. */
    private void deferredCall(NcclWork w, int kind, long sp, long rp, long count, DataType type, ReduceOp op, int root,
                              long sh) {
        lock.lock();
        try {
            ensureOpen();
            callNative(kind, w.sequence(), sp, rp, count, type, op, root, sh);
        } finally {
            lock.unlock();
        }
    }

    /** The native call(s) of one operation. Runs under the lock with the context current. */
    private int call(int kind, long sp, long rp, long count, DataType type, int red, int root, long sh) {
        int dt = type.ncclValue();
        try {
            return switch (kind) {
                case ALL_REDUCE, BARRIER -> (int) NcclLibrary.ncclAllReduce.invokeExact(sp, rp, count, dt, red, comm, sh);
                case BROADCAST -> (int) NcclLibrary.ncclBroadcast.invokeExact(sp, rp, count, dt, root, comm, sh);
                case REDUCE -> (int) NcclLibrary.ncclReduce.invokeExact(sp, rp, count, dt, red, root, comm, sh);
                case ALL_GATHER -> (int) NcclLibrary.ncclAllGather.invokeExact(sp, rp, count, dt, comm, sh);
                case REDUCE_SCATTER -> (int) NcclLibrary.ncclReduceScatter.invokeExact(sp, rp, count, dt, red, comm, sh);
                case SEND -> (int) NcclLibrary.ncclSend.invokeExact(sp, count, dt, root, comm, sh);
                case RECV -> (int) NcclLibrary.ncclRecv.invokeExact(rp, count, dt, root, comm, sh);
                case ALL_TO_ALL -> allToAllCall(sp, rp, count, type, sh);
                case GATHER -> gatherCall(sp, rp, count, type, root, sh);
                case SCATTER -> scatterCall(sp, rp, count, type, root, sh);
                default -> throw new IllegalStateException("unknown op " + kind);
            };
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private boolean nativeA2A() {
        return !forceSendRecvFallback && Nccl.hasNativeAllToAll();
    }

    private int allToAllCall(long sendPtr, long rp, long count, DataType type, long sh) throws Throwable {
        long block = scaled(count, type);
        long staged = sendPtr;
        if (sendPtr == rp && count > 0 && size > 1) {
            // NCCL's all-to-all is out of place only: stage the input in the communicator's scratch.
            staged = scratch(block * size);
            CudaDriver.memcpyDtoDAsync(staged, sendPtr, block * size, sh);
        }
        long sp = staged;
        if (nativeA2A()) {
            return (int) NcclLibrary.ncclAlltoAll.invokeExact(sp, rp, count, type.ncclValue(), comm, sh);
        }
        return grouped(() -> {
            for (int p = 0; p < size; p++) {
                if (p == rank) {
                    if (block > 0 && sp != rp) {
                        CudaDriver.memcpyDtoDAsync(rp + p * block, sp + p * block, block, sh);
                    }
                    continue;
                }
                int r = (int) NcclLibrary.ncclSend.invokeExact(sp + p * block, count, type.ncclValue(), p, comm, sh);
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                    return r;
                }
                r = (int) NcclLibrary.ncclRecv.invokeExact(rp + p * block, count, type.ncclValue(), p, comm, sh);
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                    return r;
                }
            }
            return NcclLibrary.SUCCESS;
        });
    }

    private int gatherCall(long sp, long rp, long count, DataType type, int root, long sh) throws Throwable {
        if (nativeA2A()) {
            return (int) NcclLibrary.ncclGather.invokeExact(sp, rp, count, type.ncclValue(), root, comm, sh);
        }
        long block = scaled(count, type);
        return grouped(() -> {
            if (rank != root) {
                return (int) NcclLibrary.ncclSend.invokeExact(sp, count, type.ncclValue(), root, comm, sh);
            }
            for (int p = 0; p < size; p++) {
                if (p == rank) {
                    if (block > 0 && sp != rp + p * block) {
                        CudaDriver.memcpyDtoDAsync(rp + p * block, sp, block, sh);
                    }
                    continue;
                }
                int r = (int) NcclLibrary.ncclRecv.invokeExact(rp + p * block, count, type.ncclValue(), p, comm, sh);
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                    return r;
                }
            }
            return NcclLibrary.SUCCESS;
        });
    }

    private int scatterCall(long sp, long rp, long count, DataType type, int root, long sh) throws Throwable {
        if (nativeA2A()) {
            return (int) NcclLibrary.ncclScatter.invokeExact(sp, rp, count, type.ncclValue(), root, comm, sh);
        }
        long block = scaled(count, type);
        return grouped(() -> {
            if (rank != root) {
                return (int) NcclLibrary.ncclRecv.invokeExact(rp, count, type.ncclValue(), root, comm, sh);
            }
            for (int p = 0; p < size; p++) {
                if (p == rank) {
                    if (block > 0 && rp != sp + p * block) {
                        CudaDriver.memcpyDtoDAsync(rp, sp + p * block, block, sh);
                    }
                    continue;
                }
                int r = (int) NcclLibrary.ncclSend.invokeExact(sp + p * block, count, type.ncclValue(), p, comm, sh);
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                    return r;
                }
            }
            return NcclLibrary.SUCCESS;
        });
    }

    /** A native body that may throw (the downcalls declare Throwable). */
    private interface NativeBody {
        int run() throws Throwable;
    }

    /** Runs {@code body} between ncclGroupStart and ncclGroupEnd; returns the first failure or the end's result. */
    private static int grouped(NativeBody body) throws Throwable {
        int r = NcclLibrary.groupStart();
        if (r != NcclLibrary.SUCCESS) {
            return r;
        }
        int inner;
        try {
            inner = body.run();
        } finally {
            r = NcclLibrary.groupEnd();
        }
        return inner != NcclLibrary.SUCCESS ? inner : r;
    }

    /** A device scratch area of at least {@code bytes} (under the lock). */
    private long scratch(long bytes) {
        if (scratch == null || scratch.byteSize() < bytes) {
            if (scratch != null) {
                // A stream may still read the old area: keep it until the communicator closes.
                retiredScratch.add(scratch);
            }
            scratch = device.allocate(DataType.UINT8, bytes);
        }
        return scratch.rawPointer();
    }

    /** The ncclRedOp_t for {@code op} on {@code type}; PreMulSum operators are created once per (type, scalar). */
    private int redOp(ReduceOp op, DataType type) {
        if (op.kind() != ReduceOp.Kind.PREMUL_SUM) {
            return op.kind().ncclValue();
        }
        long key = Double.doubleToLongBits(op.scalar()) * 31 + type.ordinal();
        Integer cached = preMulOps.get(key);
        if (cached != null) {
            return cached;
        }
        MemorySegment s = lockedScratch;
        s.fill((byte) 0);
        NumberFormats.put(s.asSlice(8), type, 0, op.scalar());
        int r;
        try {
            r = (int) NcclLibrary.ncclRedOpCreatePreMulSum.invokeExact(s, s.asSlice(8), type.ncclValue(),
                    NcclLibrary.SCALAR_HOST_IMMEDIATE, comm);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r != NcclLibrary.SUCCESS) {
            throw new NcclException("ncclRedOpCreatePreMulSum(" + op.scalar() + ", " + type + ") on " + describe(), r,
                    NcclLibrary.errorString(r), NcclLibrary.lastError(comm));
        }
        int id = s.get(JAVA_INT, 0);
        if (preMulOps.size() >= 64) {
            destroyPreMulOps();
        }
        preMulOps.put(key, id);
        return id;
    }

    private void destroyPreMulOps() {
        for (int id : preMulOps.values()) {
            try {
                int r = (int) NcclLibrary.ncclRedOpDestroy.invokeExact(id, comm);
                if (r != NcclLibrary.SUCCESS) {
                    LOG.warn(rank, "ncclRedOpDestroy returned " + NcclLibrary.resultName(r));
                }
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }
        preMulOps.clear();
    }

    /** Waits (under the lock) until NCCL has finished enqueueing a nonblocking call. */
    private void waitNotInProgress(NcclWork w) {
        Backoff b = new Backoff();
        while (true) {
            if (state.get() != OPEN) {
                throw failureFor(w, failure.get() != null ? failure.get() : new AbortedException(describe() + " is closed"));
            }
            int s = NcclLibrary.asyncError(comm, lockedScratch);
            if (s == NcclLibrary.SUCCESS) {
                return;
            }
            if (s != NcclLibrary.IN_PROGRESS) {
                NcclException e = new NcclException("nccl " + w.describe() + " on " + describe(), s,
                        NcclLibrary.errorString(s), NcclLibrary.lastError(comm));
                abortWith(e); // the lock is reentrant
                throw e;
            }
            if (System.nanoTime() - w.deadline > 0) {
                CollectiveTimeoutException e = timeoutFor(w, "NCCL was still enqueueing it", List.of());
                abortWith(e);
                throw e;
            }
            b.idle();
        }
    }

    /** Arms the works an NcclGroup issued on this communicator, once ncclGroupEnd returned. */
    void armGroupWorks(List<NcclWork> works) {
        lock.lock();
        try {
            if (state.get() != OPEN) {
                JcclException e = failure.get() != null ? failure.get() : new AbortedException(describe() + " is closed");
                for (NcclWork w : works) {
                    w.fail(failureFor(w, e));
                }
                throw e;
            }
            device.makeCurrent();
            waitNotInProgress(works.get(0));
            for (NcclWork w : works) {
                armInRing(w);
            }
        } catch (JcclException e) {
            for (NcclWork w : works) {
                w.fail(failureFor(w, e));
            }
            throw e;
        } finally {
            lock.unlock();
        }
        Watchdog.wake();
    }

    private void noteLaunch(long now) {
        if (now - lastLaunch > LAUNCH_STAMP_NANOS) {
            lastLaunch = now;
        }
    }

    // ------------------------------------------------------------------ failure handling

    /**
     * Throws at once, without the lock, for a closed communicator: with several GPUs in one process
     * its teardown can hold the lock for as long as NCCL's finalize waits for other GPUs.
     */
    private void ensureNotClosed() {
        if (state.get() == CLOSED) {
            ensureOpen();
        }
    }

    private void ensureOpen() {
        int s = state.get();
        if (s == OPEN) {
            return;
        }
        if (s == CLOSED) {
            // The user closed it: whatever its teardown met afterwards (a finalize that had to abort) is not news.
            throw new InvalidUsageException(describe() + " is closed: create a new communicator");
        }
        JcclException f = failure.get();
        if (f instanceof PeerFailureException pf) {
            throw new PeerFailureException(pf.rank(), describe() + " failed earlier: " + f.getMessage()
                    + ": create a new communicator (shrinkExcludingFailed() keeps the survivors)", f);
        }
        if (s == ABORTED || f != null) {
            throw new AbortedException(describe() + " was aborted" + (f == null ? "" : " (" + f.getMessage() + ")")
                    + ": create a new communicator");
        }
        throw new InvalidUsageException(describe() + " is closed: create a new communicator");
    }

    /** A work-specific failure carrying the communicator's cause. */
    JcclException failureFor(NcclWork w, JcclException cause) {
        if (cause.getMessage() != null && cause.getMessage().contains(w.describe())) {
            return cause;
        }
        JcclException e;
        if (cause instanceof CollectiveTimeoutException t) {
            e = new CollectiveTimeoutException(w.describe() + " on " + describe() + " failed: " + cause.getMessage(),
                    t.missingRanks());
            e.initCause(cause);
        } else if (cause instanceof PeerFailureException pf) {
            e = new PeerFailureException(pf.rank(), w.describe() + " on " + describe() + " failed: " + cause.getMessage(),
                    cause);
        } else if (cause instanceof AbortedException) {
            e = new AbortedException(w.describe() + " on " + describe() + " failed: " + cause.getMessage());
            e.initCause(cause);
        } else {
            e = new JcclException(w.describe() + " on " + describe() + " failed: " + cause.getMessage(), cause);
        }
        return e;
    }

    private CollectiveTimeoutException timeoutFor(NcclWork w, String detail, List<Integer> missing) {
        int async = NcclLibrary.SUCCESS;
        String last = "";
        if (state.get() == OPEN) {
            async = NcclLibrary.asyncError(comm, watchScratch);
            last = NcclLibrary.lastError(comm);
        }
        return new CollectiveTimeoutException("nccl " + w.describe() + " on " + describe() + " did not complete within "
                + Duration.ofNanos(w.budgetNanos) + " (" + detail + "); " + missingText(w, missing) + "; NCCL state "
                + NcclLibrary.resultName(async) + (last.isBlank() ? "" : ", last NCCL error: " + last.strip()) + "; the communicator was aborted", missing);
    }

    private String missingText(NcclWork w, List<Integer> missing) {
        if (w.kind() == SEND || w.kind() == RECV) {
            return "its peer, rank " + w.peer + ", never matched it";
        }
        if (missing.isEmpty()) {
            return jobStore == null ? "a peer rank is probably dead or stuck (without a store jccl cannot tell which)"
                    : "every rank had reached it: NCCL itself is stuck";
        }
        Liveness.Watch lw = watch;
        return "rank(s) " + missing + " had not reached collective #" + w.collective + " (dead, stuck or elsewhere)"
                + (lw == null ? "" : lw.silentNote(missing));
    }

    /**
     * Which ranks never reached {@code w}, learned through the store: every rank that times out
     * posts how many collectives it issued, and ranks that post none that high within 2 s are
     * missing. A send or receive names its peer.
     */
    private List<Integer> missingFor(NcclWork w) {
        if (w.kind() == SEND || w.kind() == RECV) {
            return List.of(w.peer);
        }
        if (jobStore == null || w.collective <= 0) {
            return List.of();
        }
        try {
            String base = scope + "/progress/";
            long issued;
            lock.lock();
            try {
                issued = collIssued;
            } finally {
                lock.unlock();
            }
            jobStore.set(base + rank, Long.toString(issued).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            long until = System.nanoTime() + 2_000_000_000L;
            while (true) {
                List<Integer> missing = new ArrayList<>();
                for (int r = 0; r < size; r++) {
                    if (r == rank) {
                        continue;
                    }
                    byte[] v = jobStore.tryGet(base + r);
                    if (v == null || Long.parseLong(new String(v, java.nio.charset.StandardCharsets.US_ASCII)) < w.collective) {
                        missing.add(r);
                    }
                }
                if (missing.isEmpty() || System.nanoTime() - until > 0) {
                    return missing;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(50_000_000);
            }
        } catch (RuntimeException e) {
            LOG.warn(rank, "could not learn the missing ranks of " + w.describe() + " through the store: " + e);
            return List.of();
        }
    }

    /** Called by a waiter or the watchdog when {@code w} passed its deadline. */
    void onTimeout(NcclWork w) {
        if (state.get() != OPEN) {
            JcclException f = failure.get();
            w.fail(failureFor(w, f != null ? f : new AbortedException(describe() + " is closed")));
            return;
        }
        CollectiveTimeoutException e;
        List<Integer> missing = missingFor(w);
        if (state.get() != OPEN) {
            JcclException f = failure.get();
            w.fail(failureFor(w, f != null ? f : new AbortedException(describe() + " is closed")));
            return;
        }
        if (lock.tryLock()) {
            try {
                e = timeoutFor(w, "its event never fired", missing);
            } finally {
                lock.unlock();
            }
        } else {
            e = new CollectiveTimeoutException("nccl " + w.describe() + " on " + describe() + " did not complete within "
                    + Duration.ofNanos(w.budgetNanos) + "; " + missingText(w, missing) + "; the communicator was aborted",
                    missing);
        }
        // NCCL can end the kernels of the other ranks on this rank's abort as if the collective had
        // completed: give their deadlines (which came up about now) time to fire first.
        abortWith(e, 2_000_000_000L, true);
        w.fail(failureFor(w, e));
    }

    /** Polls ncclCommGetAsyncError (skipped while another thread holds the lock); aborts on an error. */
    void checkAsyncError(NcclWork oldest) {
        Liveness.Watch lw = watch;
        if (lw != null && state.get() == OPEN) {
            int dead = lw.firstDead();
            if (dead >= 0) {
                failByLiveness(lw, dead, (oldest == null ? "pending work" : oldest.describe()) + " on " + describe());
                return;
            }
        }
        if (state.get() != OPEN || !lock.tryLock()) {
            return;
        }
        int s;
        String last = "";
        try {
            if (state.get() != OPEN) {
                return;
            }
            s = NcclLibrary.asyncError(comm, watchScratch);
            if (s != NcclLibrary.SUCCESS && s != NcclLibrary.IN_PROGRESS) {
                last = NcclLibrary.lastError(comm);
            }
        } finally {
            lock.unlock();
        }
        if (s != NcclLibrary.SUCCESS && s != NcclLibrary.IN_PROGRESS) {
            String what = oldest == null ? "" : " while " + oldest.describe() + " was pending";
            abortWith(new NcclException("NCCL asynchronous error on " + describe() + what, s, NcclLibrary.errorString(s),
                    last));
        }
    }

    /** Aborts the NCCL communicator once and fails every pending work with {@code cause}. */
    void abortWith(JcclException cause) {
        abortWith(cause, 0);
    }

    /**
     * Fails the communicator with {@code cause} at once and calls ncclCommAbort after {@code
     * delayNanos}. A delay is for deaths learned from heartbeats: the first rank to learn one must
     * not abort NCCL before the other survivors have learned it too, because NCCL can end their
     * kernels on a peer's abort as if the collective had completed.
     */
    void abortWith(JcclException cause, long delayNanos) {
        abortWith(cause, delayNanos, false);
    }

    /**
     * As {@link #abortWith(JcclException, long)}; with {@code post}, the failure is also posted in
     * the job's store for the other ranks (their {@link FailureWatch} fails their pending work with
     * it), and NCCL's abort waits at least {@link #POST_DELAY_NANOS} so that they have read it
     * before this rank's abort can end their kernels.
     */
    void abortWith(JcclException cause, long delayNanos, boolean post) {
        noteFailure(cause);
        if (!failure.compareAndSet(null, cause)) {
            return;
        }
        boolean wasOpen = state.compareAndSet(OPEN, ABORTED);
        LOG.warn(rank, "aborting " + describe() + ": " + cause.getMessage());
        if (wasOpen) {
            autoDump(cause.getMessage());
        }
        if (post && jobStore != null && wasOpen) {
            posted = LateAborts.execute(() -> postFailure(cause));
            delayNanos = Math.max(delayNanos, POST_DELAY_NANOS);
        }
        if (wasOpen) {
            if (delayNanos <= 0) {
                nativeAbort();
            } else {
                nativeAbortAt = System.nanoTime() + delayNanos;
                LateAborts.schedule(this::nativeAbort, delayNanos);
            }
        }
        failPending(cause);
    }

    /** How long a posting rank waits before NCCL's abort: ten periods of the peers' FailureWatch. */
    static final long POST_DELAY_NANOS = 10 * FailureWatch.PERIOD_NANOS;

    /**
     * The last JCCL_TRACE_BUFFER operations; guarded by its own monitor. A launch does not touch
     * it: the works it armed are recorded from the ring, in launch order, by whoever next needs
     * the record current (a completion, a dump), which keeps its monitor and arrays off the
     * launch path. Every work is recorded by its own completion or failure at the latest; only if
     * a full ring reused its slot between its completion and that record (a rare race) does it
     * land out of launch order.
     */
    private final org.jccl.diag.FlightRecorder recorder = org.jccl.diag.FlightRecorder.fromEnv(OP_NAMES);
    private final java.nio.file.Path traceDir = org.jccl.diag.FlightRecorder.traceDirFromEnv();
    /** Ring index up to which works are in the recorder; guarded by the recorder. */
    private long traced;

    /** Records the works armed since the last call, in launch order. Holding the recorder. */
    private void flushTrace() {
        long t = ring.tail();
        for (long i = Math.max(traced, t - WorkRing.CAPACITY); i < t; i++) {
            NcclWork w = ring.at(i);
            if (w != null && w.ringIndex == i && w.trace < 0) {
                recordLaunch(w);
            }
        }
        traced = t;
    }

    /** Holding the recorder. */
    private void recordLaunch(NcclWork w) {
        int kind = w.kind();
        boolean p2p = kind == SEND || kind == RECV;
        boolean rooted = kind == BROADCAST || kind == REDUCE || kind == GATHER || kind == SCATTER;
        DataType type = w.type();
        w.trace = recorder.schedule(w.collective, kind, type == null ? -1 : type.ordinal(), w.count(), w.redop,
                rooted ? w.peer : -1, p2p ? w.peer : -1, w.deadline - w.budgetNanos);
        recorder.startedNow(w.trace); // enqueued = started, as far as the host can tell
    }

    void traceEnd(NcclWork w, boolean ok) {
        if (!recorder.isRecording()) {
            return;
        }
        long now = System.nanoTime();
        synchronized (recorder) {
            flushTrace();
            if (w.trace < 0) {
                recordLaunch(w); // failed before it was armed: out of launch order
            }
            if (ok) {
                recorder.completed(w.trace, now);
            } else {
                recorder.failed(w.trace);
            }
        }
    }

    /** The name of this communicator in dumps: the same on every rank, so that jccl doctor lines them up. */
    private String traceName() {
        return "nccl-" + scope;
    }

    private void autoDump(String reason) {
        synchronized (recorder) {
            flushTrace();
            recorder.dumpOnFailure(traceDir, traceName(), rank, size, reason, LOG);
        }
    }

    /**
     * Writes this rank's flight recorder (the last {@code JCCL_TRACE_BUFFER} operations: collective
     * index, op, type, count, root/peer, state, times) as {@code dir/jccl-trace-nccl-...-rank<r>.json};
     * {@code jccl doctor dir} reads every rank's. Dumps also happen by themselves on a failure or
     * abort when {@code JCCL_TRACE_DIR} is set.
     */
    @Override
    public java.nio.file.Path dumpFlightRecord(java.nio.file.Path dir) {
        Objects.requireNonNull(dir, "dir");
        try {
            synchronized (recorder) {
                flushTrace();
                return recorder.dump(dir, traceName(), rank, size, "dumpFlightRecord() called");
            }
        } catch (java.io.IOException e) {
            throw new JcclException("cannot write the flight recorder to " + dir + ": " + e.getMessage(), e);
        }
    }

    /** When a delayed ncclCommAbort is due (System.nanoTime), for close(); 0 when none. */
    private volatile long nativeAbortAt;
    /** This rank's failure report being written to the store, or null. */
    private volatile java.util.concurrent.Future<?> posted;

    /**
     * close() of an aborted communicator keeps the delays abortWith set: the report reaches the
     * store and NCCL's abort waits for its time (at most a few seconds), then happens.
     */
    private void awaitDelayedAbort() {
        java.util.concurrent.Future<?> p = posted;
        if (p != null) {
            try {
                p.get(2, java.util.concurrent.TimeUnit.SECONDS);
            } catch (Exception e) {
                LOG.warn(rank, "the failure report of " + describe() + " did not reach the store in 2 s: " + e);
            }
        }
        long wait = nativeAbortAt - System.nanoTime();
        if (nativeAbortAt != 0 && wait > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(Math.min(wait, 5_000_000_000L));
        }
    }

    /** FailureWatch periods since this communicator's counter was last read; FailureWatch's thread only. */
    private int idlePeriods;
    /** An idle communicator's counter is read every this many FailureWatch periods (0.5 s). */
    private static final int IDLE_PERIODS = 10;

    /** Failures counted under {@code <scope>/failures} that this rank has read. */
    private long seenPostedFailures;
    private volatile boolean postedFailuresOff;
    /** Threads waiting in a blocking call of this communicator (the FailureWatch reads the store only then). */
    final AtomicInteger waiters = new AtomicInteger();

    /**
     * Posts this rank's failure for the others: {@code <scope>/failure/<rank>} = kind, culprit and
     * reason; then bumps {@code <scope>/failures}. The culprit is the rank to blame: a dead or
     * missing peer when known, else this rank.
     */
    private void postFailure(JcclException cause) {
        try {
            int culprit = rank;
            char kind = 'F';
            if (cause instanceof PeerFailureException pf && pf.rank() >= 0 && pf.rank() < size) {
                culprit = pf.rank();
            } else if (cause instanceof CollectiveTimeoutException te && !te.missingRanks().isEmpty()) {
                culprit = te.missingRanks().get(0);
                kind = 'T';
            } else if (cause instanceof AbortedException) {
                kind = 'A';
            }
            String v = kind + "|" + culprit + "|" + cause.getMessage();
            jobStore.set(scope + "/failure/" + rank, v.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            jobStore.add(scope + "/failures", 1);
        } catch (RuntimeException e) {
            LOG.warn(rank, "could not tell the other ranks through the store why " + describe() + " failed: " + e);
        }
    }

    /** FailureWatch: reads the failure counter while this communicator waits for work; fails it on news. */
    void checkPostedFailures() {
        if (jobStore == null || postedFailuresOff || state.get() != OPEN) {
            return;
        }
        // An idle communicator is read too, every IDLE_PERIODS periods: a rank that was elsewhere
        // (a long close, another communicator) while a peer posted its failure and aborted must not
        // launch into the aborted peer, whose abort can end this rank's kernel as if it completed.
        if (waiters.get() == 0 && !ring.hasWatched() && ++idlePeriods < IDLE_PERIODS) {
            return;
        }
        idlePeriods = 0;
        long n = jobStore.add(scope + "/failures", 0);
        if (n <= seenPostedFailures) {
            return;
        }
        seenPostedFailures = n;
        for (int r = 0; r < size; r++) {
            if (r == rank) {
                continue;
            }
            byte[] v = jobStore.tryGet(scope + "/failure/" + r);
            if (v == null) {
                continue;
            }
            String[] p = new String(v, java.nio.charset.StandardCharsets.UTF_8).split("\\|", 3);
            int culprit = p.length == 3 ? Integer.parseInt(p[1]) : r;
            String reason = p.length == 3 ? p[2] : "";
            String msg = "rank " + culprit + " failed (reported by rank " + r + "): " + reason;
            JcclException e = p[0].equals("A") && culprit == r
                    ? new AbortedException("rank " + r + " aborted the communicator: " + reason)
                    : new PeerFailureException(culprit, msg);
            // Learned, not posted again; NCCL's abort waits as the poster's does, for the others to read it too.
            abortWith(e, POST_DELAY_NANOS, false);
            return;
        }
    }

    void postedFailuresUnavailable(Throwable t) {
        if (!postedFailuresOff) {
            postedFailuresOff = true;
            LOG.warn(rank, "reading the failures other ranks post in the store stopped for " + describe() + ": " + t);
        }
    }

    /**
     * ncclCommAbort of both NCCL communicators, once, on a thread of its own (see
     * {@link LateAborts#offThread}): NCCL sets the abort flags at once, but the reclaim that follows
     * can wait for kernels on other GPUs of this process.
     */
    private void nativeAbort() {
        if (!nativeAborted.compareAndSet(false, true)) {
            return;
        }
        if (severalGpus()) {
            LateAborts.offThread("jccl-nccl-abort-" + name, this::nativeAbortNow);
        } else {
            nativeAbortNow();
        }
    }

    /** The ncclCommAborts of {@link #nativeAbort}, after claiming them. */
    private void nativeAbortNow() {
        lock.lock();
        try {
            abortQuietly(comm);
            if (ctl != comm) {
                abortQuietly(ctl);
            }
        } finally {
            lock.unlock();
            nativeAbortDone.countDown();
        }
    }

    /** Counted down when the ncclCommAborts of {@link #nativeAbortNow} returned. */
    private final java.util.concurrent.CountDownLatch nativeAbortDone = new java.util.concurrent.CountDownLatch(1);

    /** In close's teardown thread: aborts NCCL if no one has yet, else waits for the abort under way. */
    private void finishNativeAbort() {
        if (nativeAborted.compareAndSet(false, true)) {
            nativeAbortNow();
            return;
        }
        try {
            nativeAbortDone.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A heartbeat-declared death: fail now, abort NCCL once every survivor can have learned it. */
    private void failByLiveness(Liveness.Watch lw, int dead, String during) {
        long interval = lw.liveness().interval().toNanos();
        abortWith(lw.failure(dead, during), 2 * interval + 500_000_000L);
    }

    private void failPending(JcclException cause) {
        for (NcclWork w : ring.unfinished()) {
            w.fail(failureFor(w, cause));
        }
    }

    /** One watchdog pass over this communicator; true while work is outstanding. */
    boolean watch(long now) {
        if (state.get() != OPEN) {
            JcclException f = failure.get();
            if (f != null) {
                failPending(f);
            }
            return false;
        }
        long from = ring.advanceHead();
        long to = ring.tail();
        if (from >= to) {
            return false;
        }
        // While the owner keeps launching, every CUDA or NCCL call made here would take a driver or
        // NCCL lock its next launch needs (measured: +0.2-0.4 us per enqueue on H200): only
        // deadlines, read from memory, are checked then. The owner waits for its work itself, or
        // stops launching, and the watchdog then polls.
        boolean ownerActive = now - lastLaunch < YOUNG_NANOS + LAUNCH_STAMP_NANOS;
        boolean current = false;
        NcclWork oldest = null;
        int polled = 0;
        int seen = 0;
        for (long i = from; i < to && seen < 5; i++) {
            NcclWork w = ring.at(i);
            if (w == null || w.isFinished() || w.blocking) {
                continue; // a blocking call's caller waits for its work itself
            }
            seen++;
            if (oldest == null) {
                oldest = w;
            }
            if (polled >= 4) {
                break; // later work is younger: its deadline is later, and streams complete in order
            }
            if (now - w.deadline <= 0 && (ownerActive || now - (w.deadline - w.budgetNanos) < YOUNG_NANOS)) {
                // Work issued less than a millisecond ago is rarely done: leave it (and all younger work) alone.
                break;
            }
            if (!current) {
                device.makeCurrent();
                current = true;
            }
            polled++;
            if (w.pollEvent()) {
                if (oldest == w) {
                    oldest = null;
                }
                continue;
            }
            if (now - w.deadline > 0) {
                onTimeout(w);
                return false;
            }
        }
        if (oldest != null && !ownerActive && now - (oldest.deadline - oldest.budgetNanos) >= YOUNG_NANOS) {
            checkAsyncError(oldest); // not while the owner launches: it would take the lock the launch needs
        } else if (oldest != null && watch != null) {
            Liveness.Watch lw = watch;
            int dead = lw.firstDead();
            if (dead >= 0) {
                failByLiveness(lw, dead, oldest.describe() + " on " + describe());
                return false;
            }
        }
        return ring.hasWatched();
    }

    /** {@code done} completed: so did every earlier work on its stream (streams run in order). */
    void completedThrough(NcclWork done) {
        ring.completeThrough(done);
    }

    boolean hasPending() {
        return ring.hasWatched();
    }

    void watchdogFailed(Throwable t) {
        abortWith(new JcclException("the NCCL watchdog failed on " + describe() + ": " + t, t));
    }

    // ------------------------------------------------------------------ lifecycle

    /**
     * Collective: ranks with the same {@code color} form a new communicator (ncclCommSplit),
     * ordered by {@code key} then by old rank; {@link #NO_COLOR} returns null. The new
     * communicator shares this one's GPU and deadline.
     */
    @Override
    public NcclCommunicator split(int color, int key) {
        if (color < 0 && color != NO_COLOR) {
            throw new IllegalArgumentException("color is " + color + ": use a color >= 0, or NO_COLOR to join none");
        }
        return derive("ncclCommSplit(color " + color + ", key " + key + ")", "c" + color, (out, cfg) ->
                (int) NcclLibrary.ncclCommSplit.invokeExact(ctl, color == NO_COLOR ? NcclLibrary.SPLIT_NOCOLOR : color,
                        key, out, cfg));
    }

    /**
     * A communicator without the ranks in {@code excludeRanks} (ncclCommShrink, NCCL 2.27+); the
     * remaining ranks are renumbered in order. Collective over the remaining ranks. An excluded
     * rank gets null.
     */
    public NcclCommunicator shrink(int... excludeRanks) {
        Objects.requireNonNull(excludeRanks, "excludeRanks");
        if (!Nccl.hasShrink()) {
            throw new InvalidUsageException("ncclCommShrink needs NCCL 2.27 or newer; this is " + Nccl.versionString());
        }
        for (int r : excludeRanks) {
            checkPeer(r, "excludeRanks element");
        }
        for (int r : excludeRanks) {
            if (r == rank) {
                return null;
            }
        }
        return derive("ncclCommShrink(" + java.util.Arrays.toString(excludeRanks) + ")", "k", (out, cfg) -> {
            MemorySegment ex = arena.allocate(Math.max(4L, 4L * excludeRanks.length), 4);
            for (int i = 0; i < excludeRanks.length; i++) {
                ex.setAtIndex(JAVA_INT, i, excludeRanks[i]);
            }
            return (int) NcclLibrary.ncclCommShrink.invokeExact(ctl, ex, excludeRanks.length, out, cfg, 0);
        });
    }

    /**
     * Collective over the survivors: a communicator of every rank except {@code excluded}, renumbered
     * in the old order. While this communicator is healthy it is ncclCommShrink (NCCL 2.27+);
     * after a failure (this communicator was aborted) or on older NCCL, the lowest survivor makes
     * a fresh ncclUniqueId and hands it to the others through the job's store. With a store, the
     * survivors first check that they all pass the same set.
     *
     * @throws IllegalArgumentException when {@code excluded} names this rank, a rank out of range,
     *                                  or every rank
     * @throws InvalidUsageException    after a failure when the communicator has no store
     */
    @Override
    public NcclCommunicator shrink(java.util.Set<Integer> excluded) {
        Objects.requireNonNull(excluded, "excluded");
        java.util.TreeSet<Integer> ex = new java.util.TreeSet<>();
        for (Integer r : excluded) {
            if (r == null) {
                throw new IllegalArgumentException("excluded contains null: pass rank numbers");
            }
            checkPeer(r, "excluded rank");
            ex.add(r);
        }
        if (ex.contains(rank)) {
            throw new IllegalArgumentException("excluded contains this rank (" + rank + "): a rank that leaves does not "
                    + "call shrink");
        }
        return shrinkTo(ex);
    }

    /**
     * Collective over the survivors: {@link #shrink(java.util.Set)} without the ranks known to have
     * failed. Each survivor posts what it knows (ranks named by peer-failure and timeout errors of
     * this communicator, and ranks the job's heartbeats declared dead) in the store; the first
     * survivor to have heard from every rank, or whose deadline passed, decides the set with an
     * atomic compare-and-set, and every survivor adopts that decision. A rank the decision
     * excludes (it was too late) gets a {@link PeerFailureException} naming itself.
     *
     * @throws InvalidUsageException without a store (communicators of {@link #initAll} or of
     *                               {@link #create(CudaDevice, int, int, byte[], Duration)})
     */
    @Override
    public NcclCommunicator shrinkExcludingFailed() {
        if (jobStore == null) {
            throw new InvalidUsageException("shrinkExcludingFailed needs the job's store to agree on the failed ranks: "
                    + "create the communicator with Jccl.init or NcclCommunicator.create(..., store), or call shrink(Set)");
        }
        int no;
        lock.lock();
        try {
            no = shrinks + 1;
        } finally {
            lock.unlock();
        }
        java.util.SortedSet<Integer> agreed = org.jccl.internal.ShrinkAgreement.decideFailed(jobStore,
                scope + "/shrink" + no + "/", rank, size, this::knownFailed, timeout);
        LOG.info(rank, () -> "shrinkExcludingFailed on " + describe() + ": survivors agreed to exclude " + agreed);
        return shrinkTo(agreed);
    }

    /** Ranks this communicator has seen fail (peer-failure errors, timeouts naming ranks, heartbeats). */
    public java.util.Set<Integer> failedRanks() {
        return java.util.Collections.unmodifiableSet(knownFailed());
    }

    private java.util.TreeSet<Integer> knownFailed() {
        java.util.TreeSet<Integer> out = new java.util.TreeSet<>(failedRanks);
        Liveness.Watch w = watch;
        if (w != null) {
            out.addAll(w.deadMembers()); // ranks the job's heartbeats declared dead
        }
        return out;
    }

    /** Remembers the ranks a failure names, for shrinkExcludingFailed. */
    void noteFailure(JcclException e) {
        if (e instanceof PeerFailureException pf && pf.rank() >= 0 && pf.rank() < size && pf.rank() != rank) {
            failedRanks.add(pf.rank());
        } else if (e instanceof CollectiveTimeoutException te) {
            for (int r : te.missingRanks()) {
                if (r >= 0 && r < size && r != rank) {
                    failedRanks.add(r);
                }
            }
        }
    }

    private NcclCommunicator shrinkTo(java.util.SortedSet<Integer> excluded) {
        int no;
        lock.lock();
        try {
            no = ++shrinks;
        } finally {
            lock.unlock();
        }
        List<Integer> survivors = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (!excluded.contains(r)) {
                survivors.add(r);
            }
        }
        if (survivors.isEmpty()) {
            throw new IllegalArgumentException("excluded holds every rank: nothing would be left");
        }
        String base = scope + "/shrinkto" + no + "/";
        if (jobStore != null) {
            org.jccl.internal.ShrinkAgreement.checkSameExclusion(jobStore, base, rank, excluded, survivors, timeout);
        }
        int newRank = survivors.indexOf(rank);
        if (state.get() == OPEN && Nccl.hasShrink()) {
            LOG.info(rank, () -> "shrinking " + describe() + " without " + excluded + " by ncclCommShrink");
            return shrink(excluded.stream().mapToInt(Integer::intValue).toArray());
        }
        if (jobStore == null) {
            throw new InvalidUsageException("shrink after a failure needs the job's store to hand a new ncclUniqueId to "
                    + "the survivors: create the communicator with Jccl.init or NcclCommunicator.create(..., store)"
                    + (Nccl.hasShrink() ? "" : " (NCCL " + Nccl.versionString() + " has no ncclCommShrink)"));
        }
        byte[] uid;
        if (newRank == 0) {
            uid = Nccl.newUniqueId();
            jobStore.set(base + "uid", uid);
        } else {
            uid = jobStore.get(base + "uid", timeout);
        }
        LOG.info(rank, () -> "shrinking " + describe() + " without " + excluded + ": a new communicator, rank " + rank
                + " becomes " + newRank + " of " + survivors.size());
        CudaDevice d = ownsDevice ? CudaDevice.open(device.ordinal()) : device;
        try {
            NcclCommunicator c = create(d, ownsDevice, newRank, survivors.size(), uid, timeout, null, jobStore, base + "c");
            c.adoptStore(store);
            Liveness.Watch w = watch;
            c.watch = w == null ? null : w.sub(survivors);
            return c;
        } catch (RuntimeException | Error e) {
            if (ownsDevice) {
                d.close();
            }
            throw e;
        }
    }

    /** A shrunk child made by {@link #create} shares this parent's store. */
    private SharedStore adopted;

    private void adoptStore(SharedStore s) {
        adopted = s == null ? null : s.retain();
    }

    /**
     * The heartbeat watch of a communicator derived from this one: its members' ranks here, learned
     * through the store (each member posts its rank in this communicator under the child's scope).
     */
    private Liveness.Watch childWatch(String childScope, int childRank, int childSize) {
        Liveness.Watch w = watch;
        if (w == null || jobStore == null) {
            return null;
        }
        try {
            jobStore.set(childScope + "/member/" + childRank, Integer.toString(rank).getBytes(
                    java.nio.charset.StandardCharsets.US_ASCII));
            int[] members = new int[childSize];
            for (int i = 0; i < childSize; i++) {
                members[i] = Integer.parseInt(new String(jobStore.get(childScope + "/member/" + i, timeout),
                        java.nio.charset.StandardCharsets.US_ASCII));
            }
            return w.sub(members);
        } catch (RuntimeException e) {
            LOG.warn(rank, "the communicator derived from " + describe() + " runs without heartbeat checks: " + e);
            return null;
        }
    }

    /** Heartbeats: fails with a PeerFailureException when a member of this communicator was declared dead. */
    private void checkLiveness(NcclWork w, String during) {
        Liveness.Watch lw = watch;
        if (lw == null) {
            return;
        }
        int dead = lw.firstDead();
        if (dead >= 0) {
            PeerFailureException e = lw.failure(dead, during + " on " + describe());
            failByLiveness(lw, dead, during + " on " + describe());
            if (w != null) {
                w.fail(failureFor(w, e));
            }
            throw w == null ? e : failureFor(w, e);
        }
    }

    /**
     * Called when a work's event fired: null when its result can be trusted, else the failure (the
     * communicator is aborted with it). An event also fires when NCCL stopped the kernel after a
     * peer failed or aborted, so the NCCL asynchronous error and the heartbeats are consulted
     * (ncclCommGetAsyncError is an atomic read inside NCCL, safe without the lock).
     */
    JcclException verifyCompletion(NcclWork w) {
        JcclException f = failure.get();
        if (f != null) {
            return f;
        }
        int s = NcclLibrary.asyncError(comm, Scratch.get());
        if (s != NcclLibrary.SUCCESS && s != NcclLibrary.IN_PROGRESS) {
            NcclException e = new NcclException("NCCL asynchronous error on " + describe() + " when " + w.describe()
                    + " ended (its result is not valid)", s, NcclLibrary.errorString(s), "");
            abortWith(e);
            return failure.get();
        }
        Liveness.Watch lw = watch;
        if (lw != null) {
            int dead = lw.firstDead();
            if (dead >= 0) {
                failByLiveness(lw, dead, w.describe() + " on " + describe());
                return failure.get();
            }
        }
        return null;
    }

    /** The deadline a {@link #withTimeout} view set for the calling thread's current call; null: the default. */
    private Duration callTimeout;

    private long callBudgetNanos() {
        Duration t = callTimeout;
        return t == null ? timeoutNanos : t.toNanos();
    }

    /**
     * A view of this communicator whose calls (blocking, and the works of asynchronous ones) have
     * deadline {@code timeout} instead of the communicator's; it shares everything else (sequence
     * numbers, stream, state) and its {@code close()} does nothing. The stream-taking methods of
     * this class are not on the view: call them here and wait with {@link NcclWork#await(Duration)}.
     * NCCL cannot cancel one operation: past the view's deadline the communicator is aborted, as
     * past its own.
     *
     * @throws IllegalArgumentException when {@code timeout} is null, zero or negative
     */
    @Override
    public Communicator withTimeout(Duration timeout) {
        org.jccl.Checks.timeout(timeout, "timeout");
        return new org.jccl.internal.TimeoutView(this, t -> callTimeout = t, timeout);
    }

    /** Heartbeats for a communicator made by {@link NcclBackend}: its rank i is job rank i. */
    void watchLiveness(Liveness liveness) {
        if (liveness != null && liveness != Liveness.NONE) {
            watch = liveness.watch(size);
        }
    }

    private interface DeriveCall {
        int call(MemorySegment out, MemorySegment cfg) throws Throwable;
    }

    private NcclCommunicator derive(String what, String checkTag, DeriveCall call) {
        if (NcclGroup.current() != null) {
            throw new InvalidUsageException(what + " inside an NcclGroup is not supported: close the group first");
        }
        ensureNotClosed();
        // Every member of the parent derives in the same order, so this number names the child on every rank.
        String tag = "d" + (++derived) + checkTag;
        Arena childArena = Arena.ofShared();
        long child = 0;
        long childData = 0;
        boolean ok = false;
        lock.lock();
        try {
            ensureOpen();
            device.makeCurrent();
            String childName = commName(rank);
            MemorySegment cname = childArena.allocateFrom(childName);
            MemorySegment cfg = childArena.allocate(NcclLibrary.CONFIG_SIZE + 8, 8);
            NcclLibrary.fillConfig(cfg, cname);
            // NCCL writes the new handle only when the split completes, from its own thread: the slot
            // lives in this communicator's arena, which outlives any abort of this communicator.
            MemorySegment out = arena.allocate(8, 8);
            long deadline = System.nanoTime() + timeoutNanos;
            int r;
            try {
                r = call.call(out, cfg);
            } catch (Throwable t) {
                throw rethrow(t);
            }
            if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                throw new NcclException(what + " on " + describe(), r, NcclLibrary.errorString(r),
                        NcclLibrary.lastError(ctl));
            }
            try {
                awaitReady(ctl, deadline, timeout, what + " on " + describe(), lockedScratch);
            } catch (JcclException e) {
                abortWith(e); // the parent is stuck or broken; aborting also stops NCCL writing `out`
                throw e;
            }
            child = out.get(JAVA_LONG, 0);
            if (child == 0) {
                return null; // NO_COLOR, or excluded
            }
            MemorySegment scratch = childArena.allocate(8, 8);
            awaitReady(child, deadline, timeout, what + " on " + describe(), scratch);
            int cr;
            int cn;
            try {
                check((int) NcclLibrary.ncclCommUserRank.invokeExact(child, scratch), "ncclCommUserRank");
                cr = scratch.get(JAVA_INT, 0);
                check((int) NcclLibrary.ncclCommCount.invokeExact(child, scratch), "ncclCommCount");
                cn = scratch.get(JAVA_INT, 0);
            } catch (Throwable t) {
                throw rethrow(t);
            }
            if (NONBLOCKING_DATA) {
                childData = child;
            } else {
                MemorySegment dataOut = childArena.allocate(8, 8);
                startDataSplit(child, cr, childArena, childName, dataOut);
                childData = finishDataSplit(child, dataOut, deadline, timeout, what + " on " + describe(), scratch);
            }
            // A parent that opened its GPU closes it with itself: the child then holds its own handle.
            CudaDevice childDevice = ownsDevice ? CudaDevice.open(device.ordinal()) : device;
            NcclCommunicator c = new NcclCommunicator(childDevice, ownsDevice, child, childData, cr, cn, timeout, childName,
                    childArena, store == null ? null : store.retain(), jobStore, scope + "/" + tag);
            c.watch = childWatch(scope + "/" + tag, cr, cn);
            ok = true;
            return c;
        } catch (RuntimeException | Error e) {
            if (childData != 0 && childData != child) {
                abortQuietly(childData);
            }
            abortQuietly(child);
            throw e;
        } finally {
            lock.unlock();
            if (!ok) {
                childArena.close();
            }
        }
    }

    private static void check(int r, String call) {
        if (r != NcclLibrary.SUCCESS) {
            throw new NcclException(call, r, NcclLibrary.errorString(r), "");
        }
    }

    /**
     * Aborts: NCCL stops this rank's kernels (ncclCommAbort) and every pending and later
     * operation fails with {@link AbortedException}; the other ranks' operations then fail by
     * their deadline or NCCL's error. Callable from any thread; returns promptly.
     */
    @Override
    public void abort() {
        abortWith(new AbortedException(describe() + " was aborted by abort()"), 0, true);
    }

    /**
     * Flushes outstanding operations (ncclCommFinalize, waited for with the deadline) and frees the
     * communicator (ncclCommDestroy); on a deadline or error it aborts instead. Pending works
     * complete or fail. Idempotent.
     */
    @Override
    public void close() {
        int prior = state.getAndSet(CLOSED);
        if (prior == CLOSED) {
            return;
        }
        Watchdog.unregister(this);
        FailureWatch.unregister(this);
        boolean apart = severalGpus();
        LIVE_PER_GPU.get(device.ordinal()).decrementAndGet();
        // NCCL's part of the teardown (ncclCommFinalize/Destroy or ncclCommAbort) runs on a thread of
        // its own, which then frees the arena NCCL may still read (the names) and an owned device:
        // with several GPUs in one process, the last rank to destroy a communicator frees every
        // rank's resources of it, which waits for the kernels on their GPUs, e.g. a peer's next
        // collective on another communicator that waits for this rank (LateAborts#offThread).
        Runnable nativeTeardown = this::finishNativeAbort;
        java.util.concurrent.CountDownLatch released = new java.util.concurrent.CountDownLatch(1);
        try {
            if (prior == ABORTED) {
                awaitDelayedAbort(); // a delayed abort may still be due: the teardown thread runs it
            }
            if (prior == OPEN) {
                lock.lock();
                try {
                    device.makeCurrent();
                    long deadline = System.nanoTime() + timeoutNanos;
                    // Outstanding work must finish first: a blocking ncclCommFinalize would wait for it with no deadline.
                    if (!drainPending(deadline)) {
                        failure.compareAndSet(null, new CollectiveTimeoutException(describe() + " still had work running "
                                + timeout + " after close(): aborted instead of finalized", List.of()));
                    } else {
                        nativeTeardown = () -> {
                            lock.lock();
                            try {
                                finalizeAndDestroy(deadline);
                            } finally {
                                lock.unlock();
                            }
                        };
                    }
                } finally {
                    lock.unlock();
                }
            }
        } finally {
            Runnable nt = nativeTeardown;
            if (apart) {
                LateAborts.offThread("jccl-nccl-close-" + name, () -> {
                    runTeardown(nt);
                    // the arena and an owned device go only after NCCL is done with them and the caller with its resources
                    try {
                        released.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    closeArenaAndDevice();
                });
            } else {
                runTeardown(nt);
            }
        }
        try {
            JcclException f = failure.get();
            for (NcclWork w : ring.unfinished()) {
                if (f == null && w.isDone()) {
                    continue;
                }
                w.fail(failureFor(w, f != null ? f : new AbortedException(describe() + " was closed")));
            }
        } finally {
            try {
                releaseResources();
            } finally {
                released.countDown();
                if (!apart) {
                    closeArenaAndDevice();
                }
            }
        }
    }

    private void runTeardown(Runnable nativeTeardown) {
        try {
            nativeTeardown.run();
        } catch (RuntimeException | Error e) {
            LOG.warn(rank, "closing the NCCL communicators of " + describe() + " failed: " + e);
        }
    }

    /** ncclCommFinalize and ncclCommDestroy of both NCCL communicators (aborted instead on error or deadline). */
    private void finalizeAndDestroy(long deadline) {
        try {
            device.makeCurrent();
        } catch (RuntimeException e) {
            // a caller's device closed meanwhile: NCCL sets its own device for what follows
        }
        if (!nativeAborted.compareAndSet(false, true)) {
            finishNativeAbort(); // aborted meanwhile (cannot happen once closed; kept safe): wait for it
            return;
        }
        nativeAbortDone.countDown(); // finalized or aborted here: a late nativeAbort must not touch the handles
        try {
            destroyPreMulOps();
            boolean clean = finalizeOne(comm, deadline);
            if (clean) {
                destroyOne(comm);
                if (ctl != comm) {
                    if (finalizeOne(ctl, deadline)) {
                        destroyOne(ctl);
                    } else {
                        abortQuietly(ctl);
                    }
                }
            } else {
                abortQuietly(comm);
                if (ctl != comm) {
                    abortQuietly(ctl);
                }
            }
        } catch (RuntimeException | Error e) {
            abortQuietly(comm);
            if (ctl != comm) {
                abortQuietly(ctl);
            }
            throw e;
        }
    }

    /** Waits (polling, until {@code deadline}) for every pending work; false when some did not finish. */
    private boolean drainPending(long deadline) {
        Backoff b = new Backoff();
        for (NcclWork w : ring.unfinished()) {
            while (!w.isFinished() && !w.pollEvent()) {
                if (System.nanoTime() - deadline > 0) {
                    return false;
                }
                b.idle();
            }
        }
        return true;
    }

    /** ncclCommFinalize, then polls until NCCL has flushed; false on error or deadline. */
    private boolean finalizeOne(long h, long deadline) {
        int r;
        try {
            r = (int) NcclLibrary.ncclCommFinalize.invokeExact(h);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
            LOG.warn(rank, "ncclCommFinalize returned " + NcclLibrary.resultName(r) + ": aborting instead");
            return false;
        }
        Backoff b = new Backoff();
        while (true) {
            int s = NcclLibrary.asyncError(h, lockedScratch);
            if (s == NcclLibrary.SUCCESS) {
                return true;
            }
            if (s != NcclLibrary.IN_PROGRESS || System.nanoTime() - deadline > 0) {
                failure.compareAndSet(null, new CollectiveTimeoutException(describe() + " could not finalize within "
                        + timeout + " (NCCL state " + NcclLibrary.resultName(s) + "): aborted instead", List.of()));
                return false;
            }
            b.idle();
        }
    }

    private void destroyOne(long h) {
        int d;
        try {
            d = (int) NcclLibrary.ncclCommDestroy.invokeExact(h);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (d != NcclLibrary.SUCCESS) {
            LOG.warn(rank, "ncclCommDestroy returned " + NcclLibrary.resultName(d));
        }
    }

    private void releaseResources() {
        List<AutoCloseable> toClose = new ArrayList<>();
        if (barrierBuffer != null) {
            toClose.add(barrierBuffer);
        }
        if (scratch != null) {
            toClose.add(scratch);
        }
        toClose.addAll(retiredScratch);
        toClose.add(stream);
        for (AutoCloseable c : toClose) {
            try {
                c.close();
            } catch (Exception e) {
                LOG.warn(rank, "closing " + c + " failed: " + e);
            }
        }
        for (CudaEvent e : ring.allEvents()) {
            try {
                if (!device.isClosed()) {
                    device.makeCurrent();
                    e.destroyPooled();
                }
            } catch (RuntimeException ex) {
                LOG.warn(rank, "destroying " + e + " failed: " + ex);
            }
        }
        ring.clearEvents();
        if (store != null) {
            store.release(rank);
        }
        if (adopted != null) {
            adopted.release(rank);
        }
    }

    /** The last of close(): on its teardown thread, after NCCL's teardown and {@link #releaseResources}. */
    private void closeArenaAndDevice() {
        try {
            arena.close();
        } catch (RuntimeException e) {
            LOG.warn(rank, "closing the arena of " + describe() + " failed: " + e);
        }
        if (ownsDevice) {
            device.close();
        }
    }

    @Override
    public String toString() {
        return "NcclCommunicator[" + describe() + "]";
    }
}
