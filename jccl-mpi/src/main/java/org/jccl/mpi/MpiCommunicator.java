package org.jccl.mpi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.jccl.mpi.MpiArgs.count;
import static org.jccl.mpi.MpiArgs.host;
import static org.jccl.mpi.MpiArgs.sameShape;
import static org.jccl.mpi.MpiArgs.writable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.jccl.AbortedException;
import org.jccl.Buffer;
import org.jccl.Checks;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.jccl.bootstrap.Store;
import org.jccl.host.kernel.Reductions;
import org.jccl.internal.Log;

/**
 * A jccl communicator on an MPI communicator of its own (MPI_Comm_idup of MPI_COMM_WORLD, or
 * MPI_Comm_split of a parent), so its collectives and messages never mix with another's.
 *
 * <p>Every operation, blocking or not, starts as MPI's nonblocking form (MPI_Iallreduce, ...,
 * MPI_Isend/MPI_Irecv with one tag: the communicator already separates them) and is completed by
 * MPI_Test polling against the deadline, because a blocking MPI call cannot be given one
 * ({@code JCCL_MPI_BLOCKING=native} trades that for MPI's blocking forms, see {@link MpiRuntime}).
 * A blocking call issues and waits under the communicator's lock; an async call issues under it
 * and returns a {@link Work}. Heap buffers are staged through native memory ({@link Staging}).
 *
 * <p>After a failure (an MPI error, a timeout) the communicator is broken: later calls fail at
 * once with the original cause. MPI cannot cancel a started collective, so a timed-out one stays
 * pending in MPI; {@link #abort()} (MPI_Abort) ends the job.
 */
final class MpiCommunicator extends org.jccl.spi.AbstractCommunicator<Work> {
    private static final Log LOG = Log.get(MpiCommunicator.class);
    /** The tag of every send/recv (the MPI communicator keeps jccl communicators apart). */
    static final int TAG = 0x6a63;
    private static final AtomicInteger IDS = new AtomicInteger();

    /** The MPI library state this communicator runs on (its works read the type handles). */
    final MpiRuntime rt;
    /** This communicator's name in messages. */
    final String id;
    private final MemorySegment comm;
    private final MemorySegment commCell;
    private final Store store;
    private final Staging staging = new Staging();
    private final ReentrantLock lock = new ReentrantLock();
    private final MpiWork blocking;
    private final Set<MpiWork> pending = ConcurrentHashMap.newKeySet();
    private int splits;
    private volatile JcclException broken;
    private volatile boolean closed;
    /**
     * JCCL_MPI_BLOCKING=native: odd while a blocking MPI call of this communicator runs, counted
     * up at its start and end (release stores: plain moves on x86, no clock read on the hot path).
     * The watchdog samples it; {@link #watchSeq} and {@link #watchSince} are the watchdog's own.
     */
    private long nativeCalls;
    private long watchSeq = -1;
    private long watchSince;
    private static final java.lang.invoke.VarHandle NATIVE_CALLS = org.jccl.internal.VarHandles.field(
            java.lang.invoke.MethodHandles.lookup(), "nativeCalls", long.class);

    private MpiCommunicator(MpiRuntime rt, String id, MemorySegment comm, Duration timeout, Store store) {
        int[] rankSize = rankAndSize(comm);
        super("mpi", rankSize[0], rankSize[1], timeout);
        this.rt = rt;
        this.id = id;
        this.comm = comm;
        this.callNanos = timeout.toNanos();
        this.store = store;
        this.commCell = Arena.ofAuto().allocate(ADDRESS);
        commCell.set(ADDRESS, 0, comm);
        this.blocking = new MpiWork(this, staging, true);
        rt.register(this);
    }

    /** MPI errors come back as return codes on {@code comm}; its {rank, size}. */
    private static int[] rankAndSize(MemorySegment comm) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            MpiRuntime.check(MpiLibrary.commSetErrhandler(comm, MpiLibrary.ERRORS_RETURN), "MPI_Comm_set_errhandler");
            MpiRuntime.check(MpiLibrary.commRank(comm, out), "MPI_Comm_rank");
            int rank = out.get(JAVA_INT, 0);
            MpiRuntime.check(MpiLibrary.commSize(comm, out), "MPI_Comm_size");
            return new int[] {rank, out.get(JAVA_INT, 0)};
        }
    }

    /**
     * At exit: whether MPI is done with every operation this communicator started, asking it
     * again for up to {@code deadline} (System.nanoTime).
     */
    boolean settledForExit(long deadline) {
        // The blocking instance belongs to whoever holds the lock: a thread still inside a
        // blocking call at exit means MPI is in use. Holding the lock keeps it from starting one.
        if (!lock.tryLock()) {
            return false;
        }
        try {
            List<MpiWork> all = new ArrayList<>(pending);
            if (blocking.inMpi()) {
                all.add(blocking);
            }
            while (true) {
                boolean settled = true;
                for (MpiWork w : all) {
                    settled &= w.settledForExit();
                }
                if (settled || System.nanoTime() - deadline >= 0) {
                    return settled;
                }
                Thread.yield();
            }
        } finally {
            lock.unlock();
        }
    }

    /** A communicator over every process of MPI_COMM_WORLD (collective: every process calls it). */
    static MpiCommunicator world(MpiRuntime rt, Duration timeout, Store store) {
        String id = "mpi-world#" + IDS.incrementAndGet();
        // Global memory: after a timeout MPI may still complete the dup and write into it.
        MemorySegment cells = Arena.global().allocate(24, 8);
        MemorySegment newComm = cells.asSlice(0, 8);
        MemorySegment req = cells.asSlice(8, 8);
        MemorySegment flag = cells.asSlice(16, 4);
        // MPI_Comm_idup, not MPI_Comm_dup: the wait for the other processes gets the deadline.
        MpiRuntime.check(MpiLibrary.commIdup(MpiLibrary.COMM_WORLD, newComm, req), "MPI_Comm_idup(MPI_COMM_WORLD)");
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        while (true) {
            MpiRuntime.check(MpiLibrary.test(req, flag, MemorySegment.NULL), "MPI_Test(MPI_Comm_idup)");
            if (flag.get(JAVA_INT, 0) != 0) {
                break;
            }
            long now = System.nanoTime();
            if (now - deadline >= 0) {
                throw new CollectiveTimeoutException("rank " + rt.worldRank + ": forming " + id + " (MPI_Comm_idup of "
                        + "MPI_COMM_WORLD) did not complete within " + timeout + ": not every process of the MPI job "
                        + "called Jccl.init with the mpi backend", List.of());
            }
            // Other ranks may still be starting their JVMs: do not take their cores meanwhile.
            if (now - start < TimeUnit.MILLISECONDS.toNanos(10)) {
                Thread.yield();
            } else {
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(200));
            }
        }
        return new MpiCommunicator(rt, id, newComm.get(ADDRESS, 0), timeout, store);
    }

    /** The deadline of the call being made now (its op's: a withTimeout view's, or the communicator's); caller thread. */
    private long callNanos;

    /**
     * The one entry of every call ({@link org.jccl.spi.AbstractCommunicator}): MPI cannot cancel
     * a started operation, so past a view's deadline the communicator is unusable, as past its
     * own (with {@code JCCL_MPI_BLOCKING=native} the watchdog ends the job).
     */
    @Override
    protected Work execute(org.jccl.spi.Op o, boolean async) {
        callNanos = o.timeoutNanos(timeout().toNanos());
        started = null;
        int rc;
        try {
            // Each checks its arguments, takes its work with begin, stages it and returns MPI's return code.
            rc = switch (o.collective()) {
                case ALL_REDUCE -> allReduce(o.send(), o.recv(), o.op(), async);
                case BROADCAST -> broadcast(o.send(), o.recv(), o.root(), async);
                case REDUCE -> reduce(o.send(), o.recv(), o.op(), o.root(), async);
                case ALL_GATHER -> allGather(o.send(), o.recv(), async);
                case GATHER -> gather(o.send(), o.recv(), o.root(), async);
                case REDUCE_SCATTER -> reduceScatter(o.send(), o.recv(), o.op(), async);
                case ALL_TO_ALL -> allToAll(o.send(), o.recv(), async);
                case SCATTER -> scatter(o.send(), o.recv(), o.root(), async);
                case BARRIER -> barrier(async);
                case SEND -> send(o.send(), o.peer(), async);
                case RECV -> recv(o.recv(), o.peer(), async);
            };
        } catch (RuntimeException e) {
            throw started == null ? e : abandon(started, e); // after begin, before MPI saw the operation
        }
        return end(started, rc, async);
    }

    /** The work {@link #begin} took for the call being made now, until {@link #end} or {@link #abandon}; caller thread. */
    private MpiWork started;

    /** The deadline of the call being made now: a view's, or the communicator's. */
    long callBudgetNanos() {
        return callNanos;
    }

    // ------------------------------------------------------------------ validation

    private void checkOpen() {
        checkUsable(id, rank(), closed, broken);
    }

    // ------------------------------------------------------------------ execution

    /**
     * Takes the lock and the work object of one operation; {@link #execute} ends it ({@link #end}'s
     * finally unlocks), or {@link #abandon}s it when staging throws.
     */
    private MpiWork begin(boolean async, String name, DataType type, long n, ReduceOp op, int peer) {
        lock.lock();
        try {
            checkOpen();
            if (async) {
                MpiWork w = new MpiWork(this, staging, false).reset(name, type, n, op, peer);
                w.trace = traceStart(name, type, n, op, peer);
                return started = w;
            }
            blocking.reset(name, type, n, op, peer);
            blocking.trace = traceStart(name, type, n, op, peer);
            if (rt.nativeBlocking) {
                // After the reset: the watchdog reads the description after it sees this.
                NATIVE_CALLS.setRelease(this, nativeCalls + 1);
            }
            return started = blocking;
        } catch (RuntimeException | Error e) {
            lock.unlock();
            throw e;
        }
    }

    /**
     * Ends an operation started by {@link #begin}: checks MPI's return code, then returns the
     * pending work (async) or waits for it (blocking; returns null). Always releases the lock.
     */
    private Work end(MpiWork w, int rc, boolean async) {
        started = null; // keeps no finished work alive
        try {
            boolean nat = nativeCall(async);
            leaveNative();
            if (rc != MpiLibrary.SUCCESS) {
                w.abandon();
                throw failed(MpiRuntime.error(rc, w.describe()));
            }
            if (nat) {
                w.completedInline();
                return null;
            }
            w.issued();
            if (async) {
                pending.add(w);
                return w;
            }
            w.await();
            return null;
        } finally {
            lock.unlock();
        }
    }

    /** Undoes {@link #begin} when preparing the operation failed before MPI saw it. */
    private RuntimeException abandon(MpiWork w, RuntimeException e) {
        started = null;
        leaveNative();
        w.abandon();
        lock.unlock();
        return e;
    }

    /** Whether this call goes to MPI's blocking form (JCCL_MPI_BLOCKING=native and a blocking call). */
    private boolean nativeCall(boolean async) {
        return !async && rt.nativeBlocking;
    }

    /** Ends the blocking MPI call that {@link #begin} announced, if any. */
    private void leaveNative() {
        if ((nativeCalls & 1) != 0) {
            NATIVE_CALLS.setRelease(this, nativeCalls + 1);
        }
    }

    /**
     * The watchdog's look at this communicator (its thread only): a blocking MPI call seen in
     * progress, the same one, for longer than the timeout ends the job. The deadline is thus
     * kept to within the watchdog's period.
     */
    void watch(long now) {
        long seq = (long) NATIVE_CALLS.getAcquire(this);
        if ((seq & 1) == 0) {
            watchSeq = -1;
        } else if (seq != watchSeq) {
            watchSeq = seq;
            watchSince = now;
        } else if (now - watchSince >= blocking.budgetNanos() && (long) NATIVE_CALLS.getAcquire(this) == seq) {
            nativeTimeout();
        }
    }

    /**
     * Called by the watchdog when a blocking MPI call passed the deadline: MPI cannot return from
     * it, so, as JCCL_MPI_BLOCKING=native asks, MPI_Abort ends the job after saying why.
     */
    void nativeTimeout() {
        System.err.println("[" + rank() + "] jccl ERROR: " + blocking.describe() + " did not complete within "
                + Duration.ofNanos(blocking.budgetNanos()) + " and a blocking MPI call cannot be given up "
                + "(JCCL_MPI_BLOCKING=native): MPI_Abort ends the job");
        System.err.flush();
        MpiLibrary.abort(comm, 124);
    }

    /** Called by a work once MPI completed it. */
    void completed(MpiWork w) {
        pending.remove(w);
    }

    /** Records the first failure (the communicator is unusable from now on) and returns it. */
    JcclException failed(JcclException e) {
        if (broken == null) {
            broken = e;
            LOG.info(rank(), () -> "communicator " + id + " failed: " + e.getMessage()); // the caller gets e
            autoDump(e.getMessage());
        }
        return e;
    }

    // ------------------------------------------------------------------ flight recorder

    /** The communicator settings this one was created with (Options.withSetting): its splits inherit them. */
    private final java.util.Map<String, String> settings = org.jccl.internal.Settings.bound();
    /** The last JCCL_TRACE_BUFFER operations (works complete on other threads: it locks itself). */
    private final MpiTrace trace = new MpiTrace();

    /** Records an operation as started; called under the communicator's lock. */
    private long traceStart(String name, DataType type, long n, ReduceOp op, int peer) {
        return trace.start(name, type, n, op, peer);
    }

    /** Records an operation's end. */
    void traceEnd(long handle, boolean ok) {
        trace.end(handle, ok);
    }

    private void autoDump(String reason) {
        trace.dumpOnFailure(id, rank(), size(), reason, LOG);
    }

    /**
     * Writes this rank's flight recorder as {@code dir/jccl-trace-<comm>-rank<r>.json}; {@code jccl
     * doctor dir} reads every rank's. Dumps also happen by themselves on a failure when {@code
     * JCCL_TRACE_DIR} is set.
     */
    @Override
    public java.nio.file.Path dumpFlightRecord(java.nio.file.Path dir) {
        Checks.notNull(dir, "dir");
        return trace.dump(dir, id, rank(), size());
    }

    /** The exception of a work that passed the communicator's deadline; the communicator is broken after it. */
    CollectiveTimeoutException timedOut(MpiWork w) {
        CollectiveTimeoutException e = new CollectiveTimeoutException(w.describe() + " did not complete within "
                + Duration.ofNanos(w.budgetNanos()) + (w.budgetNanos() == timeout().toNanos() ? " (the communicator's timeout)"
                : " (a withTimeout view's deadline)") + ": another rank is not taking part (a different collective, a different "
                + "order, or stuck). MPI cannot cancel a started operation: this communicator is unusable; abort() ends "
                + "the MPI job", List.of());
        failed(e);
        return e;
    }

    private void divideIfAvg(MpiWork w, ReduceOp op, MemorySegment seg, long n) {
        if (op.kind() == ReduceOp.Kind.AVG) {
            w.divideAfter(seg, n, size());
        }
    }

    private static boolean premul(ReduceOp op) {
        return op.kind() == ReduceOp.Kind.PREMUL_SUM;
    }

    /**
     * The input MPI reads for a reduction into {@code out} (the result's staging, {@code s}'s own
     * memory when in place): PREMUL_SUM reduces {@code s} scaled in {@code out}, in place; AVG
     * divides {@code out} once MPI is done.
     */
    private MemorySegment reductionInput(MpiWork w, HostBuffer s, MemorySegment out, boolean inPlace, ReduceOp op, int n) {
        MemorySegment in;
        if (premul(op)) {
            if (!inPlace) {
                MemorySegment.copy(s.segment(), 0, out, 0, s.byteSize());
            }
            Reductions.scale(s.type(), op.scalar(), out, 0, n);
            in = MpiLibrary.IN_PLACE;
        } else {
            in = inPlace ? MpiLibrary.IN_PLACE : w.input(s);
        }
        divideIfAvg(w, op, out, n);
        return in;
    }

    // ------------------------------------------------------------------ all-reduce

    private int allReduce(Buffer send, Buffer recv, ReduceOp op, boolean async) {
        HostBuffer s = host(send, "send");
        HostBuffer r = writable(host(recv, "recv"), "recv");
        sameShape(s, r, "recv must have as many elements as send");
        Checks.op(op, s.type());
        int n = count(s.count(), "send");
        DataType t = s.type();
        MpiWork w = begin(async, "allReduce", t, n, op, -1);
        boolean inPlace = s.sameStart(r);
        MemorySegment out = w.output(r, inPlace);
        MemorySegment in = reductionInput(w, s, out, inPlace, op, n);
        return nativeCall(async) ? MpiLibrary.allreduce(in, out, n, rt.type(t), rt.op(op, t), comm)
                : MpiLibrary.iallreduce(in, out, n, rt.type(t), rt.op(op, t), comm, w.request);
    }

    // ------------------------------------------------------------------ broadcast

    private int broadcast(Buffer send, Buffer recv, int root, boolean async) {
        HostBuffer r = writable(host(recv, "recv"), "recv");
        HostBuffer s = null;
        if (rank() == root) {
            s = host(send, "send");
            sameShape(s, r, "recv must have as many elements as send");
        }
        int n = count(r.count(), "recv");
        DataType t = r.type();
        MpiWork w = begin(async, "broadcast", t, n, null, root);
        MemorySegment buf;
        if (s != null) {
            boolean inPlace = s.sameStart(r);
            buf = w.output(r, inPlace);
            if (!inPlace) {
                MemorySegment.copy(s.segment(), 0, buf, 0, s.byteSize());
            }
        } else {
            buf = w.output(r, false);
        }
        return nativeCall(async) ? MpiLibrary.bcast(buf, n, rt.type(t), root, comm)
                : MpiLibrary.ibcast(buf, n, rt.type(t), root, comm, w.request);
    }

    // ------------------------------------------------------------------ reduce

    private int reduce(Buffer send, Buffer recv, ReduceOp op, int root, boolean async) {
        HostBuffer s = host(send, "send");
        Checks.op(op, s.type());
        HostBuffer r = null;
        if (rank() == root) {
            r = writable(host(recv, "recv"), "recv");
            sameShape(s, r, "the root's recv must have as many elements as send");
        }
        int n = count(s.count(), "send");
        DataType t = s.type();
        MpiWork w = begin(async, "reduce", t, n, op, root);
        MemorySegment in;
        MemorySegment out;
        if (r != null) {
            boolean inPlace = s.sameStart(r);
            out = w.output(r, inPlace);
            in = reductionInput(w, s, out, inPlace, op, n);
        } else {
            out = MemorySegment.NULL;
            if (premul(op)) {
                in = w.temp(s.byteSize());
                MemorySegment.copy(s.segment(), 0, in, 0, s.byteSize());
                Reductions.scale(t, op.scalar(), in, 0, n);
            } else {
                in = w.input(s);
            }
        }
        return nativeCall(async) ? MpiLibrary.reduce(in, out, n, rt.type(t), rt.op(op, t), root, comm)
                : MpiLibrary.ireduce(in, out, n, rt.type(t), rt.op(op, t), root, comm, w.request);
    }

    // ------------------------------------------------------------------ all-gather / gather

    /** Host-engine rules: recv holds size x send.count; an overlap must be the in-place slice. Returns whether in place. */
    private boolean checkGather(HostBuffer s, HostBuffer r, int slot, String what) {
        Checks.sameType(s, "send", r, "recv");
        if (r.count() != s.count() * size()) {
            Checks.count(r, "recv", s.count() * size(), what + " needs size() x send.count() elements in recv");
        }
        if (r.overlaps(s)) {
            long c = s.count();
            if (!s.sameStart(r.slice(slot * c, c))) {
                throw new IllegalArgumentException("send overlaps recv but is not slice rank() of it: for an in-place "
                        + what + " pass recv.slice(rank() * count, count) as send");
            }
            return true;
        }
        return false;
    }

    private int allGather(Buffer send, Buffer recv, boolean async) {
        HostBuffer s = host(send, "send");
        HostBuffer r = writable(host(recv, "recv"), "recv");
        boolean inPlace = checkGather(s, r, rank(), "allGather");
        int c = count(s.count(), "send");
        DataType t = s.type();
        MpiWork w = begin(async, "allGather", t, c, null, -1);
        MemorySegment out = w.output(r, inPlace);
        MemorySegment in = inPlace ? MpiLibrary.IN_PLACE : w.input(s);
        return nativeCall(async) ? MpiLibrary.allgather(in, c, rt.type(t), out, c, rt.type(t), comm)
                : MpiLibrary.iallgather(in, c, rt.type(t), out, c, rt.type(t), comm, w.request);
    }

    private int gather(Buffer send, Buffer recv, int root, boolean async) {
        HostBuffer s = host(send, "send");
        HostBuffer r = null;
        boolean inPlace = false;
        if (rank() == root) {
            r = writable(host(recv, "recv"), "recv");
            inPlace = checkGather(s, r, root, "gather");
        }
        int c = count(s.count(), "send");
        DataType t = s.type();
        MpiWork w = begin(async, "gather", t, c, null, root);
        MemorySegment out = r == null ? MemorySegment.NULL : w.output(r, inPlace);
        MemorySegment in = inPlace ? MpiLibrary.IN_PLACE : w.input(s);
        return nativeCall(async) ? MpiLibrary.gather(in, c, rt.type(t), out, c, rt.type(t), root, comm)
                : MpiLibrary.igather(in, c, rt.type(t), out, c, rt.type(t), root, comm, w.request);
    }

    // ------------------------------------------------------------------ reduce-scatter

    /**
     * Host-engine rules: send ({@code sendName} in messages) holds size x recv.count; an overlap
     * must be the in-place slice. Returns whether in place.
     */
    private boolean checkScatter(HostBuffer s, HostBuffer r, String what, String sendName) {
        Checks.sameType(s, "send", r, "recv");
        if (s.count() != r.count() * size()) {
            Checks.count(s, "send", r.count() * size(), what + " needs size() x recv.count() elements in " + sendName);
        }
        if (!r.overlaps(s)) {
            return false;
        }
        long c = r.count();
        if (!r.sameStart(s.slice(rank() * c, c))) {
            throw new IllegalArgumentException("recv overlaps send but is not slice rank() of it: for an in-place "
                    + what + " pass send.slice(rank() * count, count) as recv");
        }
        return true;
    }

    private int reduceScatter(Buffer send, Buffer recv, ReduceOp op, boolean async) {
        HostBuffer s = host(send, "send");
        HostBuffer r = writable(host(recv, "recv"), "recv");
        boolean inPlace = checkScatter(s, r, "reduceScatter", "send");
        Checks.op(op, s.type());
        int c = count(r.count(), "recv");
        DataType t = s.type();
        MpiWork w = begin(async, "reduceScatter", t, c, op, -1);
        MemorySegment in;
        if (premul(op)) {
            in = w.temp(s.byteSize());
            MemorySegment.copy(s.segment(), 0, in, 0, s.byteSize());
            Reductions.scale(t, op.scalar(), in, 0, s.count());
        } else {
            in = w.input(s);
        }
        MemorySegment out;
        if (inPlace && in == s.segment()) {
            // MPI must not write into the buffer it reads: the result goes through a temporary.
            out = w.temp(r.byteSize());
            w.copyBack(out, r.segment());
        } else {
            out = w.output(r, false);
        }
        divideIfAvg(w, op, out, c);
        return nativeCall(async) ? MpiLibrary.reduceScatterBlock(in, out, c, rt.type(t), rt.op(op, t), comm)
                : MpiLibrary.ireduceScatterBlock(in, out, c, rt.type(t), rt.op(op, t), comm, w.request);
    }

    // ------------------------------------------------------------------ all-to-all / scatter

    private int allToAll(Buffer send, Buffer recv, boolean async) {
        HostBuffer s = host(send, "send");
        HostBuffer r = writable(host(recv, "recv"), "recv");
        sameShape(s, r, "allToAll sends and receives the same number of elements");
        Checks.perRankCount(s, size(), "send");
        int c = count(s.count() / size(), "send");
        DataType t = s.type();
        MpiWork w = begin(async, "allToAll", t, s.count(), null, -1);
        MemorySegment in;
        if (s.sameStart(r)) {
            // In place through a copy of the input (MPI's in-place all-to-all is not in every libnbc).
            in = w.temp(s.byteSize());
            MemorySegment.copy(s.segment(), 0, in, 0, s.byteSize());
        } else {
            in = w.input(s);
        }
        MemorySegment out = w.output(r, false);
        return nativeCall(async) ? MpiLibrary.alltoall(in, c, rt.type(t), out, c, rt.type(t), comm)
                : MpiLibrary.ialltoall(in, c, rt.type(t), out, c, rt.type(t), comm, w.request);
    }

    private int scatter(Buffer send, Buffer recv, int root, boolean async) {
        HostBuffer r = writable(host(recv, "recv"), "recv");
        HostBuffer s = null;
        boolean inPlace = false;
        if (rank() == root) {
            s = host(send, "send");
            inPlace = checkScatter(s, r, "scatter", "the root's send");
        }
        int c = count(r.count(), "recv");
        DataType t = r.type();
        MpiWork w = begin(async, "scatter", t, c, null, root);
        MemorySegment in = s == null ? MemorySegment.NULL : w.input(s);
        // In place, the root's block stays where it is (a heap root's recv is its send array itself).
        MemorySegment out = inPlace ? MpiLibrary.IN_PLACE : w.output(r, false);
        return nativeCall(async) ? MpiLibrary.scatter(in, c, rt.type(t), out, c, rt.type(t), root, comm)
                : MpiLibrary.iscatter(in, c, rt.type(t), out, c, rt.type(t), root, comm, w.request);
    }

    // ------------------------------------------------------------------ point to point

    private int send(Buffer buffer, int peer, boolean async) {
        HostBuffer b = host(buffer, "buffer");
        int n = count(b.count(), "buffer");
        MpiWork w = begin(async, "send", b.type(), n, null, peer);
        MemorySegment in = w.input(b);
        return nativeCall(async) ? MpiLibrary.send(in, n, rt.type(b.type()), peer, TAG, comm)
                : MpiLibrary.isend(in, n, rt.type(b.type()), peer, TAG, comm, w.request);
    }

    private int recv(Buffer buffer, int peer, boolean async) {
        HostBuffer b = writable(host(buffer, "buffer"), "buffer");
        int n = count(b.count(), "buffer");
        MpiWork w = begin(async, "recv", b.type(), n, null, peer);
        w.expectReceived(n);
        MemorySegment out = w.output(b, false);
        return nativeCall(async) ? MpiLibrary.recv(out, n, rt.type(b.type()), peer, TAG, comm, w.status)
                : MpiLibrary.irecv(out, n, rt.type(b.type()), peer, TAG, comm, w.request);
    }

    // ------------------------------------------------------------------ barrier

    private int barrier(boolean async) {
        MpiWork w = begin(async, "barrier", null, 0, null, -1);
        return nativeCall(async) ? MpiLibrary.barrier(comm)
                : MpiLibrary.ibarrier(comm, w.request);
    }

    // ------------------------------------------------------------------ lifecycle

    /**
     * MPI_Comm_split, after an all-gather of (color, key) that proves every rank arrived within
     * the deadline (MPI_Comm_split itself cannot be given one). Ranks are ordered by key, then
     * by rank here, as MPI and the host engine do.
     */
    @Override
    public Communicator split(int color, int key) {
        if (color < 0 && color != NO_COLOR) {
            throw new IllegalArgumentException("color is " + color + ": use a color >= 0, or Communicator.NO_COLOR to opt out");
        }
        int[] all = new int[2 * size()];
        allGather(HostBuffer.of(new int[] {color, key}), HostBuffer.of(all));
        lock.lock();
        try {
            checkOpen();
            int splitNo = ++splits;
            try (Arena a = Arena.ofConfined()) {
                MemorySegment cell = a.allocate(ADDRESS);
                int rc = MpiLibrary.commSplit(comm, color == NO_COLOR ? MpiLibrary.UNDEFINED : color, key, cell);
                if (rc != MpiLibrary.SUCCESS) {
                    throw failed(MpiRuntime.error(rc, "split(" + color + ", " + key + ") (MPI_Comm_split) on rank " + rank()
                            + " of " + id));
                }
                MemorySegment sub = cell.get(ADDRESS, 0);
                if (color == NO_COLOR || sub.equals(MpiLibrary.COMM_NULL)) {
                    return null;
                }
                String childId = id + "/s" + splitNo + "c" + color;
                return org.jccl.internal.Settings.with(settings, () -> new MpiCommunicator(rt, childId, sub, timeout(), null));
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Fails this rank's pending operations, then calls MPI_Abort on this communicator, which in
     * Open MPI ends every process of the job (MPI has no other way to release the other ranks
     * from a collective they wait in). Does not return.
     */
    @Override
    public void abort() {
        AbortedException e = new AbortedException("communicator " + id + " was aborted on rank " + rank());
        if (broken == null) {
            broken = e;
        }
        for (MpiWork w : pending) {
            w.failLocally(e);
        }
        LOG.warn(rank(), "abort() on " + id + ": MPI_Abort ends every process of the MPI job");
        int rc = MpiLibrary.abort(comm, 134);
        throw MpiRuntime.error(rc, "MPI_Abort on rank " + rank() + " of " + id);
    }

    /**
     * Waits up to a second for pending operations (other ranks may be finishing them), fails
     * those still pending with {@link AbortedException}, then frees the MPI communicator
     * (MPI_Comm_free) and the staging memory, unless operations are still pending in MPI: then
     * both are kept (MPI may still write into the memory). Idempotent.
     */
    /** True once closed ({@code allocate} refuses then; it returns ordinary host memory before). */
    @Override
    protected boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            List<MpiWork> left = new ArrayList<>(pending);
            for (MpiWork w : left) {
                if (broken == null) {
                    w.waitFor(deadline - System.nanoTime());
                }
            }
            boolean leak = blocking.inMpi(); // a blocking call that timed out
            for (MpiWork w : left) {
                if (w.inMpi()) {
                    leak = true;
                    w.failLocally(new AbortedException("communicator " + id + " closed on rank " + rank()
                            + " with this operation pending"));
                }
            }
            if (leak) {
                // Neither the memory nor the MPI communicator may go: MPI still progresses the
                // operations (Open MPI 4.1's libnbc crashes when a communicator with pending
                // nonblocking collectives is freed).
                LOG.warn(rank(), "closed " + id + " with operations pending in MPI: the MPI communicator and the "
                        + "operations' memory are kept for MPI");
                staging.leak();
            } else {
                int rc = MpiLibrary.commFree(commCell);
                if (rc != MpiLibrary.SUCCESS) {
                    LOG.warn(rank(), MpiRuntime.error(rc, "MPI_Comm_free of " + id).getMessage());
                }
                staging.close();
                rt.forget(this);
            }
        } finally {
            lock.unlock();
            if (store != null) {
                store.close();
            }
        }
        LOG.info(rank(), () -> "closed communicator " + id);
    }

    @Override
    public String toString() {
        return "MpiCommunicator[" + id + ", rank " + rank() + " of " + size() + "]";
    }
}
