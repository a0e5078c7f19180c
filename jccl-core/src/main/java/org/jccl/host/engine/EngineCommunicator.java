package org.jccl.host.engine;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import org.jccl.AbortedException;
import org.jccl.Buffer;
import org.jccl.Checks;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.spi.Op;
import org.jccl.Work;
import org.jccl.bootstrap.PrefixStore;
import org.jccl.bootstrap.Store;
import org.jccl.diag.FlightRecorder;
import org.jccl.spi.Liveness;
import org.jccl.host.kernel.Reductions;
import org.jccl.internal.Log;
import org.jccl.internal.ShrinkAgreement;

/**
 * The host engine's runtime, the same under every transport (shared memory, TCP, hierarchical):
 * argument checks (one set of messages), blocking calls inline on the caller's thread without
 * allocating, async calls in order on one worker thread (consecutive async sends/recvs progress
 * together, like an NCCL group, messages between a pair in posting order), deadlines, the one-rank
 * cases, "broken after the first failure" with the failure told to the peers, the flight recorder
 * ({@code JCCL_TRACE_DIR}), split, and shrink by agreement through the store. Subclasses supply the
 * collectives for two or more ranks and their transport's hooks.
 *
 * <p>Calls must come from one thread at a time, as with NCCL.
 *
 * @param <T> the transport the communicator runs on
 */
public abstract class EngineCommunicator<T extends Transport> extends org.jccl.spi.AbstractCommunicator<Work> {
    private static final Log LOG = Log.get(EngineCommunicator.class);

    protected final String id;
    /** The transport this communicator runs on; closed with it. */
    protected final T transport;
    /** The job's store under this communicator's prefix (split and shrink agree through it). */
    protected final Store store;
    /** Deaths the store's heartbeats report, in this communicator's ranks. */
    protected final Liveness.Watch watch;
    private final CallLock lock = new CallLock();
    /** Async works in posting order: the callers add, the worker takes (lock-free, no wake-up per add). */
    private final ConcurrentLinkedQueue<EngineWork> queue = new ConcurrentLinkedQueue<>();
    /** True while the worker is parked on an empty queue: an enqueue must wake it. */
    private volatile boolean workerParked;
    /**
     * The right to take works off the queue and run them, held by the worker while it runs them,
     * or by a thread that waits for a work and runs the works up to it itself ({@link #help}):
     * one runner at a time, so that works run one after the other in posting order.
     */
    private final java.util.concurrent.atomic.AtomicBoolean runner = new java.util.concurrent.atomic.AtomicBoolean();
    /** Set while a thread in {@link #help} waits for the worker to hand the runner over (one CPU only). */
    private volatile boolean helperWaits;
    /** When a thread last came to {@link #help} (one CPU only): the worker leaves the queue to it meanwhile. */
    private volatile long lastHelpNanos;
    /** How the caller and the worker wait for each other; set with the worker. */
    private volatile AsyncWaits waits;
    private final PendingCount pending = new PendingCount();
    /** The work queued last (a blocking collective behind async work waits for it). */
    private volatile EngineWork lastQueued;
    /** The communicator settings this one was created with (Options.withSetting): its splits and shrinks inherit them. */
    private final java.util.Map<String, String> settings = org.jccl.internal.Settings.bound();
    private final FlightRecorder recorder = FlightRecorder.fromEnv(OpCode.names());
    private final java.nio.file.Path traceDir = FlightRecorder.traceDirFromEnv();
    private final java.util.Set<Integer> failedRanks = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Flight recorder handle of the call running now (under the call lock). */
    private long current = -1;
    private long collSeq;
    private int splits;
    private int shrinks;
    /** The deadline of the call running now (under the call lock); subclasses start their waits with it. */
    protected long callNanos;
    private volatile Thread worker;
    private volatile JcclException broken;
    private volatile boolean closed;

    /**
     * @param transport what this communicator runs on; told of the deaths {@code watch} reports,
     *                  and closed with the communicator
     * @param store     the job's store under this communicator's prefix; closed with the communicator
     * @param watch     deaths the store's heartbeats report (null: none)
     */
    protected EngineCommunicator(String id, int rank, int size, Duration timeout, T transport, Store store,
                                 Liveness.Watch watch) {
        super("host", rank, size, timeout);
        this.id = id;
        this.transport = transport;
        this.callNanos = timeout.toNanos();
        this.store = store;
        this.watch = watch != null ? watch : Liveness.NONE.watch(size);
        transport.watch(this.watch);
    }

    // ------------------------------------------------------------------ what subclasses supply (n >= 2)

    protected abstract void doAllReduce(HostBuffer s, HostBuffer r, ReduceOp op);

    protected abstract void doBroadcast(HostBuffer s, HostBuffer r, int root);

    protected abstract void doReduce(HostBuffer s, HostBuffer r, ReduceOp op, int root);

    protected abstract void doAllGather(HostBuffer s, HostBuffer r);

    protected abstract void doGather(HostBuffer s, HostBuffer r, int root);

    protected abstract void doReduceScatter(HostBuffer s, HostBuffer r, ReduceOp op);

    protected abstract void doAllToAll(HostBuffer s, HostBuffer r);

    protected abstract void doScatter(HostBuffer s, HostBuffer r, int root);

    protected abstract void doBarrier();

    /** A send or receive; a peer equal to this rank is allowed (NCCL-style self send/recv): the transport's. */
    protected P2p newP2p(boolean isSend, HostBuffer b, int peer) {
        return transport.newP2p(isSend, b, peer);
    }

    /** The blocking calls' sends and receives (slots 0 and 1: a sendRecv's halves), kept for {@link P2p#reuse}. */
    private final P2p[] inline = new P2p[2];

    /**
     * The send or receive of a blocking call moved on the calling thread, under the lock: the
     * slot's object of the previous call again where the transport reuses its objects (so that
     * blocking sends and receives allocate nothing), else a new one.
     */
    private P2p inlineP2p(int slot, boolean isSend, HostBuffer b, int peer) {
        P2p p = inline[slot];
        P2p again = p == null ? null : p.reuse(isSend, b, peer);
        if (again != null) {
            return again;
        }
        p = newP2p(isSend, b, peer);
        inline[slot] = p;
        return p;
    }

    /** After a blocking call: the kept objects let go of the caller's buffers. Under the lock. */
    private void forgetInline() {
        for (int i = 0; i < inline.length; i++) {
            P2p p = inline[i];
            if (p != null && p.reuse(false, null, -1) == null) {
                inline[i] = null; // not reusable: nothing to keep
            }
        }
    }

    /**
     * Starts a blocking send/recv or a batch of async ones with deadline {@code timeoutNanos}
     * ({@code op} is {@link OpCode#SEND} or {@link OpCode#RECV}, {@code b} and {@code peer} those of
     * a blocking one; a batch passes SEND, null, -1).
     */
    protected abstract void beginP2p(int op, HostBuffer b, int peer, long timeoutNanos);

    /**
     * Idles one step of a send/recv batch that did not progress, waiting on {@code peer} (-1: any);
     * checks abort, peers and the deadline.
     */
    protected abstract void idleP2p(int iteration, int peer);

    /** Restarts the batch deadline after progress. */
    protected abstract void touchP2pBatch();

    /**
     * Tells the peers this rank failed (the first failure only), so their waits end; {@code
     * culprit} is the rank (of this communicator) the failure blames, or -1 (this rank's own).
     */
    protected abstract void propagate(JcclException e, int culprit);

    /** Ends this rank's waits at once (any thread): the transport's; a subclass with more parts ends theirs too. */
    protected void abortLocally(String reason) {
        transport.abort(reason);
    }

    /** Releases the transports (the store is closed after it): the transport; a subclass with more parts closes them too. */
    protected void closeResources() {
        transport.close();
    }

    /**
     * Forms the communicator of {@code members} (ranks of this one, in new rank order) meeting
     * through {@code sub}: a split's or a shrink's.
     */
    protected abstract Communicator createSub(String subId, int[] members, int newRank, Store sub);

    /**
     * Starts collective number {@code seq}: the transport's fingerprint and deadline ({@code
     * timeoutNanos}).
     */
    protected abstract void beginCall(long seq, int opcode, org.jccl.DataType type, ReduceOp op, int root, long count,
                                      long timeoutNanos);

    /**
     * True when {@link #propagate} may run while a call is in progress on another thread (it only
     * publishes a word the waits poll); false makes {@link #failWith} wait for the call lock.
     */
    protected boolean propagatesFromAnyThread() {
        return false;
    }

    /**
     * True when the runtime must keep a pair's messages in posting order itself: a message moves
     * only after every earlier one between the pair in that direction has moved completely (shared
     * memory, whose messages share the pair's mailbox). False when the transport numbers and
     * matches the messages itself (TCP), so that several can be in flight.
     */
    protected boolean p2pInPostingOrder() {
        return false;
    }

    /** Ranks the transport itself knows dead (e.g. a pid that is gone); shrinkExcludingFailed drops them. */
    protected java.util.Set<Integer> transportDeadRanks() {
        return java.util.Set.of();
    }

    /**
     * Forgets the collectives run so far (collective: every rank at the same point, nothing in
     * flight): the next one is #1 in error messages and the first entry of the flight recorder.
     * For work the library does at creation (the JIT warm-up), so that what the caller reads counts
     * the caller's collectives only. The transports match calls by number only between ranks, and
     * every rank restarts together.
     *
     * @throws IllegalStateException when an async operation is pending
     */
    public final void restartNumbering() {
        lock.lock();
        try {
            if (pending.get() != 0) {
                throw new IllegalStateException("restartNumbering with " + pending.get() + " async operation(s) pending");
            }
            collSeq = 0;
            recorder.clear();
        } finally {
            lock.unlock();
        }
    }

    /** The number of the last collective started (the same on every rank). */
    protected final long collectiveSequence() {
        return collSeq;
    }

    /** Starts collective number {@code ++seq}: flight recorder, then the transport's {@link #beginCall}. */
    private void begin(int opcode, org.jccl.DataType type, ReduceOp op, int root, long count) {
        long seq = ++collSeq;
        current = recorder.schedule(seq, opcode, type.ordinal(), count, op == null ? -1 : op.kind().ordinal(), root, -1);
        recorder.startedNow(current);
        beginCall(seq, opcode, type, op, root, count, callNanos);
    }

    /** Completes the call's flight-recorder entry; a later failure (a send/recv batch's) must not mark it failed. */
    private void end() {
        recorder.completed(current);
        current = -1;
    }

    // ------------------------------------------------------------------ basics

    /** This communicator's id. */
    public String id() {
        return id;
    }

    /** The liveness watch of this communicator (deaths the store's heartbeats report). */
    public Liveness.Watch watch() {
        return watch;
    }

    // ------------------------------------------------------------------ validation

    /** {@code b} as a HostBuffer, or an error that says which argument and what to pass. */
    protected static HostBuffer host(Buffer b, String name) {
        return HostArgs.host(b, name);
    }

    /** Async calls run on the worker thread: a buffer confined to the caller's thread cannot be used there. */
    private HostBuffer async(HostBuffer b, String name) {
        if (b != null && !b.segment().isAccessibleBy(workerThread())) {
            throw new IllegalArgumentException(name + " belongs to a confined Arena of another thread, but async "
                    + "operations (and a send/recv issued while async ones are pending) run on jccl's worker thread: "
                    + "allocate it from Arena.ofShared() or Arena.ofAuto(), or use the blocking call once the async "
                    + "work is done");
        }
        return b;
    }


    private void checkOpen() {
        checkUsable(id, rank(), closed, broken);
    }

    // ------------------------------------------------------------------ execution

    private boolean inline() {
        checkOpen();
        return pending.get() == 0;
    }

    /** Takes the call lock for a call with deadline {@code tn} (no lambda: the inline path allocates nothing). */
    private void enter(long tn) {
        lock.lock();
        try {
            checkOpen();
            callNanos = tn;
        } catch (RuntimeException e) {
            lock.unlock();
            throw e;
        }
    }

    /** Records the first failure, tells the peers, returns what to throw. */
    protected final JcclException failed(RuntimeException e) {
        JcclException j = e instanceof JcclException je ? je
                : new JcclException("rank " + rank() + " of communicator " + id + ": a collective failed: " + e, e);
        if (broken == null) {
            broken = j;
        }
        recorder.failed(current);
        if (j instanceof org.jccl.PeerFailureException pf && pf.rank() != rank()) {
            failedRanks.add(pf.rank());
        } else if (j instanceof org.jccl.CollectiveTimeoutException te) {
            failedRanks.addAll(te.missingRanks());
        }
        int culprit = -1;
        if (j instanceof org.jccl.PeerFailureException pf && pf.rank() != rank()) {
            culprit = pf.rank();
        } else if (j instanceof org.jccl.CollectiveTimeoutException te && !te.missingRanks().isEmpty()) {
            culprit = te.missingRanks().get(0);
        }
        try {
            propagate(j, culprit);
        } catch (RuntimeException ignored) {
            // telling the peers is best effort: they time out otherwise
        }
        JcclException x = j;
        try {
            x = explain(j);
        } catch (RuntimeException ignored) {
            // the explanation is best effort: the failure stands as it is
        }
        if (broken == j) {
            broken = x;
        }
        autoDump(x.getMessage());
        // the caller gets x: a WARN here would print it twice
        JcclException shown = x;
        LOG.info(rank(), () -> "communicator " + id + " failed: " + shown.getMessage());
        return x;
    }

    private void autoDump(String reason) {
        if (traceDir != null) {
            try {
                java.nio.file.Path f = recorder.dump(traceDir, id, rank(), size(), reason);
                LOG.warn(rank(), "flight recorder written to " + f + " (read all ranks' dumps with: jccl doctor " + traceDir + ")");
            } catch (java.io.IOException e) {
                LOG.warn(rank(), "cannot write the flight recorder to " + traceDir + ": " + e.getMessage());
            }
        }
    }

    @Override
    public java.nio.file.Path dumpFlightRecord(java.nio.file.Path dir) {
        Checks.notNull(dir, "dir");
        try {
            return recorder.dump(dir, id, rank(), size(), "dumpFlightRecord() called");
        } catch (java.io.IOException e) {
            throw new JcclException("cannot write the flight recorder to " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * Restates a failure in the caller's terms, after the peers were told (so they stop too): the
     * hierarchical communicator names the caller's collective, not one of its internal steps. The
     * default returns {@code e}.
     */
    protected JcclException explain(JcclException e) {
        return e;
    }

    private void run(Runnable body, long tn) {
        enter(tn);
        try {
            body.run();
        } catch (RuntimeException e) {
            throw failed(e);
        } finally {
            lock.unlock();
        }
    }

    private Work submit(String what, Duration d, Runnable body) {
        checkOpen();
        long tn = d.toNanos();
        return enqueue(new EngineWork(what, rank(), d, () -> run(body, tn), null, asyncWaits(), this::help));
    }

    private Work enqueue(EngineWork w) {
        Thread t = workerThread();
        if (!waits.spare()) {
            // before lastQueued publishes it: the worker leaves it to the caller for a while (AsyncWaits#workerDefers)
            w.queuedNanos = System.nanoTime();
        }
        pending.queued();
        lastQueued = w;
        queue.offer(w);
        if (workerParked) {
            LockSupport.unpark(t);
        }
        return w;
    }

    private AsyncWaits asyncWaits() {
        workerThread();
        return waits;
    }

    /** The worker thread, started (with its waits) on first use; no lock once it runs. */
    private Thread workerThread() {
        Thread t = worker;
        return t != null ? t : startWorker();
    }

    private synchronized Thread startWorker() {
        if (worker == null) {
            // The worker inherits the calling thread's CPUs (a pinned rank's share); the waits are chosen by them
            waits = AsyncWaits.ofCallingThread(transport.localRanks());
            worker = Thread.ofPlatform().daemon().name("jccl-host-" + id + "-r" + rank()).start(this::workerLoop);
        }
        return worker;
    }

    /**
     * Waits until the worker is to run the queued works (true: a work is queued, no other thread
     * runs them, and the waits do not leave it to the caller any longer), or the communicator
     * closed (false). Polls, then parks until an enqueue (or close) wakes it.
     */
    private boolean awaitWork() {
        AsyncWaits aw = waits;
        long start = System.nanoTime();
        while (!closed) {
            EngineWork head = queue.peek();
            long now = System.nanoTime();
            if (head != null) {
                // Counted from the caller's last enqueue or await: a caller still queueing or awaiting
                // runs them soon; the worker runs them for a caller busy elsewhere.
                EngineWork tail = lastQueued;
                long last = Math.max(lastHelpNanos, tail != null ? tail.queuedNanos : head.queuedNanos);
                long defer = aw.workerDefers(now - last);
                if (defer > 0) {
                    LockSupport.parkNanos(this, defer); // the caller may run it meanwhile (help)
                } else if (!runner.get()) {
                    return true;
                } else {
                    aw.workerWaitsForHelper(); // a caller runs the queue now
                }
                start = System.nanoTime();
                continue;
            }
            long idle = now - start;
            if (!aw.workerParksAfter(idle)) {
                aw.workerIdle(idle);
                continue;
            }
            workerParked = true;
            if (queue.isEmpty() && !closed) {
                LockSupport.parkNanos(this, 50_000_000L); // closed is checked at least this often
            }
            workerParked = false;
        }
        return false;
    }

    private void workerLoop() {
        while (awaitWork()) {
            if (runner.compareAndSet(false, true)) {
                try {
                    runQueued(null);
                } finally {
                    runner.set(false);
                }
            }
        }
        failPending(new AbortedException("communicator " + id + " closed on rank " + rank() + " with this operation pending"));
    }

    /**
     * Runs the queued works in posting order on this thread, which holds {@link #runner}, until
     * {@code until} is done (null: until the queue is empty).
     */
    private void runQueued(EngineWork until) {
        EngineWork w;
        // The worker (until == null) stops between works for a waiting helper (help, one CPU).
        while (!closed && (until == null ? !helperWaits : !until.isDone()) && (w = queue.poll()) != null) {
            if (w.p2p != null) {
                runP2pBatch(w);
                continue;
            }
            // The count drops before the work completes: a caller whose await() returned must find
            // nothing pending, or its next blocking call would queue behind a finished work.
            JcclException failure = null;
            try {
                w.body.run();
            } catch (JcclException e) {
                failure = e;
            } catch (RuntimeException | Error e) {
                failure = new JcclException("rank " + rank() + ": async operation failed: " + e, e);
            }
            pending.finished();
            if (failure == null) {
                w.complete();
            } else {
                w.fail(failure);
            }
        }
    }

    /**
     * A thread that waits for {@code until} ({@code Work.await()}, or a blocking call behind async
     * works) runs the queued works up to it on its own, unless another thread runs them: what the
     * worker would have run, in the same order, without a hand-over. Where the rank's threads
     * outnumber its CPUs, the worker leaves fresh works to the caller for a while ({@link
     * AsyncWaits#workerDefers}), so that a stream of async calls awaited soon after runs on the
     * caller's thread alone instead of two threads taking turns on one CPU.
     */
    private void help(EngineWork until) {
        if (until.isDone() || queue.isEmpty()) {
            return;
        }
        AsyncWaits aw = waits;
        if (!aw.spare()) {
            lastHelpNanos = System.nanoTime();
        }
        if (!runner.compareAndSet(false, true)) {
            if (aw.spare()) {
                return; // the worker has a CPU of its own: let it go on
            }
            // One CPU: the worker hands the runner over after the work it runs now, and this
            // thread runs the rest, rather than the two taking turns on the CPU work after work.
            helperWaits = true;
            try {
                long start = System.nanoTime();
                for (int i = 0; !runner.compareAndSet(false, true); i++) {
                    if (until.isDone()) {
                        return;
                    }
                    aw.callerIdle(i, System.nanoTime() - start);
                }
            } finally {
                helperWaits = false;
            }
        }
        try {
            runQueued(until);
        } finally {
            runner.set(false);
        }
    }

    /**
     * Progresses consecutive sends/recvs together, taking in ones queued meanwhile. The works wait
     * in one queue per peer and direction (a lane), in posting order; a work leaves its lane once
     * done, so a long stream of async sends/recvs costs each pass its lanes' pending works only.
     */
    private void runP2pBatch(EngineWork first) {
        @SuppressWarnings("unchecked")
        java.util.ArrayDeque<EngineWork>[] lanes = new java.util.ArrayDeque[2 * size()];
        // With posting order (shared memory), a message may move only once every message posted
        // before it on its lane has moved completely, so that messages between a pair match in
        // posting order whatever the transport interleaves: only a lane's first work is tried.
        boolean inOrder = p2pInPostingOrder();
        lock.lock();
        try {
            admit(lanes, first); // first: a failure below fails it with the others
            checkOpen();
            callNanos = first.timeoutNanos;
            beginP2p(OpCode.SEND, null, -1, callNanos);
            int idle = 0;
            int open = 1;
            while (open > 0) {
                checkOpen();
                EngineWork next = queue.peek();
                if (next != null && next.p2p != null && queue.remove(next)) {
                    admit(lanes, next);
                    open++;
                    callNanos = Math.min(callNanos, next.timeoutNanos);
                }
                p2pMoved = false;
                int waitingOn = -1;
                for (java.util.ArrayDeque<EngineWork> lane : lanes) {
                    if (lane == null || lane.isEmpty()) {
                        continue;
                    }
                    if (inOrder) {
                        EngineWork w;
                        while ((w = lane.peekFirst()) != null && tryP2p(w)) {
                            lane.pollFirst();
                            open--;
                        }
                        if (w != null) {
                            waitingOn = w.p2p.peer();
                        }
                    } else {
                        for (java.util.Iterator<EngineWork> it = lane.iterator(); it.hasNext(); ) {
                            EngineWork w = it.next();
                            if (tryP2p(w)) {
                                it.remove();
                                open--;
                            } else {
                                waitingOn = w.p2p.peer();
                            }
                        }
                    }
                }
                if (p2pMoved) {
                    idle = 0;
                    touchP2pBatch();
                } else if (open > 0) {
                    try {
                        idleP2p(idle++, waitingOn);
                    } catch (JcclException e) {
                        // Take what the peers sent before they closed or failed, then give up.
                        boolean late = false;
                        for (java.util.ArrayDeque<EngineWork> lane : lanes) {
                            if (lane != null) {
                                for (EngineWork w : lane) {
                                    late |= !w.isDone() && w.p2p.progress();
                                }
                            }
                        }
                        if (!late) {
                            throw e;
                        }
                    }
                }
            }
        } catch (RuntimeException e) {
            JcclException j = failed(e);
            for (java.util.ArrayDeque<EngineWork> lane : lanes) {
                if (lane == null) {
                    continue;
                }
                for (EngineWork w : lane) {
                    if (!w.isDone()) {
                        recorder.failed(w.trace);
                        pending.finished();
                        w.fail(j);
                    }
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Whether a pass of {@link #runP2pBatch} moved anything (set by {@link #tryP2p}; the worker's). */
    private boolean p2pMoved;

    /**
     * Moves what {@code w} can move now; true when it is over: completed here, or ended elsewhere
     * (a failure), with nothing left to move.
     */
    private boolean tryP2p(EngineWork w) {
        if (w.isDone()) {
            return true;
        }
        if (w.p2p.progress()) {
            p2pMoved = true;
        }
        if (!w.p2p.isDone()) {
            return false;
        }
        recorder.completed(w.trace);
        pending.finished();
        w.complete();
        return true;
    }

    /** Traces {@code w} and puts it at the end of its lane. */
    private void admit(java.util.ArrayDeque<EngineWork>[] lanes, EngineWork w) {
        trace(w);
        int lane = 2 * w.p2p.peer() + (w.p2p.isSend() ? 1 : 0);
        if (lanes[lane] == null) {
            lanes[lane] = new java.util.ArrayDeque<>();
        }
        lanes[lane].add(w);
    }

    private void trace(EngineWork w) {
        P2p op = w.p2p;
        w.trace = recorder.schedule(0, op.isSend() ? OpCode.SEND : OpCode.RECV, op.buffer().type().ordinal(),
                op.buffer().count(), -1, -1, op.peer());
        recorder.started(w.trace);
    }

    private void failPending(JcclException e) {
        EngineWork w;
        while ((w = queue.poll()) != null) {
            pending.finished();
            w.fail(e);
        }
    }

    // ------------------------------------------------------------------ one rank

    /** One rank: the reduction of one input (PREMUL_SUM still scales, AVG divides by 1). */
    private static void copySelf(HostBuffer s, HostBuffer r, ReduceOp op, MemorySegment[] srcs, long[] offs) {
        org.jccl.internal.SegmentArrays.set(srcs, 0, s.segment());
        offs[0] = 0;
        Reductions.reduce(s.type(), op, r.segment(), 0, srcs, offs, 1, r.count(), 1);
        srcs[0] = null;
    }

    private final MemorySegment[] one = new MemorySegment[1];
    private final long[] oneOff = new long[1];

    private static void copy(HostBuffer s, HostBuffer r) {
        if (!s.sameStart(r)) {
            MemorySegment.copy(s.segment(), 0, r.segment(), 0, r.byteSize());
        }
    }

    // ------------------------------------------------------------------ one path for every collective

    /**
     * Runs validated collective {@code code}: on the caller's thread without allocating when
     * nothing async is pending, else behind the pending work; {@code async} returns its Work at once.
     */
    private Work run(int code, HostBuffer s, HostBuffer r, ReduceOp op, int root, Duration t, boolean async) {
        if (async) {
            return submit(OpCode.name(code), t, () -> body(code, s, r, op, root));
        }
        if (!inline()) {
            drainQueued(OpCode.name(code), t);
        }
        enter(t.toNanos());
        try {
            body(code, s, r, op, root);
        } catch (RuntimeException e) {
            throw failed(e);
        } finally {
            lock.unlock();
        }
        return null;
    }

    /**
     * Waits, within the blocking call's deadline {@code t}, until the async work queued before it
     * is done, so that the call then runs on the caller's thread in the same order as if it had
     * been queued: its buffers may be confined to that thread (the worker could not touch them),
     * and no hand-over to the worker costs it a wake-up. A queued work's own failure is reported
     * through its Work; a communicator it broke fails this call in {@link #checkOpen}.
     */
    private void drainQueued(String what, Duration t) {
        long end = System.nanoTime() + t.toNanos();
        for (int i = 0; pending.get() != 0; i++) {
            checkOpen();
            EngineWork w = lastQueued;
            long left = end - System.nanoTime();
            if (left <= 0) {
                throw new CollectiveTimeoutException("blocking " + what + " on rank " + rank() + " waited " + t
                        + " (the communicator's timeout) for the async operations queued before it; the last: " + w,
                        List.of());
            }
            if (w != null && !w.isDone()) {
                help(w);
                try {
                    w.await(Duration.ofNanos(left));
                } catch (JcclException e) {
                    // reported through that work; checkOpen() says whether it broke the communicator
                }
            } else {
                DRAIN_IDLE.idle(i); // a send/recv batch can finish its works out of order
            }
        }
        checkOpen();
    }

    private static final org.jccl.spi.IdleStrategy DRAIN_IDLE = new org.jccl.spi.BackoffIdleStrategy(0, 20, 1_000, 50_000);

    /**
     * One collective under the call lock: its fingerprint (per-rank count), the flight recorder and
     * the deadline ({@link #begin}), then the one-rank copy or the transport's algorithm.
     */
    private void body(int code, HostBuffer s, HostBuffer r, ReduceOp op, int root) {
        switch (code) {
            case OpCode.ALL_REDUCE, OpCode.REDUCE -> begin(code, s.type(), op, root, s.count());
            case OpCode.REDUCE_SCATTER -> begin(code, s.type(), op, root, r.count());
            case OpCode.BROADCAST, OpCode.SCATTER -> begin(code, r.type(), null, root, r.count());
            case OpCode.BARRIER -> begin(code, org.jccl.DataType.INT8, null, root, 0);
            default -> begin(code, s.type(), null, root, s.count()); // all-gather, gather, all-to-all
        }
        if (size() == 1) {
            switch (code) {
                case OpCode.ALL_REDUCE, OpCode.REDUCE, OpCode.REDUCE_SCATTER -> copySelf(s, r, op, one, oneOff);
                case OpCode.BARRIER -> { }
                default -> copy(s, r);
            }
        } else {
            switch (code) {
                case OpCode.ALL_REDUCE -> doAllReduce(s, r, op);
                case OpCode.BROADCAST -> doBroadcast(s, r, root);
                case OpCode.REDUCE -> doReduce(s, r, op, root);
                case OpCode.ALL_GATHER -> doAllGather(s, r);
                case OpCode.GATHER -> doGather(s, r, root);
                case OpCode.REDUCE_SCATTER -> doReduceScatter(s, r, op);
                case OpCode.ALL_TO_ALL -> doAllToAll(s, r);
                case OpCode.SCATTER -> doScatter(s, r, root);
                default -> doBarrier();
            }
        }
        end();
    }

    /** A host buffer argument; one an async call uses must be reachable from the worker thread. */
    private HostBuffer arg(Buffer b, String name, boolean async) {
        HostBuffer h = host(b, name);
        return async ? async(h, name) : h;
    }

    /**
     * The one entry of every call ({@link org.jccl.spi.AbstractCommunicator}): the host buffers and
     * their checks (HostArgs), then {@link #run} for a collective and {@link #p2p} for a send or
     * receive, under the op's deadline.
     */
    @Override
    protected final Work execute(Op o, boolean async) {
        Duration t = o.timeoutOr(timeout());
        ReduceOp op = o.op();
        int root = o.root();
        return switch (o.collective()) {
            case ALL_REDUCE -> {
                HostBuffer s = arg(o.send(), "send", async);
                HostBuffer r = arg(o.recv(), "recv", async);
                HostArgs.allReduce(s, r, op);
                yield run(OpCode.ALL_REDUCE, s, r, op, -1, t, async);
            }
            case BROADCAST -> {
                HostBuffer r = arg(o.recv(), "recv", async);
                HostBuffer s = rank() == root ? arg(o.send(), "send", async) : null;
                HostArgs.broadcast(s, r, root, rank());
                yield run(OpCode.BROADCAST, s, r, null, root, t, async);
            }
            case REDUCE -> {
                HostBuffer s = arg(o.send(), "send", async);
                HostBuffer r = HostArgs.reduce(s, o.recv(), op, root, rank(), size());
                yield run(OpCode.REDUCE, s, async ? async(r, "recv") : r, op, root, t, async);
            }
            case ALL_GATHER -> {
                HostBuffer s = arg(o.send(), "send", async);
                HostBuffer r = arg(o.recv(), "recv", async);
                HostArgs.gather(s, r, "allGather", rank(), size());
                yield run(OpCode.ALL_GATHER, s, r, null, -1, t, async);
            }
            case GATHER -> {
                HostBuffer s = arg(o.send(), "send", async);
                HostBuffer r = HostArgs.gatherRoot(s, o.recv(), root, rank(), size());
                yield run(OpCode.GATHER, s, async ? async(r, "recv") : r, null, root, t, async);
            }
            case REDUCE_SCATTER -> {
                HostBuffer s = arg(o.send(), "send", async);
                HostBuffer r = arg(o.recv(), "recv", async);
                HostArgs.reduceScatter(s, r, op, rank(), size());
                yield run(OpCode.REDUCE_SCATTER, s, r, op, -1, t, async);
            }
            case ALL_TO_ALL -> {
                HostBuffer s = arg(o.send(), "send", async);
                HostBuffer r = arg(o.recv(), "recv", async);
                HostArgs.allToAll(s, r, size());
                yield run(OpCode.ALL_TO_ALL, s, r, null, -1, t, async);
            }
            case SCATTER -> {
                HostBuffer r = arg(o.recv(), "recv", async);
                HostBuffer s = HostArgs.scatter(o.send(), r, root, rank(), size());
                yield run(OpCode.SCATTER, async ? async(s, "send") : s, r, null, root, t, async);
            }
            case BARRIER -> run(OpCode.BARRIER, null, null, null, -1, t, async);
            case SEND -> p2p(true, o.send(), o.peer(), t, async);
            case RECV -> p2p(false, o.recv(), o.peer(), t, async);
        };
    }

    // ------------------------------------------------------------------ point to point

    /**
     * A send or receive: blocking ones run on the caller's thread when nothing async is pending;
     * async ones (and blocking ones behind pending work) join the worker's batch of sends/recvs.
     */
    private Work p2p(boolean isSend, Buffer buffer, int peer, Duration t, boolean async) {
        // A blocking send/recv behind pending async work joins the worker's batch (it may be what
        // a pending receive of the peer waits for), so its buffer must be reachable from there too.
        boolean queued = async || !inline();
        HostBuffer b = arg(buffer, "buffer", queued);
        if (!queued) {
            p2pInline(isSend, b, peer, t.toNanos());
            return null;
        }
        checkOpen();
        Work w = enqueue(new EngineWork(null, rank(), t, null, newP2p(isSend, b, peer), asyncWaits(), this::help));
        if (!async) {
            w.await();
        }
        return w;
    }

    /**
     * A blocking sendRecv with nothing async pending: the send and the receive move together on the
     * calling thread (no hand-over to the worker), as the worker's batch would move them.
     */
    @Override
    protected boolean sendRecvInline(Buffer send, int dst, Buffer recv, int src) {
        if (!inline()) {
            return false; // async work pending: both join the worker's queue behind it
        }
        HostBuffer s = arg(send, "send", false);
        HostBuffer r = arg(recv, "recv", false);
        long tn = timeout().toNanos();
        lock.lock();
        try {
            checkOpen();
            callNanos = tn;
            long sent = recorder.schedule(0, OpCode.SEND, s.type().ordinal(), s.count(), -1, -1, dst);
            recorder.startedNow(sent);
            current = recorder.schedule(0, OpCode.RECV, r.type().ordinal(), r.count(), -1, -1, src);
            recorder.startedNow(current);
            beginP2p(OpCode.SEND, null, -1, tn); // a pair, as a batch of the worker
            P2p out = inlineP2p(0, true, s, dst);
            P2p in = inlineP2p(1, false, r, src);
            int idle = 0;
            while (!out.isDone() || !in.isDone()) {
                boolean moved = out.progress() | in.progress(); // both, every pass
                if (moved) {
                    idle = 0;
                    touchP2pBatch();
                    if (out.isDone() && sent >= 0) {
                        recorder.completed(sent);
                        sent = -1;
                    }
                } else {
                    try {
                        idleP2p(idle++, out.isDone() ? src : dst);
                    } catch (JcclException e) {
                        // Take what the peers sent before they closed or failed, then give up.
                        if (!(out.progress() | in.progress())) {
                            throw e;
                        }
                    }
                }
            }
            if (sent >= 0) {
                recorder.completed(sent);
            }
            end();
        } catch (RuntimeException e) {
            throw failed(e);
        } finally {
            forgetInline();
            lock.unlock();
        }
        return true;
    }

    private void p2pInline(boolean isSend, HostBuffer b, int peer, long tn) {
        lock.lock();
        try {
            checkOpen();
            callNanos = tn;
            int op = isSend ? OpCode.SEND : OpCode.RECV;
            current = recorder.schedule(0, op, b.type().ordinal(), b.count(), -1, -1, peer);
            recorder.startedNow(current);
            beginP2p(op, b, peer, tn);
            inlineP2p(0, isSend, b, peer).runToCompletion();
            end();
        } catch (RuntimeException e) {
            throw failed(e);
        } finally {
            forgetInline();
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ lifecycle

    @Override
    public Communicator split(int color, int key) {
        if (color < 0 && color != NO_COLOR) {
            throw new IllegalArgumentException("color is " + color + ": use a color >= 0, or Communicator.NO_COLOR to opt out");
        }
        int[] mine = {color, key};
        int[] all = new int[2 * size()];
        allGather(HostBuffer.of(mine), HostBuffer.of(all));
        int splitNo = ++splits;
        if (color == NO_COLOR) {
            return null;
        }
        int[] order = SubGroups.splitMembers(all, color);
        int newRank = SubGroups.indexOf(order, rank());
        int me = newRank;
        return org.jccl.internal.Settings.with(settings, () -> createSub(id + "s" + splitNo + "c" + color, order, me,
                new PrefixStore("split" + splitNo + "/" + color + "/", store)));
    }

    @Override
    public Communicator shrink(java.util.Set<Integer> excluded) {
        java.util.TreeSet<Integer> ex = ShrinkAgreement.checkExcluded(excluded, rank(), size());
        return shrinkTo(ex);
    }

    /**
     * Agrees through the store on the ranks that failed ({@link ShrinkAgreement#decideFailed}: the
     * failures this rank saw, the heartbeats' and the transport's dead ranks; one decision for
     * every survivor) and shrinks without them.
     */
    @Override
    public Communicator shrinkExcludingFailed() {
        java.util.SortedSet<Integer> agreed = ShrinkAgreement.decideFailed(store, "shrink" + (shrinks + 1) + "/", rank(), size(),
                this::failedRanks, timeout());
        LOG.info(rank(), () -> "shrinkExcludingFailed on " + id + ": the survivors agreed to exclude " + agreed);
        return shrinkTo(agreed);
    }

    private java.util.Set<Integer> deadNow() {
        java.util.Set<Integer> d = new java.util.TreeSet<>(transportDeadRanks());
        d.addAll(watch.deadMembers());
        return d;
    }

    private Communicator shrinkTo(java.util.SortedSet<Integer> excluded) {
        int no = ++shrinks;
        String base = "shrink" + no + "/";
        List<Integer> survivors = SubGroups.survivors(size(), excluded);
        if (survivors.isEmpty()) {
            throw new IllegalArgumentException("excluded holds every rank: nothing would be left");
        }
        ShrinkAgreement.checkSameExclusion(store, base, rank(), excluded, survivors, timeout());
        int newRank = survivors.indexOf(rank());
        LOG.info(rank(), () -> "shrinking " + id + " without " + excluded + ": rank " + rank() + " becomes " + newRank + " of "
                + survivors.size());
        int[] members = survivors.stream().mapToInt(Integer::intValue).toArray();
        return org.jccl.internal.Settings.with(settings, () -> createSub(id + "x" + no, members, newRank,
                new PrefixStore(base + "comm/", store)));
    }

    /** Ranks this communicator has seen fail or time out, and those the heartbeats or the transport report dead. */
    public java.util.Set<Integer> failedRanks() {
        java.util.TreeSet<Integer> out = new java.util.TreeSet<>(failedRanks);
        out.addAll(deadNow());
        return out;
    }

    @Override
    public void abort() {
        String reason = "abort() called on rank " + rank();
        abortLocally(reason);
        if (broken == null) {
            broken = new AbortedException("communicator " + id + " was aborted on rank " + rank());
        }
        // No call in progress: tell the peers now (else the failing call does).
        if (lock.tryLock()) {
            try {
                propagate(new AbortedException(reason), -1);
            } catch (RuntimeException ignored) {
                // best effort
            } finally {
                lock.unlock();
            }
        }
        LOG.info(rank(), () -> reason);
        autoDump(reason);
    }

    /**
     * Fails this communicator with {@code e} as if one of its calls had (a composing communicator
     * whose other part failed): later calls fail, and the peers learn the reason. Any thread; the
     * first failure stands.
     */
    public final void failWith(JcclException e) {
        failWith(e, -1);
    }

    /**
     * {@link #failWith(JcclException)} blaming {@code culprit} (a rank of this communicator that
     * died or did not arrive, -1: none), whom the peers then name rather than this rank.
     */
    public final void failWith(JcclException e, int culprit) {
        Checks.notNull(e, "cause");
        if (propagatesFromAnyThread()) {
            // no lock: a call in progress on another thread (a worker's long wait) must not delay it
            if (broken == null && !closed) {
                broken = e;
                propagate(e, culprit);
            }
            return;
        }
        lock.lock();
        try {
            if (broken == null && !closed) {
                broken = e;
                propagate(e, culprit);
            }
        } finally {
            lock.unlock();
        }
    }

    /** True once closed ({@link #allocate} refuses then). */
    @Override
    protected final boolean isClosed() {
        return closed;
    }

    /** True once the communicator failed or was aborted. */
    public final boolean isBroken() {
        return broken != null;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (pending.get() > 0) {
            abortLocally("close() called with operations pending");
        }
        closed = true;
        Thread w;
        synchronized (this) {
            w = worker;
        }
        if (w != null) {
            LockSupport.unpark(w);
            try {
                w.join(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        failPending(new AbortedException("communicator " + id + " closed on rank " + rank() + " with this operation pending"));
        lock.lock();
        try {
            closeResources();
        } finally {
            lock.unlock();
            if (store != null) {
                store.close();
            }
        }
        LOG.info(rank(), () -> "closed communicator " + id);
    }
}
