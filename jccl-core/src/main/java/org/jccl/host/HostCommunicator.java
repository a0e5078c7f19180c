package org.jccl.host;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.jccl.AbortedException;
import org.jccl.Buffer;
import org.jccl.Checks;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.jccl.bootstrap.PrefixStore;
import org.jccl.bootstrap.Store;
import org.jccl.diag.FlightRecorder;
import org.jccl.host.algo.ChunkedAllGather;
import org.jccl.host.algo.ChunkedAllToAll;
import org.jccl.host.algo.ChunkedBroadcast;
import org.jccl.host.algo.ChunkedReduce;
import org.jccl.host.algo.ChunkedReduceScatter;
import org.jccl.host.algo.OneShotAllReduce;
import org.jccl.host.algo.PointToPoint;
import org.jccl.host.algo.ReduceScatterAllGather;
import org.jccl.host.algo.ShmBarrier;
import org.jccl.host.shm.ShmSegmentDescriptor;
import org.jccl.host.shm.ShmTransport;
import org.jccl.internal.Log;

/**
 * The host engine's communicator: every collective over shared memory between the ranks of one
 * host. Blocking calls run on the caller's thread without allocating; async calls run in order on
 * one worker thread per communicator (consecutive async sends/recvs progress together, like an
 * NCCL group). Calls must come from one thread at a time, as with NCCL.
 *
 * <p>After a failure (timeout, dead peer, mismatch, abort) the communicator is broken: later
 * calls fail at once with the original cause; create a new communicator to go on.
 */
public final class HostCommunicator implements Communicator {
    private static final Log LOG = Log.get(HostCommunicator.class);

    static final int OP_ALLREDUCE = 0, OP_BROADCAST = 1, OP_REDUCE = 2, OP_ALLGATHER = 3, OP_REDUCESCATTER = 4,
            OP_ALLTOALL = 5, OP_GATHER = 6, OP_SCATTER = 7, OP_BARRIER = 8, OP_SEND = 9, OP_RECV = 10;
    private static final int NO_REDOP = 15;

    private final String id;
    private final int rank;
    private final int size;
    private final Store store;
    private final ShmTransport t;
    private Tuner tuner;
    private final Duration timeout;
    private final long timeoutNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final LinkedBlockingDeque<HostWork> queue = new LinkedBlockingDeque<>();
    private final AtomicInteger pending = new AtomicInteger();
    private final FlightRecorder recorder = FlightRecorder.fromEnv(ShmTransport.CallInfo.NAMES);
    private final java.nio.file.Path traceDir = FlightRecorder.traceDirFromEnv();
    private final java.util.Set<Integer> failedRanks = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final org.jccl.spi.Liveness.Watch watch;
    /** The deadline a {@link #withTimeout} view set for the caller's next call (caller thread; null: the default). */
    private Duration viewTimeout;
    /** The deadline of the call running now (under {@link #lock}). */
    private long callNanos;
    private long current = -1;
    private long collSeq;
    private int splits;
    private int shrinks;
    private Thread worker;
    private volatile JcclException broken;
    private volatile boolean closed;

    HostCommunicator(String id, int rank, int size, Store store, ShmTransport t, Tuner tuner, Duration timeout,
                     org.jccl.spi.Liveness.Watch watch) {
        this.watch = watch != null ? watch : org.jccl.spi.Liveness.NONE.watch(size);
        t.watch(this.watch);
        this.id = id;
        this.rank = rank;
        this.size = size;
        this.store = store;
        this.t = t;
        this.tuner = tuner;
        this.timeout = timeout;
        this.timeoutNanos = timeout.toNanos();
        this.callNanos = timeoutNanos;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public String backend() {
        return "host";
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    /**
     * A view whose calls (blocking, and the {@link Work} of async ones) have deadline {@code
     * timeout} instead of {@link #timeout()}; it shares everything else with this communicator
     * (sequence numbers, failures). Closing the view does not close this communicator.
     */
    @Override
    public Communicator withTimeout(Duration timeout) {
        Checks.timeout(timeout, "timeout");
        return new org.jccl.internal.TimeoutView(this, this::callTimeout, timeout);
    }

    /** The deadline of this thread's next calls (null: the default), set by a {@link #withTimeout} view. */
    private void callTimeout(Duration t) {
        viewTimeout = t;
    }

    private Duration callDuration() {
        Duration d = viewTimeout;
        return d != null ? d : timeout;
    }

    private long callTimeoutNanos() {
        Duration d = viewTimeout;
        return d != null ? d.toNanos() : timeoutNanos;
    }

    /** The liveness watch of this communicator (deaths the store's heartbeats report). */
    public org.jccl.spi.Liveness.Watch watch() {
        return watch;
    }

    /** This communicator's id (unique on the host; names its shared memory). */
    public String id() {
        return id;
    }

    /** Forces an all-reduce algorithm on this communicator (null: back to JCCL_ALGO / the tuner). For tests and tools. */
    public void forceAllReduceAlgorithm(Tuner.AllReduceAlgo algo) {
        tuner = algo == null ? Tuner.fromEnv() : new Tuner(algo.name(), 0);
    }

    // ------------------------------------------------------------------ validation

    private HostBuffer host(Buffer b, String name) {
        if (b == null) {
            throw new IllegalArgumentException(name + " is null: pass a Buffer (e.g. HostBuffer.of(array))");
        }
        if (b instanceof HostBuffer h) {
            return h;
        }
        throw new IllegalArgumentException(name + " is a " + b.location() + " buffer but this communicator runs the "
                + "host backend: pass a HostBuffer, or create the communicator with a device (Options.withDevice) "
                + "to use the nccl backend");
    }

    /** Async calls run on the worker thread: a buffer confined to the caller's thread cannot be used there. */
    private HostBuffer async(HostBuffer b, String name) {
        if (b != null && !b.segment().isAccessibleBy(workerThread())) {
            throw new IllegalArgumentException(name + " belongs to a confined Arena of another thread, but async "
                    + "operations run on jccl's worker thread: allocate it from Arena.ofShared() or Arena.ofAuto(), "
                    + "or use the blocking call");
        }
        return b;
    }

    private static void noPartialOverlap(HostBuffer a, String an, HostBuffer b, String bn) {
        if (a != b && a.overlaps(b) && !a.sameStart(b)) {
            throw new IllegalArgumentException(an + " and " + bn + " overlap without starting at the same element: "
                    + "pass the same buffer for an in-place call, or disjoint buffers");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new InvalidUsageException("communicator " + id + " (rank " + rank + ") is closed: create a new one with Jccl.init");
        }
        JcclException b = broken;
        if (b != null) {
            throw new InvalidUsageException("communicator " + id + " (rank " + rank + ") is unusable after an earlier failure ("
                    + b.getMessage() + "): close it and create a new one");
        }
    }

    // ------------------------------------------------------------------ execution

    /** Runs inline when nothing async is pending, else queues behind the pending work and waits. */
    private boolean inline() {
        checkOpen();
        return pending.get() == 0;
    }

    private void begin(int opcode, DataType type, ReduceOp op, int root, long count) {
        t.call.set(++collSeq, opcode, type.ordinal(), op == null ? NO_REDOP : op.kind().ordinal(), root, count, callNanos);
        current = recorder.schedule(collSeq, opcode, type.ordinal(), count, op == null ? -1 : op.kind().ordinal(), root, -1);
        recorder.startedNow(current);
    }

    private void end() {
        recorder.completed(current);
    }

    private JcclException failed(RuntimeException e) {
        JcclException j = e instanceof JcclException je ? je
                : new JcclException("rank " + rank + ": " + t.call.describe() + " failed: " + e, e);
        if (broken == null) {
            broken = j;
        }
        recorder.failed(current);
        if (j instanceof org.jccl.PeerFailureException pf) {
            failedRanks.add(pf.rank());
        } else if (j instanceof org.jccl.CollectiveTimeoutException te) {
            failedRanks.addAll(te.missingRanks());
        }
        autoDump(j.getMessage());
        // Tell the peers, whose pending operations then fail with this reason instead of waiting.
        // A mismatch or an abort is relayed as what it is, so that a rank that hears of it from
        // this one (and not from the rank that saw it first) fails with the same kind of error.
        int culprit = -1;
        long code = ShmTransport.ABORT_FAILED;
        if (j instanceof org.jccl.PeerFailureException pf) {
            culprit = pf.rank();
        } else if (j instanceof org.jccl.CollectiveTimeoutException te && !te.missingRanks().isEmpty()) {
            culprit = te.missingRanks().get(0);
        } else if (j instanceof org.jccl.CollectiveMismatchException) {
            code = ShmTransport.ABORT_MISMATCH;
        } else if (j instanceof AbortedException) {
            code = ShmTransport.ABORT_ABORTED;
        }
        t.fail(code, j.getMessage(), culprit);
        LOG.warn(rank, j.getMessage());
        return j;
    }

    /**
     * Takes the call lock for a call with deadline {@code tn} (no lambda: the inline path
     * allocates nothing).
     */
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

    /** Runs an async body under the call lock with deadline {@code tn}. */
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

    private Work submit(String what, Runnable body) {
        checkOpen();
        Duration d = callDuration();
        long tn = d.toNanos();
        return enqueue(new HostWork(what + " on rank " + rank, d, () -> run(body, tn)));
    }

    private Work enqueue(HostWork w) {
        pending.incrementAndGet();
        queue.add(w);
        workerThread();
        return w;
    }

    private synchronized Thread workerThread() {
        if (worker == null) {
            worker = Thread.ofPlatform().daemon().name("jccl-host-" + id + "-r" + rank).start(this::workerLoop);
        }
        return worker;
    }

    private void workerLoop() {
        while (!closed) {
            HostWork w;
            try {
                w = queue.poll(50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                break;
            }
            if (w == null) {
                continue;
            }
            if (w.p2p != null) {
                runP2pBatch(w);
                continue;
            }
            try {
                w.body.run();
                w.complete();
            } catch (JcclException e) {
                w.fail(e);
            } catch (RuntimeException e) {
                w.fail(new JcclException("rank " + rank + ": async operation failed: " + e, e));
            } finally {
                pending.decrementAndGet();
            }
        }
        failPending(new AbortedException("communicator " + id + " closed on rank " + rank + " with this operation pending"));
    }

    /** Progresses consecutive sends/recvs together, taking in ones queued meanwhile. */
    private void runP2pBatch(HostWork first) {
        List<HostWork> batch = new ArrayList<>();
        batch.add(first);
        trace(first);
        lock.lock();
        long tn = first.timeoutNanos;
        try {
            t.call.set(0, OP_SEND, 0, NO_REDOP, -1, 0, tn);
            int idle = 0;
            int open = 1;
            // One lane per peer and direction: a message may move only once every message posted
            // before it on its lane has moved completely, so that messages between a pair match in
            // posting order (their chunks share the pair's mailbox, a single stream).
            boolean[] laneBusy = new boolean[2 * size];
            while (open > 0) {
                checkOpen();
                HostWork next = queue.peekFirst();
                if (next != null && next.p2p != null && queue.remove(next)) {
                    batch.add(next);
                    trace(next);
                    open++;
                    tn = Math.min(tn, next.timeoutNanos);
                }
                boolean moved = false;
                int waitingOn = -1;
                java.util.Arrays.fill(laneBusy, false);
                for (HostWork w : batch) {
                    if (w.isDone()) {
                        continue;
                    }
                    int lane = 2 * w.p2p.peer() + (w.p2p.isSend() ? 1 : 0);
                    if (laneBusy[lane]) {
                        continue;
                    }
                    if (w.p2p.progress()) {
                        moved = true;
                    }
                    if (w.p2p.isDone()) {
                        recorder.completed(w.trace);
                        w.complete();
                        pending.decrementAndGet();
                        open--;
                    } else {
                        laneBusy[lane] = true;
                        waitingOn = w.p2p.peer();
                    }
                }
                if (moved) {
                    idle = 0;
                    t.call.set(0, OP_SEND, 0, NO_REDOP, -1, 0, tn);
                } else if (open > 0) {
                    try {
                        t.idleP2p(idle++, waitingOn);
                    } catch (JcclException e) {
                        // Take what the peers sent before they closed or failed, then give up.
                        boolean late = false;
                        for (HostWork w : batch) {
                            late |= !w.isDone() && w.p2p.progress();
                        }
                        if (!late) {
                            throw e;
                        }
                    }
                }
            }
        } catch (RuntimeException e) {
            JcclException j = failed(e);
            for (HostWork w : batch) {
                if (!w.isDone()) {
                    recorder.failed(w.trace);
                    w.fail(j);
                    pending.decrementAndGet();
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void trace(HostWork w) {
        PointToPoint op = w.p2p;
        w.trace = recorder.schedule(0, op.isSend() ? OP_SEND : OP_RECV, op.buffer().type().ordinal(), op.buffer().count(),
                -1, -1, op.peer());
        recorder.started(w.trace);
    }

    private void autoDump(String reason) {
        if (traceDir != null) {
            try {
                java.nio.file.Path f = recorder.dump(traceDir, id, rank, size, reason);
                LOG.warn(rank, "flight recorder written to " + f + " (read all ranks' dumps with: jccl doctor " + traceDir + ")");
            } catch (java.io.IOException e) {
                LOG.warn(rank, "cannot write the flight recorder to " + traceDir + ": " + e.getMessage());
            }
        }
    }

    @Override
    public java.nio.file.Path dumpFlightRecord(java.nio.file.Path dir) {
        Checks.notNull(dir, "dir");
        try {
            return recorder.dump(dir, id, rank, size, "dumpFlightRecord() called");
        } catch (java.io.IOException e) {
            throw new JcclException("cannot write the flight recorder to " + dir + ": " + e.getMessage(), e);
        }
    }

    private void failPending(JcclException e) {
        HostWork w;
        while ((w = queue.poll()) != null) {
            w.fail(e);
            pending.decrementAndGet();
        }
    }

    // ------------------------------------------------------------------ all-reduce

    private void checkAllReduce(HostBuffer s, HostBuffer r, ReduceOp op) {
        Checks.sameType(s, "send", r, "recv");
        Checks.count(r, "recv", s.count(), "recv must have as many elements as send");
        Checks.op(op, s.type());
        noPartialOverlap(s, "send", r, "recv");
    }

    private void doAllReduce(HostBuffer s, HostBuffer r, ReduceOp op) {
        begin(OP_ALLREDUCE, s.type(), op, -1, s.count());
        if (size == 1) {
            copySelf(s, r, op);
        } else if (tuner.allReduce(s.byteSize(), size) == Tuner.AllReduceAlgo.ONESHOT) {
            OneShotAllReduce.run(t, s, r, op);
        } else {
            ReduceScatterAllGather.run(t, s, r, op);
        }
        end();
    }

    /** One rank: the reduction of one input (PREMUL_SUM still scales, AVG divides by 1). */
    private void copySelf(HostBuffer s, HostBuffer r, ReduceOp op) {
        t.srcs[0] = s.segment();
        t.srcOffsets[0] = 0;
        org.jccl.host.kernel.Reductions.reduce(s.type(), op, r.segment(), 0, t.srcs, t.srcOffsets, 1, s.count(), 1);
        t.srcs[0] = null;
    }

    @Override
    public void allReduce(Buffer send, Buffer recv, ReduceOp op) {
        HostBuffer s = host(send, "send");
        HostBuffer r = host(recv, "recv");
        checkAllReduce(s, r, op);
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doAllReduce(s, r, op);
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("allReduce", () -> doAllReduce(s, r, op)).await();
        }
    }

    @Override
    public Work allReduceAsync(Buffer send, Buffer recv, ReduceOp op) {
        HostBuffer s = async(host(send, "send"), "send");
        HostBuffer r = async(host(recv, "recv"), "recv");
        checkAllReduce(s, r, op);
        return submit("allReduce", () -> doAllReduce(s, r, op));
    }

    // ------------------------------------------------------------------ broadcast

    /** Checks a broadcast's arguments; returns the root's send buffer (null on other ranks). */
    private HostBuffer checkBroadcast(Buffer send, HostBuffer r, int root) {
        Checks.rank(root, size, "root");
        if (rank != root) {
            return null;
        }
        HostBuffer s = host(send, "send");
        Checks.sameType(s, "send", r, "recv");
        Checks.count(r, "recv", s.count(), "recv must have as many elements as send");
        noPartialOverlap(s, "send", r, "recv");
        return s;
    }

    private void doBroadcast(HostBuffer s, HostBuffer r, int root) {
        begin(OP_BROADCAST, r.type(), null, root, r.count());
        if (size == 1) {
            if (!s.sameStart(r)) {
                java.lang.foreign.MemorySegment.copy(s.segment(), 0, r.segment(), 0, r.byteSize());
            }
        } else {
            ChunkedBroadcast.run(t, s, r, root);
        }
        end();
    }

    @Override
    public void broadcast(Buffer send, Buffer recv, int root) {
        HostBuffer r = host(recv, "recv");
        HostBuffer s = checkBroadcast(send, r, root);
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doBroadcast(s, r, root);
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("broadcast", () -> doBroadcast(s, r, root)).await();
        }
    }

    @Override
    public Work broadcastAsync(Buffer send, Buffer recv, int root) {
        HostBuffer r = async(host(recv, "recv"), "recv");
        HostBuffer s = async(checkBroadcast(send, r, root), "send");
        return submit("broadcast", () -> doBroadcast(s, r, root));
    }

    // ------------------------------------------------------------------ reduce

    private HostBuffer checkReduce(HostBuffer s, Buffer recv, ReduceOp op, int root) {
        Checks.rank(root, size, "root");
        Checks.op(op, s.type());
        if (rank != root) {
            return null;
        }
        HostBuffer r = host(recv, "recv");
        Checks.sameType(s, "send", r, "recv");
        Checks.count(r, "recv", s.count(), "the root's recv must have as many elements as send");
        noPartialOverlap(s, "send", r, "recv");
        return r;
    }

    private void doReduce(HostBuffer s, HostBuffer r, ReduceOp op, int root) {
        begin(OP_REDUCE, s.type(), op, root, s.count());
        if (size == 1) {
            copySelf(s, r, op);
        } else {
            ChunkedReduce.run(t, s, r, op, root);
        }
        end();
    }

    @Override
    public void reduce(Buffer send, Buffer recv, ReduceOp op, int root) {
        HostBuffer s = host(send, "send");
        HostBuffer r = checkReduce(s, recv, op, root);
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doReduce(s, r, op, root);
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("reduce", () -> doReduce(s, r, op, root)).await();
        }
    }

    @Override
    public Work reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root) {
        HostBuffer s = async(host(send, "send"), "send");
        HostBuffer r = async(checkReduce(s, recv, op, root), "recv");
        return submit("reduce", () -> doReduce(s, r, op, root));
    }

    // ------------------------------------------------------------------ all-gather / gather

    private void checkGather(HostBuffer s, HostBuffer r, String what) {
        Checks.sameType(s, "send", r, "recv");
        if (r.count() != s.count() * size) {
            Checks.count(r, "recv", s.count() * size, what + " needs size() x send.count() elements in recv");
        }
        if (r.overlaps(s)) {
            long c = s.count();
            if (!s.sameStart(r.slice(rank * c, c))) {
                throw new IllegalArgumentException("send overlaps recv but is not slice rank() of it: for an in-place "
                        + what + " pass recv.slice(rank() * count, count) as send");
            }
        }
    }

    private void doAllGather(HostBuffer s, HostBuffer r, int root) {
        begin(root < 0 ? OP_ALLGATHER : OP_GATHER, s.type(), null, root, s.count());
        if (size == 1) {
            if (!s.sameStart(r)) {
                java.lang.foreign.MemorySegment.copy(s.segment(), 0, r.segment(), 0, s.byteSize());
            }
        } else {
            ChunkedAllGather.run(t, s, r, root);
        }
        end();
    }

    @Override
    public void allGather(Buffer send, Buffer recv) {
        HostBuffer s = host(send, "send");
        HostBuffer r = host(recv, "recv");
        checkGather(s, r, "allGather");
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doAllGather(s, r, -1);
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("allGather", () -> doAllGather(s, r, -1)).await();
        }
    }

    @Override
    public Work allGatherAsync(Buffer send, Buffer recv) {
        HostBuffer s = async(host(send, "send"), "send");
        HostBuffer r = async(host(recv, "recv"), "recv");
        checkGather(s, r, "allGather");
        return submit("allGather", () -> doAllGather(s, r, -1));
    }

    private HostBuffer checkGatherRoot(HostBuffer s, Buffer recv, int root) {
        Checks.rank(root, size, "root");
        if (rank != root) {
            return null;
        }
        HostBuffer r = host(recv, "recv");
        checkGather(s, r, "gather");
        return r;
    }

    @Override
    public void gather(Buffer send, Buffer recv, int root) {
        HostBuffer s = host(send, "send");
        HostBuffer r = checkGatherRoot(s, recv, root);
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doAllGather(s, r, root);
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("gather", () -> doAllGather(s, r, root)).await();
        }
    }

    @Override
    public Work gatherAsync(Buffer send, Buffer recv, int root) {
        HostBuffer s = async(host(send, "send"), "send");
        HostBuffer r = async(checkGatherRoot(s, recv, root), "recv");
        return submit("gather", () -> doAllGather(s, r, root));
    }

    // ------------------------------------------------------------------ reduce-scatter

    private void checkReduceScatter(HostBuffer s, HostBuffer r, ReduceOp op) {
        Checks.sameType(s, "send", r, "recv");
        Checks.count(s, "send", r.count() * size, "reduceScatter needs size() x recv.count() elements in send");
        Checks.op(op, s.type());
        if (r.overlaps(s)) {
            long c = r.count();
            if (!r.sameStart(s.slice(rank * c, c))) {
                throw new IllegalArgumentException("recv overlaps send but is not slice rank() of it: for an in-place "
                        + "reduceScatter pass send.slice(rank() * count, count) as recv");
            }
        }
    }

    private void doReduceScatter(HostBuffer s, HostBuffer r, ReduceOp op) {
        begin(OP_REDUCESCATTER, s.type(), op, -1, r.count());
        if (size == 1) {
            copySelf(s, r, op);
        } else {
            ChunkedReduceScatter.run(t, s, r, op);
        }
        end();
    }

    @Override
    public void reduceScatter(Buffer send, Buffer recv, ReduceOp op) {
        HostBuffer s = host(send, "send");
        HostBuffer r = host(recv, "recv");
        checkReduceScatter(s, r, op);
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doReduceScatter(s, r, op);
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("reduceScatter", () -> doReduceScatter(s, r, op)).await();
        }
    }

    @Override
    public Work reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op) {
        HostBuffer s = async(host(send, "send"), "send");
        HostBuffer r = async(host(recv, "recv"), "recv");
        checkReduceScatter(s, r, op);
        return submit("reduceScatter", () -> doReduceScatter(s, r, op));
    }

    // ------------------------------------------------------------------ all-to-all / scatter

    private void checkAllToAll(HostBuffer s, HostBuffer r) {
        Checks.sameType(s, "send", r, "recv");
        Checks.count(r, "recv", s.count(), "allToAll sends and receives the same number of elements");
        Checks.perRankCount(s, size, "send");
        noPartialOverlap(s, "send", r, "recv");
    }

    private void doAllToAll(HostBuffer s, HostBuffer r) {
        long block = s.count() / size;
        begin(OP_ALLTOALL, s.type(), null, -1, s.count());
        if (size == 1) {
            if (!s.sameStart(r)) {
                java.lang.foreign.MemorySegment.copy(s.segment(), 0, r.segment(), 0, s.byteSize());
            }
        } else {
            ChunkedAllToAll.run(t, s, r, block, -1);
        }
        end();
    }

    @Override
    public void allToAll(Buffer send, Buffer recv) {
        HostBuffer s = host(send, "send");
        HostBuffer r = host(recv, "recv");
        checkAllToAll(s, r);
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doAllToAll(s, r);
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("allToAll", () -> doAllToAll(s, r)).await();
        }
    }

    @Override
    public Work allToAllAsync(Buffer send, Buffer recv) {
        HostBuffer s = async(host(send, "send"), "send");
        HostBuffer r = async(host(recv, "recv"), "recv");
        checkAllToAll(s, r);
        return submit("allToAll", () -> doAllToAll(s, r));
    }

    private HostBuffer checkScatter(Buffer send, HostBuffer r, int root) {
        Checks.rank(root, size, "root");
        if (rank != root) {
            return null;
        }
        HostBuffer s = host(send, "send");
        Checks.sameType(s, "send", r, "recv");
        Checks.count(s, "send", r.count() * size, "scatter needs size() x recv.count() elements in the root's send");
        if (r.overlaps(s)) {
            long c = r.count();
            if (!r.sameStart(s.slice(rank * c, c))) {
                throw new IllegalArgumentException("recv overlaps send but is not slice rank() of it: for an in-place "
                        + "scatter pass send.slice(rank() * count, count) as recv");
            }
        }
        return s;
    }

    private void doScatter(HostBuffer s, HostBuffer r, int root) {
        begin(OP_SCATTER, r.type(), null, root, r.count());
        if (size == 1) {
            if (!s.sameStart(r)) {
                java.lang.foreign.MemorySegment.copy(s.segment(), 0, r.segment(), 0, r.byteSize());
            }
        } else {
            ChunkedAllToAll.run(t, s, r, r.count(), root);
        }
        end();
    }

    @Override
    public void scatter(Buffer send, Buffer recv, int root) {
        HostBuffer r = host(recv, "recv");
        HostBuffer s = checkScatter(send, r, root);
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doScatter(s, r, root);
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("scatter", () -> doScatter(s, r, root)).await();
        }
    }

    @Override
    public Work scatterAsync(Buffer send, Buffer recv, int root) {
        HostBuffer r = async(host(recv, "recv"), "recv");
        HostBuffer s = async(checkScatter(send, r, root), "send");
        return submit("scatter", () -> doScatter(s, r, root));
    }

    // ------------------------------------------------------------------ point to point

    private void p2pInline(boolean isSend, HostBuffer b, int peer) {
        long tn = callTimeoutNanos();
        lock.lock();
        try {
            checkOpen();
            callNanos = tn;
            t.call.set(0, isSend ? OP_SEND : OP_RECV, b.type().ordinal(), NO_REDOP, peer, b.count(), tn);
            current = recorder.schedule(0, isSend ? OP_SEND : OP_RECV, b.type().ordinal(), b.count(), -1, -1, peer);
            recorder.startedNow(current);
            new PointToPoint(t, isSend, b, peer).runToCompletion();
            recorder.completed(current);
        } catch (RuntimeException e) {
            throw failed(e);
        } finally {
            lock.unlock();
        }
    }

    private Work p2pAsync(boolean isSend, HostBuffer b, int peer) {
        checkOpen();
        String what = (isSend ? "send to rank " : "recv from rank ") + peer + " (" + b.type() + " x " + b.count() + ")";
        return enqueue(new HostWork(what + " on rank " + rank, callDuration(), new PointToPoint(t, isSend, b, peer)));
    }

    @Override
    public void send(Buffer buffer, int peer) {
        HostBuffer b = host(buffer, "buffer");
        Checks.rank(peer, size, "peer");
        if (inline()) {
            p2pInline(true, b, peer);
        } else {
            p2pAsync(true, b, peer).await();
        }
    }

    @Override
    public Work sendAsync(Buffer buffer, int peer) {
        HostBuffer b = async(host(buffer, "buffer"), "buffer");
        Checks.rank(peer, size, "peer");
        return p2pAsync(true, b, peer);
    }

    @Override
    public void recv(Buffer buffer, int peer) {
        HostBuffer b = host(buffer, "buffer");
        Checks.rank(peer, size, "peer");
        if (inline()) {
            p2pInline(false, b, peer);
        } else {
            p2pAsync(false, b, peer).await();
        }
    }

    @Override
    public Work recvAsync(Buffer buffer, int peer) {
        HostBuffer b = async(host(buffer, "buffer"), "buffer");
        Checks.rank(peer, size, "peer");
        return p2pAsync(false, b, peer);
    }

    // ------------------------------------------------------------------ barrier

    private void doBarrier() {
        begin(OP_BARRIER, DataType.INT8, null, -1, 0);
        if (size > 1) {
            ShmBarrier.run(t);
        }
        end();
    }

    @Override
    public void barrier() {
        if (inline()) {
            enter(callTimeoutNanos());
            try {
                doBarrier();
            } catch (RuntimeException e) {
                throw failed(e);
            } finally {
                lock.unlock();
            }
        } else {
            submit("barrier", this::doBarrier).await();
        }
    }

    @Override
    public Work barrierAsync() {
        return submit("barrier", this::doBarrier);
    }

    // ------------------------------------------------------------------ lifecycle

    @Override
    public Communicator split(int color, int key) {
        if (color < 0 && color != NO_COLOR) {
            throw new IllegalArgumentException("color is " + color + ": use a color >= 0, or Communicator.NO_COLOR to opt out");
        }
        int[] mine = {color, key};
        int[] all = new int[2 * size];
        allGather(HostBuffer.of(mine), HostBuffer.of(all));
        int splitNo = ++splits;
        if (color == NO_COLOR) {
            return null;
        }
        List<int[]> members = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (all[2 * r] == color) {
                members.add(new int[] {all[2 * r + 1], r});
            }
        }
        members.sort((a, b) -> a[0] != b[0] ? Integer.compare(a[0], b[0]) : Integer.compare(a[1], b[1]));
        int newRank = -1;
        for (int i = 0; i < members.size(); i++) {
            if (members.get(i)[1] == rank) {
                newRank = i;
            }
        }
        String subId = id + "s" + splitNo + "c" + color;
        Store sub = new PrefixStore("split" + splitNo + "/" + color + "/", store);
        int[] old = new int[members.size()];
        for (int i = 0; i < old.length; i++) {
            old[i] = members.get(i)[1];
        }
        return HostBackend.create(subId, newRank, members.size(), members.size(), sub, timeout, watch.sub(old));
    }

    @Override
    public Communicator shrink(java.util.Set<Integer> excluded) {
        Checks.notNull(excluded, "excluded");
        java.util.TreeSet<Integer> ex = new java.util.TreeSet<>();
        for (Integer r : excluded) {
            if (r == null) {
                throw new IllegalArgumentException("excluded contains null: pass rank numbers");
            }
            Checks.rank(r, size, "excluded rank");
            ex.add(r);
        }
        if (ex.contains(rank)) {
            throw new IllegalArgumentException("excluded contains this rank (" + rank + "): a rank that leaves does not call shrink");
        }
        return shrinkTo(ex);
    }

    @Override
    public Communicator shrinkExcludingFailed() {
        int no = shrinks + 1;
        String base = "shrink" + no + "/known/";
        java.util.TreeSet<Integer> known = new java.util.TreeSet<>(failedRanks);
        known.addAll(t.deadRanks());
        known.remove(rank);
        store.set(base + rank, encode(known));
        // Hear from every rank not known dead; a rank another survivor (or the pid check) reports
        // dead meanwhile is dropped from the wait.
        java.util.TreeSet<Integer> union = new java.util.TreeSet<>(known);
        java.util.TreeSet<Integer> pending = new java.util.TreeSet<>();
        for (int r = 0; r < size; r++) {
            if (r != rank && !known.contains(r)) {
                pending.add(r);
            }
        }
        long deadline = System.nanoTime() + timeoutNanos;
        while (!pending.isEmpty()) {
            for (java.util.Iterator<Integer> it = pending.iterator(); it.hasNext(); ) {
                int r = it.next();
                byte[] v = store.tryGet(base + r);
                if (v != null) {
                    union.addAll(decode(v));
                    it.remove();
                }
            }
            pending.removeAll(union);
            pending.removeAll(t.deadRanks());
            if (pending.isEmpty()) {
                break;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new org.jccl.CollectiveTimeoutException("shrinkExcludingFailed on rank " + rank + " timed out after "
                        + timeout + ": rank(s) " + pending + " neither joined nor were reported failed", new ArrayList<>(pending));
            }
            java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
        }
        union.addAll(t.deadRanks());
        union.remove(rank);
        return shrinkTo(union);
    }

    private Communicator shrinkTo(java.util.SortedSet<Integer> excluded) {
        int no = ++shrinks;
        String base = "shrink" + no + "/";
        byte[] mine = encode(excluded);
        store.set(base + "set/" + rank, mine);
        List<Integer> survivors = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (!excluded.contains(r)) {
                survivors.add(r);
            }
        }
        if (survivors.size() < 1) {
            throw new IllegalArgumentException("excluded holds every rank: nothing would be left");
        }
        for (int r : survivors) {
            if (r != rank) {
                byte[] theirs = store.get(base + "set/" + r, timeout);
                if (!java.util.Arrays.equals(mine, theirs)) {
                    throw new org.jccl.CollectiveMismatchException("shrink: rank " + rank + " excludes " + excluded + " but rank "
                            + r + " excludes " + decode(theirs) + ": every survivor must exclude the same ranks");
                }
            }
        }
        int newRank = survivors.indexOf(rank);
        LOG.info(rank, () -> "shrinking " + id + " without " + excluded + ": rank " + rank + " becomes " + newRank + " of " + survivors.size());
        return HostBackend.create(id + "x" + no, newRank, survivors.size(), survivors.size(),
                new PrefixStore(base + "comm/", store), timeout, watch.sub(survivors));
    }

    private static byte[] encode(java.util.Set<Integer> ranks) {
        StringBuilder b = new StringBuilder();
        for (int r : new java.util.TreeSet<>(ranks)) {
            b.append(r).append(',');
        }
        return b.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static java.util.Set<Integer> decode(byte[] v) {
        java.util.TreeSet<Integer> out = new java.util.TreeSet<>();
        for (String p : new String(v, java.nio.charset.StandardCharsets.UTF_8).split(",")) {
            if (!p.isEmpty()) {
                out.add(Integer.parseInt(p));
            }
        }
        return out;
    }

    /** Ranks this communicator has seen fail or time out. */
    public java.util.Set<Integer> failedRanks() {
        java.util.TreeSet<Integer> out = new java.util.TreeSet<>(failedRanks);
        out.addAll(t.deadRanks());
        return out;
    }

    /**
     * Fails this communicator with {@code cause} as if one of its calls had (a composing
     * communicator whose other part failed): later calls fail, and the peers' waits end with the
     * reason. Callable from any thread; the first failure stands.
     */
    public void failWith(JcclException cause) {
        Checks.notNull(cause, "cause");
        if (closed || broken != null) {
            return;
        }
        broken = cause;
        long code = cause instanceof org.jccl.CollectiveMismatchException ? ShmTransport.ABORT_MISMATCH
                : cause instanceof AbortedException ? ShmTransport.ABORT_ABORTED : ShmTransport.ABORT_FAILED;
        t.fail(code, cause.getMessage(), -1);
    }

    @Override
    public void abort() {
        String reason = "abort() called on rank " + rank;
        t.abort(reason);
        if (broken == null) {
            broken = new AbortedException("communicator " + id + " was aborted on rank " + rank);
        }
        LOG.info(rank, () -> reason);
        autoDump(reason);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (pending.get() > 0) {
            t.abort("close() called with operations pending");
        }
        closed = true;
        Thread w;
        synchronized (this) {
            w = worker;
        }
        if (w != null) {
            try {
                w.join(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        failPending(new AbortedException("communicator " + id + " closed on rank " + rank + " with this operation pending"));
        lock.lock();
        try {
            t.close();
        } finally {
            lock.unlock();
            store.close();
        }
        LOG.info(rank, () -> "closed communicator " + id);
    }

    @Override
    public String toString() {
        return "HostCommunicator[" + id + ", rank " + rank + " of " + size + "]";
    }

    /** Segment geometry used by new communicators (JCCL_SHM_SLOT_BYTES, JCCL_SHM_SLOTS). */
    static ShmSegmentDescriptor.Geometry geometry(int size) {
        long slot = envLong("JCCL_SHM_SLOT_BYTES", 256 << 10, 4096, 1L << 30);
        slot = (slot + 4095) / 4096 * 4096;
        int k = (int) envLong("JCCL_SHM_SLOTS", 4, 2, 64);
        return new ShmSegmentDescriptor.Geometry(size, k, slot, 4, 64 << 10);
    }

    static long envLong(String name, long dflt, long min, long max) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            return dflt;
        }
        try {
            long x = Long.parseLong(v.trim());
            if (x < min || x > max) {
                throw new NumberFormatException();
            }
            return x;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + "=" + v + " is invalid: give an integer in [" + min + ", " + max + "]");
        }
    }
}
