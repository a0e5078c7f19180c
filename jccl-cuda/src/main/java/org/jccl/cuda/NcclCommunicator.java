package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.jccl.cuda.NcclArgs.checkOp;
import static org.jccl.cuda.NcclArgs.checkPeer;
import static org.jccl.cuda.NcclArgs.checkSelf;
import static org.jccl.cuda.NcclArgs.dev;
import static org.jccl.cuda.NcclArgs.devOrNull;
import static org.jccl.cuda.NcclArgs.inPlaceOrDisjoint;
import static org.jccl.cuda.NcclArgs.sameShape;
import static org.jccl.cuda.NcclArgs.sliced;
import static org.jccl.cuda.NcclLaunch.launch;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
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
import org.jccl.spi.Collective;
import org.jccl.spi.Op;
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
 *
 * <p>This class holds the state and the public methods; the code of each phase is in a
 * package-private class beside it: {@code NcclInit} (creation), {@code NcclArgs} (argument
 * checks), {@code NcclLaunch} (the launch path), {@code NcclHealth} (watchdog, failures, aborts,
 * flight recorder), {@code NcclDerive} (split and shrink) and {@code NcclTeardown} (close).
 */
public final class NcclCommunicator extends org.jccl.spi.AbstractCommunicator<NcclWork> {
    static final Log LOG = Log.get(NcclCommunicator.class);

    /** Operation kinds: {@link org.jccl.spi.Collective#code()}, the one numbering (NcclOpCodeTest checks). */
    static final int ALL_REDUCE = 0, BROADCAST = 1, REDUCE = 2, ALL_GATHER = 3, REDUCE_SCATTER = 4, ALL_TO_ALL = 5,
            GATHER = 6, SCATTER = 7, BARRIER = 8, SEND = 9, RECV = 10;
    private static final String[] OP_NAMES = java.util.Arrays.stream(org.jccl.spi.Collective.values())
            .map(org.jccl.spi.Collective::apiName).toArray(String[]::new);

    static final int OPEN = 0, ABORTED = 1, CLOSED = 2;
    /** Open communicators of this process per GPU ordinal (see {@link NcclHealth#severalGpus}). */
    static final java.util.concurrent.ConcurrentHashMap<Integer, AtomicInteger> LIVE_PER_GPU =
            new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * While this communicator launched something less than this long ago, the watchdog makes no
     * CUDA or NCCL call for it (see {@link NcclHealth#watch}): the owner is enqueuing and will wait itself.
     */
    static final long YOUNG_NANOS = Long.getLong("jccl.nccl.watchdogYoungNanos", 1_000_000);
    /** {@link #lastLaunch} is rewritten only when older than this. */
    static final long LAUNCH_STAMP_NANOS = 100_000;

    final CudaDevice device;
    final boolean ownsDevice;
    /** The data communicator: every collective runs here. */
    final long comm;
    /** The nonblocking control communicator (the same handle as {@link #comm} in nonblocking mode). */
    final long ctl;
    final String name;
    final Arena arena;
    /** The store this communicator and those derived from it release when they close, or null. */
    final SharedStore store;
    /** Deaths the job's heartbeats learned, in this communicator's ranks; null without heartbeats. */
    volatile Liveness.Watch watch;
    /** The job's store (for JCCL_CHECK and shrink after a failure), or null. Not closed by this communicator. */
    final org.jccl.bootstrap.Store jobStore;
    /** JCCL_CHECK's fingerprint exchange, or null when off. */
    final CollectiveCheck check;
    /** This communicator's part of the store's key space: the same on every rank. */
    final String scope;
    int shrinks;
    int derived;
    final java.util.Set<Integer> failedRanks = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Collectives issued (sends and receives are not counted: they need not pair up across ranks). */
    long collIssued;
    final CudaStream stream;
    final long streamHandle;
    final MemorySegment lockedScratch;
    final MemorySegment watchScratch;
    final ReentrantLock lock = new ReentrantLock();
    /**
     * Launched works and their events; at most {@link WorkRing#CAPACITY} in flight, so an enqueue
     * never waits for CUDA's launch queue. Armed under {@link #lock}.
     */
    final WorkRing ring = new WorkRing();
    final AtomicInteger state = new AtomicInteger(OPEN);
    final java.util.concurrent.atomic.AtomicBoolean nativeAborted = new java.util.concurrent.atomic.AtomicBoolean();
    final AtomicReference<JcclException> failure = new AtomicReference<>();
    final Map<Long, Integer> preMulOps = new HashMap<>();
    /**
     * System.nanoTime of a recent launch, for the watchdog: written at most once per 100 us (a
     * volatile write costs a fence; the read before it is a plain load on x86). Starts far in the past.
     */
    volatile long lastLaunch = System.nanoTime() - (1L << 62);
    long seq;
    DeviceBuffer barrierBuffer;
    /** jccl's own small-message all-reduce ({@link CustomAllReduce}), or null: every all-reduce on NCCL. */
    volatile CustomAllReduce car;
    DeviceBuffer scratch;
    final List<DeviceBuffer> retiredScratch = new ArrayList<>();
    /** Tests set this to run AlltoAll/Gather/Scatter through grouped send/recv even on NCCL 2.28+. */
    volatile boolean forceSendRecvFallback;
    /** The communicator settings this one was created with (Options.withSetting): its children inherit them. */
    final java.util.Map<String, String> settings = org.jccl.internal.Settings.bound();
    /**
     * The last JCCL_TRACE_BUFFER operations; guarded by its own monitor. A launch does not touch
     * it: the works it armed are recorded from the ring, in launch order, by whoever next needs
     * the record current (a completion, a dump), which keeps its monitor and arrays off the
     * launch path. Every work is recorded by its own completion or failure at the latest; only if
     * a full ring reused its slot between its completion and that record (a rare race) does it
     * land out of launch order.
     */
    final org.jccl.diag.FlightRecorder recorder = org.jccl.diag.FlightRecorder.fromEnv(OP_NAMES);
    final java.nio.file.Path traceDir = org.jccl.diag.FlightRecorder.traceDirFromEnv();
    /** Ring index up to which works are in the recorder; guarded by the recorder. */
    long traced;
    /**
     * Works armed below this ring index ran before {@link #restartNumbering}: their record was
     * cleared, and a late completion of one must not write into the new one. Guarded by the recorder.
     */
    long traceFloor;
    /** When a delayed ncclCommAbort is due (System.nanoTime), for close(); 0 when none. */
    volatile long nativeAbortAt;
    /** This rank's failure report being written to the store, or null. */
    volatile java.util.concurrent.Future<?> posted;
    /** FailureWatch periods since this communicator's counter was last read; FailureWatch's thread only. */
    int idlePeriods;
    /** Failures counted under {@code <scope>/failures} that this rank has read. */
    long seenPostedFailures;
    volatile boolean postedFailuresOff;
    /** Threads waiting in a blocking call of this communicator (the FailureWatch reads the store only then). */
    final AtomicInteger waiters = new AtomicInteger();
    /** Counted down when the ncclCommAborts of {@link NcclHealth#nativeAbortNow} returned. */
    final java.util.concurrent.CountDownLatch nativeAbortDone = new java.util.concurrent.CountDownLatch(1);
    /** A shrunk child made by {@link NcclInit#create} shares this parent's store. */
    SharedStore adopted;
    /** The open symmetric windows of {@link #register} ({@link NcclSymmetric}). */
    final java.util.Set<SymmetricWindow> windows = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** The deadline of the call being made now (its op's: a withTimeout view's), null: the communicator's; caller thread. */
    Duration callTimeout;
    /**
     * True while {@link NcclWarmup} runs its collectives (on the thread that makes them): they skip
     * JCCL_CHECK's fingerprint exchange (see NcclWarmup's class comment). Read only when
     * {@link #check} is set, so communicators without JCCL_CHECK never branch on it.
     */
    boolean warmingUp;
    /** Blocks the JIT warm-up at creation ran on this rank (0: none ran), for tests and logs. */
    int warmupBlocks;

    NcclCommunicator(CudaDevice device, boolean ownsDevice, long ctl, long comm, int rank, int size,
                     Duration timeout, String name, Arena arena, SharedStore store,
                     org.jccl.bootstrap.Store jobStore, String scope) {
        super("nccl", rank, size, timeout);
        this.jobStore = jobStore;
        this.scope = scope;
        this.check = NcclInit.checkFor(jobStore, scope + "/check", rank, size, timeout);
        this.device = device;
        this.ownsDevice = ownsDevice;
        this.ctl = ctl;
        this.comm = comm;
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
        return NcclInit.create(device, false, rank, size, uniqueId, timeout, null, null, "nccl", null);
    }

    /**
     * As {@link #create(CudaDevice, int, int, byte[], Duration)}, with the job's store: it enables
     * {@code JCCL_CHECK=1} and {@link #shrink(java.util.Set)} after a failure. The store is not
     * closed by the communicator.
     */
    public static NcclCommunicator create(CudaDevice device, int rank, int size, byte[] uniqueId, Duration timeout,
                                          org.jccl.bootstrap.Store store) {
        Objects.requireNonNull(store, "store");
        return NcclInit.create(device, false, rank, size, uniqueId, timeout, null, store, "nccl", null);
    }

    /** {@link NcclInit#create}, for {@link NcclBackend}: {@code watch} (null: none) is the job's heartbeats. */
    static NcclCommunicator create(CudaDevice device, boolean ownsDevice, int rank, int size, byte[] uniqueId,
                                   Duration timeout, AutoCloseable store, org.jccl.bootstrap.Store jobStore,
                                   String scope, Liveness.Watch watch) {
        return NcclInit.create(device, ownsDevice, rank, size, uniqueId, timeout, store, jobStore, scope, watch);
    }

    /**
     * One process driving several GPUs: forms a communicator per device (rank i on
     * {@code devices.get(i)}), initialised together in one NCCL group. Use each from its own
     * thread, or all from one thread inside {@link NcclGroup}s.
     */
    public static List<NcclCommunicator> initAll(List<CudaDevice> devices, Duration timeout) {
        return NcclInit.initAll(devices, timeout);
    }

    // ------------------------------------------------------------------ properties

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

    /**
     * Registers a buffer of {@link CudaDevice#allocateSymmetric} as an NCCL symmetric window
     * ({@code ncclCommWindowRegister}, NCCL 2.27+), so that collectives whose buffers all lie in
     * windows may run NCCL's symmetric kernels (all-reduce, all-gather, reduce-scatter; NCCL picks them
     * per call when every GPU reaches every other over NVLink). Collective: every rank calls it, from
     * its own thread, in the same order, with a buffer of the same byte size; use the same offsets
     * (slices) on every rank in the collectives. Register once and reuse: it costs an all-reduce and
     * NCCL's exchange of memory handles.
     *
     * <p>Every check is made before any native call. Then the ranks meet in an all-reduce of the
     * sizes, waited for with the communicator's deadline (a rank that does not come aborts the
     * communicator by the deadline, as a collective does; different sizes are refused on every
     * rank); only then does this thread enter NCCL's registration, which every rank has reached.
     *
     * @return the window; {@link SymmetricWindow#close()} deregisters it, and so does this
     *         communicator's {@link #close()}
     * @throws InvalidUsageException    when symmetric memory is unavailable (the message says why),
     *                                  inside an {@link NcclGroup}, when the communicator is closed, or
     *                                  when NCCL made no window (the communicator's GPUs are not all
     *                                  connected by NVLink)
     * @throws IllegalArgumentException when the buffer is not the whole buffer of
     *                                  {@link CudaDevice#allocateSymmetric}, lives on another GPU, is
     *                                  already registered here, or the ranks' sizes differ
     * @throws IllegalStateException    when the buffer was closed
     * @throws CollectiveTimeoutException when not every rank registered within the deadline
     */
    public SymmetricWindow register(DeviceBuffer buffer) {
        return NcclSymmetric.register(this, buffer);
    }

    /** The symmetric windows of this communicator that are open, in no particular order. */
    public List<SymmetricWindow> windows() {
        return List.copyOf(windows);
    }

    /** Starts an {@link NcclGroup} on this thread (the same as {@link NcclGroup#start()}). */
    public NcclGroup group() {
        return NcclGroup.start();
    }

    /**
     * The steps of a variable-size call (broadcasts, reduces, sends and receives) go in one NCCL
     * group: they launch together, and a rank's send to itself meets its receive. A blocking one
     * inside the caller's own group could never finish before that group is launched.
     */
    @Override
    protected AutoCloseable openSteps(String name, boolean async) {
        if (!async && NcclGroup.current() != null) {
            throw new org.jccl.InvalidUsageException("blocking " + name + " inside an NcclGroup can never finish before "
                    + "the group is launched: call " + name + "Async and wait after closing the group");
        }
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
        return "rank " + rank() + " of " + size() + " (NCCL comm " + name + ", GPU " + device.ordinal() + ")";
    }

    static String opName(int kind) {
        return OP_NAMES[kind];
    }

    JcclException failure() {
        return failure.get();
    }

    // ------------------------------------------------------------------ all-reduce

    /** All-reduce on the caller's stream; returns when done. */
    public void allReduce(Buffer send, Buffer recv, ReduceOp op, CudaStream stream) {
        callWith("stream", stream, Collective.ALL_REDUCE, send, recv, op, -1, -1, false);
    }

    /** In-place all-reduce on the caller's stream; returns when done. */
    public void allReduce(Buffer buffer, ReduceOp op, CudaStream stream) {
        callWith("stream", stream, Collective.ALL_REDUCE, buffer, buffer, op, -1, -1, false);
    }

    /** Asynchronous all-reduce on the caller's stream. */
    public NcclWork allReduceAsync(Buffer send, Buffer recv, ReduceOp op, CudaStream stream) {
        return callWith("stream", stream, Collective.ALL_REDUCE, send, recv, op, -1, -1, true);
    }

    private NcclWork allReduceAsync(DeviceBuffer sb, DeviceBuffer rb, ReduceOp op, CudaStream s, boolean blocking) {
        sameShape(sb, "send", rb, "recv");
        checkOp(op, sb.type());
        inPlaceOrDisjoint(sb, rb, rb.rawPointer(), "send == recv");
        return launch(this, ALL_REDUCE, sb, rb, sb.count(), sb.type(), op, 0, s, blocking);
    }

    // ------------------------------------------------------------------ broadcast

    /** Broadcast on the caller's stream; returns when done. */
    public void broadcast(Buffer send, Buffer recv, int root, CudaStream stream) {
        callWith("stream", stream, Collective.BROADCAST, send, recv, null, root, -1, false);
    }

    /** Asynchronous broadcast on the caller's stream ({@code send} is read on the root only; null elsewhere is fine). */
    public NcclWork broadcastAsync(Buffer send, Buffer recv, int root, CudaStream stream) {
        return callWith("stream", stream, Collective.BROADCAST, send, recv, null, root, -1, true);
    }

    private NcclWork broadcastAsync(Buffer send, Buffer recv, int root, CudaStream s, boolean blocking) {
        DeviceBuffer rb = dev(this, recv, "recv");
        DeviceBuffer sb = devOrNull(this, send, "send", rank() == root);
        if (sb == null) {
            sb = rb; // NCCL ignores sendbuff on non-root ranks
        }
        sameShape(sb, "send", rb, "recv");
        inPlaceOrDisjoint(sb, rb, rb.rawPointer(), "send == recv");
        return launch(this, BROADCAST, sb, rb, rb.count(), rb.type(), null, root, s, blocking);
    }

    // ------------------------------------------------------------------ reduce

    /** Reduce on the caller's stream; returns when done. */
    public void reduce(Buffer send, Buffer recv, ReduceOp op, int root, CudaStream stream) {
        callWith("stream", stream, Collective.REDUCE, send, recv, op, root, -1, false);
    }

    /** Asynchronous reduce on the caller's stream ({@code recv} may be null on non-root ranks). */
    public NcclWork reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root, CudaStream stream) {
        return callWith("stream", stream, Collective.REDUCE, send, recv, op, root, -1, true);
    }

    private NcclWork reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root, CudaStream s, boolean blocking) {
        DeviceBuffer sb = dev(this, send, "send");
        DeviceBuffer rb = devOrNull(this, recv, "recv", rank() == root);
        if (rb != null) {
            sameShape(sb, "send", rb, "recv");
            inPlaceOrDisjoint(sb, rb, rb.rawPointer(), "send == recv");
        }
        checkOp(op, sb.type());
        return launch(this, REDUCE, sb, rb, sb.count(), sb.type(), op, root, s, blocking);
    }

    // ------------------------------------------------------------------ all-gather

    /** All-gather on the caller's stream; returns when done. */
    public void allGather(Buffer send, Buffer recv, CudaStream stream) {
        callWith("stream", stream, Collective.ALL_GATHER, send, recv, null, -1, -1, false);
    }

    /** Asynchronous all-gather on the caller's stream. */
    public NcclWork allGatherAsync(Buffer send, Buffer recv, CudaStream stream) {
        return callWith("stream", stream, Collective.ALL_GATHER, send, recv, null, -1, -1, true);
    }

    private NcclWork allGatherAsync(DeviceBuffer sb, DeviceBuffer rb, CudaStream s, boolean blocking) {
        sliced(sb, rb, true, size(), rank(), "rank", "all-gather of");
        NcclSymmetric.checkUnaligned(this, "all-gather", rb, sb.byteSize());
        return launch(this, ALL_GATHER, sb, rb, sb.count(), sb.type(), null, 0, s, blocking);
    }

    // ------------------------------------------------------------------ reduce-scatter

    /** Reduce-scatter on the caller's stream; returns when done. */
    public void reduceScatter(Buffer send, Buffer recv, ReduceOp op, CudaStream stream) {
        callWith("stream", stream, Collective.REDUCE_SCATTER, send, recv, op, -1, -1, false);
    }

    /** Asynchronous reduce-scatter on the caller's stream. */
    public NcclWork reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op, CudaStream stream) {
        return callWith("stream", stream, Collective.REDUCE_SCATTER, send, recv, op, -1, -1, true);
    }

    private NcclWork reduceScatterAsync(DeviceBuffer sb, DeviceBuffer rb, ReduceOp op, CudaStream s, boolean blocking) {
        // In place: recv is slice `rank` of send, i.e. sendbuff == recvbuff - rank * count.
        sliced(rb, sb, false, size(), rank(), "rank", "reduce-scatter into");
        NcclSymmetric.checkUnaligned(this, "reduce-scatter", sb, rb.byteSize());
        checkOp(op, sb.type());
        return launch(this, REDUCE_SCATTER, sb, rb, rb.count(), sb.type(), op, 0, s, blocking);
    }

    // ------------------------------------------------------------------ all-to-all

    /** All-to-all on the caller's stream; returns when done. */
    public void allToAll(Buffer send, Buffer recv, CudaStream stream) {
        callWith("stream", stream, Collective.ALL_TO_ALL, send, recv, null, -1, -1, false);
    }

    /** Asynchronous all-to-all on the caller's stream. */
    public NcclWork allToAllAsync(Buffer send, Buffer recv, CudaStream stream) {
        return callWith("stream", stream, Collective.ALL_TO_ALL, send, recv, null, -1, -1, true);
    }

    private NcclWork allToAllAsync(DeviceBuffer sb, DeviceBuffer rb, CudaStream s, boolean blocking) {
        sameShape(sb, "send", rb, "recv");
        if (sb.count() % size() != 0) {
            throw new IllegalArgumentException("send has " + sb.count() + " elements, not a multiple of the " + size()
                    + " ranks: give it size() x per-rank count elements");
        }
        inPlaceOrDisjoint(sb, rb, rb.rawPointer(), "send == recv");
        return launch(this, ALL_TO_ALL, sb, rb, sb.count() / size(), sb.type(), null, 0, s, blocking);
    }

    // ------------------------------------------------------------------ gather / scatter

    /**
     * A gather ({@code kind} GATHER: the root's recv holds every rank's send) or a scatter
     * (SCATTER: the root's send holds every rank's recv); that whole buffer may be null elsewhere.
     */
    private NcclWork gatherOrScatter(int kind, Buffer send, Buffer recv, int root, CudaStream s, boolean blocking) {
        boolean gather = kind == GATHER;
        DeviceBuffer part = gather ? dev(this, send, "send") : dev(this, recv, "recv");
        DeviceBuffer whole = gather ? devOrNull(this, recv, "recv", rank() == root)
                : devOrNull(this, send, "send", rank() == root);
        if (rank() == root) {
            sliced(part, whole, gather, size(), root, "root", gather ? "gathering" : "scattering");
        } else {
            whole = null;
        }
        return launch(this, kind, gather ? part : whole, gather ? whole : part, part.count(), part.type(), null, root, s,
                blocking);
    }

    /** Asynchronous gather on the caller's stream ({@code recv} may be null on non-root ranks). */
    public NcclWork gatherAsync(Buffer send, Buffer recv, int root, CudaStream stream) {
        return callWith("stream", stream, Collective.GATHER, send, recv, null, root, -1, true);
    }

    /** Asynchronous scatter on the caller's stream ({@code send} may be null on non-root ranks). */
    public NcclWork scatterAsync(Buffer send, Buffer recv, int root, CudaStream stream) {
        return callWith("stream", stream, Collective.SCATTER, send, recv, null, root, -1, true);
    }

    // ------------------------------------------------------------------ point to point

    /** Asynchronous send on the caller's stream. */
    public NcclWork sendAsync(Buffer buffer, int peer, CudaStream stream) {
        return callWith("stream", stream, Collective.SEND, buffer, null, null, -1, peer, true);
    }

    /** A send ({@code kind} SEND) or receive (RECV) of {@code buffer} with {@code peer}. */
    private NcclWork p2p(int kind, Buffer buffer, int peer, CudaStream s, boolean blocking) {
        checkSelf(this, peer);
        DeviceBuffer b = dev(this, buffer, "buffer");
        return launch(this, kind, kind == SEND ? b : null, kind == RECV ? b : null, b.count(), b.type(), null, peer, s,
                blocking);
    }

    /** Asynchronous receive on the caller's stream. */
    public NcclWork recvAsync(Buffer buffer, int peer, CudaStream stream) {
        return callWith("stream", stream, Collective.RECV, null, buffer, null, -1, peer, true);
    }

    // ------------------------------------------------------------------ barrier

    private NcclWork barrierAsync(boolean blocking) {
        DeviceBuffer b;
        ensureNotClosed();
        lock.lock();
        try {
            ensureOpen();
            if (barrierBuffer == null) {
                // relaxed: a first barrier issued inside a CUDA graph capture may allocate
                barrierBuffer = CudaDriver.relaxedCapture(() -> device.allocate(DataType.INT32, 1));
            }
            b = barrierBuffer;
        } finally {
            lock.unlock();
        }
        // NCCL has no barrier: an all-reduce of one integer makes every rank wait for all others.
        return launch(this, BARRIER, b, b, 1, DataType.INT32, ReduceOp.SUM, 0, null, blocking);
    }

    // ------------------------------------------------------------------ state; failure handling is in NcclHealth

    /** True once closed ({@code allocate} refuses then; it returns ordinary host memory before). */
    @Override
    protected boolean isClosed() {
        return state.get() == CLOSED;
    }

    /**
     * Throws at once, without the lock, for a closed communicator: with several GPUs in one process
     * its teardown can hold the lock for as long as NCCL's finalize waits for other GPUs.
     */
    void ensureNotClosed() {
        if (state.get() == CLOSED) {
            ensureOpen();
        }
    }

    void ensureOpen() {
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

    /** Why work is refused once this communicator is no longer open: its failure, else that it is closed. */
    JcclException closedCause() {
        JcclException f = failure.get();
        return f != null ? f : new AbortedException(describe() + " is closed");
    }

    /** {@link NcclHealth#failureFor}. */
    JcclException failureFor(NcclWork w, JcclException cause) {
        return NcclHealth.failureFor(this, w, cause);
    }

    /** {@link NcclHealth#onTimeout}. */
    void onTimeout(NcclWork w) {
        NcclHealth.onTimeout(this, w);
    }

    /** {@link NcclHealth#checkAsyncError}. */
    void checkAsyncError(NcclWork oldest) {
        NcclHealth.checkAsyncError(this, oldest);
    }

    /** {@link NcclHealth#verifyCompletion}. */
    JcclException verifyCompletion(NcclWork w) {
        return NcclHealth.verifyCompletion(this, w);
    }

    /** {@link NcclHealth#traceEnd}. */
    void traceEnd(NcclWork w, boolean ok) {
        NcclHealth.traceEnd(this, w, ok);
    }

    /** {@link NcclHealth#watch}. */
    boolean watch(long now) {
        return NcclHealth.watch(this, now);
    }

    /** {@link NcclHealth#checkPostedFailures}. */
    void checkPostedFailures() {
        NcclHealth.checkPostedFailures(this);
    }

    /** {@link NcclLaunch#verifyCheck}. */
    void verifyCheck(long cs, byte[] fp, int kind) {
        NcclLaunch.verifyCheck(this, cs, fp, kind);
    }

    /** {@link NcclLaunch#armGroupWorks}. */
    void armGroupWorks(List<NcclWork> works) {
        NcclLaunch.armGroupWorks(this, works);
    }

    /**
     * Writes this rank's flight recorder (the last {@code JCCL_TRACE_BUFFER} operations: collective
     * index, op, type, count, root/peer, state, times) as {@code dir/jccl-trace-nccl-...-rank<r>.json};
     * {@code jccl doctor dir} reads every rank's. Dumps also happen by themselves on a failure or
     * abort when {@code JCCL_TRACE_DIR} is set.
     */
    @Override
    public java.nio.file.Path dumpFlightRecord(java.nio.file.Path dir) {
        return NcclHealth.dumpFlightRecord(this, dir);
    }

    /** {@link NcclHealth#postedFailuresUnavailable}. */
    void postedFailuresUnavailable(Throwable t) {
        NcclHealth.postedFailuresUnavailable(this, t);
    }

    /** {@code done} completed: so did every earlier work on its stream (streams run in order). */
    void completedThrough(NcclWork done) {
        ring.completeThrough(done);
    }

    boolean hasPending() {
        return ring.hasWatched();
    }

    void watchdogFailed(Throwable t) {
        NcclHealth.abortWith(this, new JcclException("the NCCL watchdog failed on " + describe() + ": " + t, t));
    }

    /** The heartbeat watch of a communicator made by {@link NcclBackend} (its rank i is job rank i), or null. */
    static Liveness.Watch watchOf(Liveness liveness, int size) {
        return liveness != null && liveness != Liveness.NONE ? liveness.watch(size) : null;
    }

    /**
     * Forgets the operations run so far (the JIT warm-up's at creation): the next one is #1 in
     * error messages, in JCCL_CHECK's fingerprints and in the flight recorder, and the kernels'
     * launch count restarts. Collective in effect: every rank calls it at the same point of the
     * same sequence of collectives, so the numbers stay equal across ranks. Waits first (with each
     * work's deadline) for any work still unfinished; none should be, the warm-up awaits its works.
     */
    void restartNumbering() {
        for (NcclWork w : ring.unfinished()) {
            w.await();
        }
        lock.lock();
        try {
            ensureOpen();
            seq = 0;
            collIssued = 0;
            CustomAllReduce k = car;
            if (k != null) {
                k.launches = 0;
            }
            synchronized (recorder) {
                recorder.clear();
                long t = ring.tail();
                traced = t; // nothing armed so far is recorded again
                traceFloor = t;
            }
        } finally {
            lock.unlock();
        }
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
        return NcclDerive.derive(this, "ncclCommSplit(color " + color + ", key " + key + ")", "c" + color,
                (_, out, cfg) -> (int) NcclLibrary.ncclCommSplit.invokeExact(ctl,
                        color == NO_COLOR ? NcclLibrary.SPLIT_NOCOLOR : color, key, out, cfg));
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
            checkPeer(this, r, "excludeRanks element");
        }
        for (int r : excludeRanks) {
            if (r == rank()) {
                return null;
            }
        }
        String what = "ncclCommShrink(" + java.util.Arrays.toString(excludeRanks) + ")";
        return NcclDerive.derive(this, what, "k", (_, out, cfg) -> {
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
        java.util.TreeSet<Integer> ex = org.jccl.internal.ShrinkAgreement.checkExcluded(excluded, rank(), size());
        return NcclDerive.shrinkTo(this, ex);
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
                scope + "/shrink" + no + "/", rank(), size(), () -> NcclHealth.knownFailed(this), timeout());
        LOG.info(rank(), () -> "shrinkExcludingFailed on " + describe() + ": survivors agreed to exclude " + agreed);
        return NcclDerive.shrinkTo(this, agreed);
    }

    /** Ranks this communicator has seen fail (peer-failure errors, timeouts naming ranks, heartbeats). */
    public java.util.Set<Integer> failedRanks() {
        return java.util.Collections.unmodifiableSet(NcclHealth.knownFailed(this));
    }

    /**
     * The one entry of every call without a stream argument ({@link org.jccl.spi.AbstractCommunicator}):
     * on the communicator's stream, under the op's deadline. A {@link #withTimeout} view's
     * deadline covers its calls and their works; the stream-taking methods of this class are not
     * on the view (call them here and wait with {@link NcclWork#await(Duration)}). NCCL cannot
     * cancel one operation: past the view's deadline the communicator is aborted, as past its own.
     */
    @Override
    protected NcclWork execute(Op o, boolean async) {
        return run(o, null, !async);
    }

    /** A stream-taking call: the same op, on the caller's stream. */
    /** The stream-taking entries ({@link #callWith}): {@code o} on the caller's stream. */
    @Override
    protected NcclWork executeWith(Op o, Object stream, boolean async) {
        return run(o, (CudaStream) stream, !async);
    }

    /** Validates {@code o}'s device buffers and launches it on {@code s} (null: this communicator's stream). */
    private NcclWork run(Op o, CudaStream s, boolean blocking) {
        callTimeout = o.timeout(); // read by the launch (callBudgetNanos); calls come from one thread at a time
        try {
            // Where both buffers are required they are checked here; the others check their own.
            NcclWork w = switch (o.collective()) {
                case ALL_REDUCE -> allReduceAsync(dev(this, o.send(), "send"), dev(this, o.recv(), "recv"), o.op(), s,
                        blocking);
                case BROADCAST -> broadcastAsync(o.send(), o.recv(), o.root(), s, blocking);
                case REDUCE -> reduceAsync(o.send(), o.recv(), o.op(), o.root(), s, blocking);
                case ALL_GATHER -> allGatherAsync(dev(this, o.send(), "send"), dev(this, o.recv(), "recv"), s,
                        blocking);
                case GATHER -> gatherOrScatter(GATHER, o.send(), o.recv(), o.root(), s, blocking);
                case REDUCE_SCATTER -> reduceScatterAsync(dev(this, o.send(), "send"), dev(this, o.recv(), "recv"), o.op(), s,
                        blocking);
                case ALL_TO_ALL -> allToAllAsync(dev(this, o.send(), "send"), dev(this, o.recv(), "recv"), s,
                        blocking);
                case SCATTER -> gatherOrScatter(SCATTER, o.send(), o.recv(), o.root(), s, blocking);
                case BARRIER -> barrierAsync(blocking);
                case SEND -> p2p(SEND, o.send(), o.peer(), s, blocking);
                case RECV -> p2p(RECV, o.recv(), o.peer(), s, blocking);
            };
            if (blocking) {
                w.await();
            }
            return w;
        } finally {
            callTimeout = null;
        }
    }

    /**
     * Aborts: NCCL stops this rank's kernels (ncclCommAbort) and every pending and later
     * operation fails with {@link AbortedException}; the other ranks' operations then fail by
     * their deadline or NCCL's error. Callable from any thread; returns promptly.
     */
    @Override
    public void abort() {
        NcclHealth.abortWith(this, new AbortedException(describe() + " was aborted by abort()"), 0, true);
    }

    /**
     * Flushes outstanding operations (ncclCommFinalize, waited for with the deadline) and frees the
     * communicator (ncclCommDestroy); on a deadline or error it aborts instead. Pending works
     * complete or fail. Idempotent.
     */
    @Override
    public void close() {
        NcclTeardown.close(this);
    }

    @Override
    public String toString() {
        return "NcclCommunicator[" + describe() + "]";
    }
}
