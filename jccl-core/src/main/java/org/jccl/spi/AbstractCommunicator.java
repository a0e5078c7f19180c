package org.jccl.spi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.Buffer;
import org.jccl.Checks;
import org.jccl.Communicator;
import org.jccl.ReduceOp;
import org.jccl.Work;

/**
 * The public call path of every backend's communicator, written once: each {@link Communicator}
 * method builds one {@link Op} (with this view's deadline, if any), checks what every backend
 * checks alike (the root or peer in range), and hands it to {@link #execute}, the one entry a
 * backend implements. {@link #withTimeout} is a view that only puts its deadline on the ops it
 * makes.
 *
 * @param <W> the backend's {@link Work} type (the async methods return it)
 */
public abstract class AbstractCommunicator<W extends Work> implements Communicator {
    private final String backend;
    private final int rank;
    private final int size;
    private final Duration timeout;
    /** The flyweight each call fills (calls come from one thread at a time). */
    private final Op call = new Op();
    /** The thread inside a call of this communicator now (a view's calls count as its target's), or null. */
    private volatile Thread caller;
    /** What {@link #caller} is doing, for the message (written after the claim, read racily). */
    private String callerDoing;
    private static final java.lang.invoke.VarHandle CALLER = org.jccl.internal.VarHandles.field(
            java.lang.invoke.MethodHandles.lookup(), "caller", Thread.class);

    /** A communicator of backend {@code backend} ("host"), rank {@code rank} of {@code size}, deadline {@code timeout}. */
    protected AbstractCommunicator(String backend, int rank, int size, Duration timeout) {
        this.backend = backend;
        this.rank = rank;
        this.size = size;
        this.timeout = timeout;
    }

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final int size() {
        return size;
    }

    @Override
    public final String backend() {
        return backend;
    }

    /** The deadline of every call (of this view's calls, for a {@link #withTimeout} view). */
    @Override
    public final Duration timeout() {
        return timeout;
    }

    /**
     * Runs {@code op}, whose root or peer is in range: validates the buffers, then runs the op
     * on the calling thread ({@code async} false: returns when done, the result may be null) or
     * starts it and returns its work.
     */
    protected abstract W execute(Op op, boolean async);

    /**
     * Refuses a call on communicator {@code id} (this rank {@code rank}) once closed, or broken by
     * the earlier failure {@code broken}, saying what to do instead.
     */
    protected static void checkUsable(String id, int rank, boolean closed, org.jccl.JcclException broken) {
        if (closed) {
            throw new org.jccl.InvalidUsageException("communicator " + id + " (rank " + rank + ") is closed: create a new "
                    + "one with Jccl.init");
        }
        if (broken != null) {
            throw new org.jccl.InvalidUsageException("communicator " + id + " (rank " + rank + ") is unusable after an "
                    + "earlier failure (" + broken.getMessage() + "): close it and create a new one");
        }
    }

    /** The deadline the ops of this communicator carry: null (the communicator's own); a view's. */
    protected Duration callTimeout() {
        return null;
    }

    private W call(Collective c, Buffer send, Buffer recv, ReduceOp op, int root, int peer, boolean async) {
        return enter(null, c, send, recv, op, root, peer, async);
    }

    /**
     * A backend's own entry that takes one argument more than the API's (NCCL: the caller's CUDA
     * stream, {@code with}, named {@code withName} in the error when it is null): the same
     * concurrent-use check and op as every call, then {@link #executeWith}.
     */
    protected final W callWith(String withName, Object with, Collective c, Buffer send, Buffer recv, ReduceOp op,
                               int root, int peer, boolean async) {
        if (with == null) {
            throw new IllegalArgumentException(withName + " is null: pass one, or call " + c.apiName() + " without it");
        }
        return enter(with, c, send, recv, op, root, peer, async);
    }

    /** Runs {@code op} with the extra argument of a {@link #callWith} entry; only backends with such entries have it. */
    protected W executeWith(Op op, Object with, boolean async) {
        throw new UnsupportedOperationException(backend + " has no " + op.collective().apiName() + " with " + with);
    }

    private W enter(Object with, Collective c, Buffer send, Buffer recv, ReduceOp op, int root, int peer,
                    boolean async) {
        AbstractCommunicator<W> owner = owner();
        Thread other = claim(owner, c.apiName());
        try {
            Op o = op(c, send, recv, op, root, peer);
            return with == null ? execute(o, async) : executeWith(o, with, async);
        } finally {
            release(owner, other);
        }
    }

    /**
     * Makes the calling thread the one inside {@code owner} (doing {@code what}), or fails naming
     * the thread already inside; returns the thread that was inside before: null, or this one (a
     * call made from inside a call, which keeps the claim).
     */
    private Thread claim(AbstractCommunicator<W> owner, String what) {
        Thread me = Thread.currentThread();
        Thread other = (Thread) CALLER.compareAndExchange(owner, null, me);
        if (other != null && other != me) {
            throw concurrentUse(owner, other, what, me);
        }
        if (other == null) {
            owner.callerDoing = what;
        }
        return other;
    }

    private static void release(AbstractCommunicator<?> owner, Thread before) {
        if (before == null) {
            CALLER.setRelease(owner, null);
        }
    }

    /**
     * Opens what the steps of one variable-size call are posted in, closed once they are all
     * posted (NCCL: one group, so that they launch together and a rank's sends to itself meet
     * their receives); null when the steps need nothing. A blocking call ({@code async} false)
     * waits for the steps after closing it.
     */
    protected AutoCloseable openSteps(String name, boolean async) {
        return null;
    }

    /**
     * Runs a variable-size call's steps: collectives in order, blocking when the call is and
     * nothing groups them; sends and receives always started together (async), so that a rank's
     * receives and sends progress at once.
     */
    private Work runSteps(VarSize.Plan plan, boolean async) {
        AbstractCommunicator<W> owner = owner();
        Thread before = claim(owner, plan.name());
        try {
            List<Work> works = new ArrayList<>();
            AutoCloseable group = openSteps(plan.name(), async);
            try {
                for (VarSize.Step s : plan.steps()) {
                    boolean start = async || group != null || s.collective().pointToPoint();
                    W w = execute(op(s.collective(), s.send(), s.recv(), s.op(), s.root(), s.peer()), start);
                    if (start) {
                        works.add(w);
                    }
                }
            } finally {
                if (group != null) {
                    closeSteps(group);
                }
            }
            StepsWork all = new StepsWork(plan.name() + " on rank " + rank + " of " + size + " (" + backend + ")", works);
            if (async) {
                return all;
            }
            all.await();
            return null;
        } finally {
            release(owner, before);
        }
    }

    private static void closeSteps(AutoCloseable group) {
        try {
            group.close();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new org.jccl.JcclException("closing the group of a variable-size call failed: " + e, e);
        }
    }

    /**
     * Checks the arguments, refuses a closed communicator ({@link #isClosed}), then hands out
     * {@link #allocateMemory} of the communicator (a view's target).
     */
    @Override
    public final org.jccl.HostBuffer allocate(org.jccl.DataType type, long count) {
        if (type == null) {
            throw new IllegalArgumentException("type is null: pass the element type, e.g. DataType.FLOAT32");
        }
        if (count < 0) {
            throw new IllegalArgumentException("count is " + count + ": give a count >= 0");
        }
        if (count > Long.MAX_VALUE / 8 / type.byteSize()) {
            throw new IllegalArgumentException("count is " + count + ": " + count + " x " + type
                    + " does not fit in memory; give a smaller count");
        }
        AbstractCommunicator<W> owner = owner();
        if (owner.isClosed()) {
            throw new org.jccl.InvalidUsageException("communicator " + owner + " (rank " + rank + " of " + size + ", "
                    + backend + ") is closed: allocate from an open communicator (create a new one with Jccl.init)");
        }
        return owner.allocateMemory(type, count);
    }

    @Override
    public final boolean isRegistered(Buffer buffer) {
        return buffer instanceof org.jccl.HostBuffer h && owner().registered(h);
    }

    /**
     * The memory of {@link #allocate} (arguments checked, communicator open): ordinary zeroed host
     * memory that lives as long as the buffer is reachable, so at least until the communicator is
     * closed. A backend that registers memory overrides it (and {@link #registered}).
     */
    protected org.jccl.HostBuffer allocateMemory(org.jccl.DataType type, long count) {
        return org.jccl.HostBuffer.allocate(type, count, java.lang.foreign.Arena.ofAuto());
    }

    /** True when {@code buffer} lies in memory this communicator registered ({@link #allocateMemory}); false here. */
    protected boolean registered(org.jccl.HostBuffer buffer) {
        return false;
    }

    /** True once the communicator is closed ({@link #allocate} refuses then); false unless a backend says so. */
    protected boolean isClosed() {
        return false;
    }

    /** The communicator whose calls these are: this one, or a view's target. */
    AbstractCommunicator<W> owner() {
        return this;
    }

    private org.jccl.InvalidUsageException concurrentUse(AbstractCommunicator<W> owner, Thread other, String what,
            Thread me) {
        String doing = owner.callerDoing;
        return new org.jccl.InvalidUsageException("thread '" + me.getName() + "' called " + what + " on rank "
                + rank + " of " + size + " (" + backend + ") while thread '" + other.getName() + "' is inside "
                + (doing == null ? "a call" : doing) + " of the same communicator: calls of one communicator "
                + "must come from one thread at a time (as with NCCL and MPI); give each thread its own communicator "
                + "(split) or serialize the calls");
    }

    /**
     * This communicator's op, filled for one call (with this view's deadline, if any) and its
     * ranks checked: for a backend's own entries (NCCL's stream-taking methods) that then run it.
     */
    protected final Op op(Collective c, Buffer send, Buffer recv, ReduceOp op, int root, int peer) {
        Op o = call.set(c, send, recv, op, root, peer, callTimeout());
        o.checkRanks(size);
        return o;
    }

    /**
     * A view whose calls (blocking, and the works of async ones) have deadline {@code timeout}
     * instead of {@link #timeout()}; it shares everything else with this communicator. Closing
     * the view does not close this communicator; split and shrink through it are this
     * communicator's and run under its own deadline.
     */
    @Override
    public Communicator withTimeout(Duration timeout) {
        Checks.timeout(timeout, "timeout");
        return new Deadline<>(this, timeout);
    }

    @Override
    public final void allReduce(Buffer send, Buffer recv, ReduceOp op) {
        call(Collective.ALL_REDUCE, send, recv, op, -1, -1, false);
    }

    @Override
    public final W allReduceAsync(Buffer send, Buffer recv, ReduceOp op) {
        return call(Collective.ALL_REDUCE, send, recv, op, -1, -1, true);
    }

    @Override
    public final W allReduceAsync(Buffer buffer, ReduceOp op) {
        return allReduceAsync(buffer, buffer, op);
    }

    @Override
    public final void broadcast(Buffer send, Buffer recv, int root) {
        call(Collective.BROADCAST, send, recv, null, root, -1, false);
    }

    @Override
    public final W broadcastAsync(Buffer send, Buffer recv, int root) {
        return call(Collective.BROADCAST, send, recv, null, root, -1, true);
    }

    @Override
    public final W broadcastAsync(Buffer buffer, int root) {
        return broadcastAsync(buffer, buffer, root);
    }

    @Override
    public final void reduce(Buffer send, Buffer recv, ReduceOp op, int root) {
        call(Collective.REDUCE, send, recv, op, root, -1, false);
    }

    @Override
    public final W reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root) {
        return call(Collective.REDUCE, send, recv, op, root, -1, true);
    }

    @Override
    public final W reduceAsync(Buffer buffer, ReduceOp op, int root) {
        return reduceAsync(buffer, buffer, op, root);
    }

    @Override
    public final void allGather(Buffer send, Buffer recv) {
        call(Collective.ALL_GATHER, send, recv, null, -1, -1, false);
    }

    @Override
    public final W allGatherAsync(Buffer send, Buffer recv) {
        return call(Collective.ALL_GATHER, send, recv, null, -1, -1, true);
    }

    @Override
    public final W allGatherAsync(Buffer buffer) {
        long c = Checks.perRankCount(buffer, size(), "buffer");
        return allGatherAsync(buffer.slice(rank() * c, c), buffer);
    }

    @Override
    public final void reduceScatter(Buffer send, Buffer recv, ReduceOp op) {
        call(Collective.REDUCE_SCATTER, send, recv, op, -1, -1, false);
    }

    @Override
    public final W reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op) {
        return call(Collective.REDUCE_SCATTER, send, recv, op, -1, -1, true);
    }

    @Override
    public final W reduceScatterAsync(Buffer buffer, ReduceOp op) {
        long c = Checks.perRankCount(buffer, size(), "buffer");
        return reduceScatterAsync(buffer, buffer.slice(rank() * c, c), op);
    }

    @Override
    public final void allToAll(Buffer send, Buffer recv) {
        call(Collective.ALL_TO_ALL, send, recv, null, -1, -1, false);
    }

    @Override
    public final W allToAllAsync(Buffer send, Buffer recv) {
        return call(Collective.ALL_TO_ALL, send, recv, null, -1, -1, true);
    }

    @Override
    public final W allToAllAsync(Buffer buffer) {
        return allToAllAsync(buffer, buffer);
    }

    @Override
    public final void gather(Buffer send, Buffer recv, int root) {
        call(Collective.GATHER, send, recv, null, root, -1, false);
    }

    @Override
    public final W gatherAsync(Buffer send, Buffer recv, int root) {
        return call(Collective.GATHER, send, recv, null, root, -1, true);
    }

    @Override
    public final void scatter(Buffer send, Buffer recv, int root) {
        call(Collective.SCATTER, send, recv, null, root, -1, false);
    }

    @Override
    public final W scatterAsync(Buffer send, Buffer recv, int root) {
        return call(Collective.SCATTER, send, recv, null, root, -1, true);
    }

    @Override
    public final void sendRecv(Buffer send, int dst, Buffer recv, int src) {
        VarSize.checkSendRecv(size, send, dst, recv, src);
        AbstractCommunicator<W> owner = owner();
        Thread before = claim(owner, "sendRecv");
        try {
            if (!sendRecvInline(send, dst, recv, src)) {
                runSteps(VarSize.sendRecvPlan(send, dst, recv, src), false); // checked above; no plan on the inline path
            }
        } finally {
            release(owner, before);
        }
    }

    @Override
    public final Work sendRecvAsync(Buffer send, int dst, Buffer recv, int src) {
        return runSteps(VarSize.sendRecv(size, send, dst, recv, src), true);
    }

    /**
     * A blocking {@link #sendRecv} whose arguments passed the common checks: a backend that can
     * move both halves on the calling thread now does so and returns true; false (the default)
     * starts them together as two operations and waits for both.
     */
    protected boolean sendRecvInline(Buffer send, int dst, Buffer recv, int src) {
        return false;
    }

    @Override
    public final void send(Buffer buffer, int peer) {
        call(Collective.SEND, buffer, null, null, -1, peer, false);
    }

    @Override
    public final W sendAsync(Buffer buffer, int peer) {
        return call(Collective.SEND, buffer, null, null, -1, peer, true);
    }

    @Override
    public final void recv(Buffer buffer, int peer) {
        call(Collective.RECV, null, buffer, null, -1, peer, false);
    }

    @Override
    public final W recvAsync(Buffer buffer, int peer) {
        return call(Collective.RECV, null, buffer, null, -1, peer, true);
    }

    @Override
    public final void barrier() {
        call(Collective.BARRIER, null, null, null, -1, -1, false);
    }

    @Override
    public final W barrierAsync() {
        return call(Collective.BARRIER, null, null, null, -1, -1, true);
    }

    @Override
    public final void allGatherV(Buffer send, Buffer recv, long[] recvCounts, long[] displs) {
        runSteps(VarSize.allGatherV(rank, size, send, recv, recvCounts, displs), false);
    }

    @Override
    public final Work allGatherVAsync(Buffer send, Buffer recv, long[] recvCounts, long[] displs) {
        return runSteps(VarSize.allGatherV(rank, size, send, recv, recvCounts, displs), true);
    }

    @Override
    public final void reduceScatterV(Buffer send, Buffer recv, long[] recvCounts, ReduceOp op) {
        runSteps(VarSize.reduceScatterV(rank, size, send, recv, recvCounts, op), false);
    }

    @Override
    public final Work reduceScatterVAsync(Buffer send, Buffer recv, long[] recvCounts, ReduceOp op) {
        return runSteps(VarSize.reduceScatterV(rank, size, send, recv, recvCounts, op), true);
    }

    @Override
    public final void allToAllV(Buffer send, long[] sendCounts, long[] sendDispls, Buffer recv, long[] recvCounts,
                                long[] recvDispls) {
        runSteps(VarSize.allToAllV(rank, size, send, sendCounts, sendDispls, recv, recvCounts, recvDispls), false);
    }

    @Override
    public final Work allToAllVAsync(Buffer send, long[] sendCounts, long[] sendDispls, Buffer recv,
                                     long[] recvCounts, long[] recvDispls) {
        return runSteps(VarSize.allToAllV(rank, size, send, sendCounts, sendDispls, recv, recvCounts, recvDispls),
                true);
    }

    @Override
    public final void gatherV(Buffer send, Buffer recv, long[] recvCounts, long[] displs, int root) {
        runSteps(VarSize.gatherV(rank, size, send, recv, recvCounts, displs, root), false);
    }

    @Override
    public final Work gatherVAsync(Buffer send, Buffer recv, long[] recvCounts, long[] displs, int root) {
        return runSteps(VarSize.gatherV(rank, size, send, recv, recvCounts, displs, root), true);
    }

    @Override
    public final void scatterV(Buffer send, long[] sendCounts, long[] displs, Buffer recv, int root) {
        runSteps(VarSize.scatterV(rank, size, send, sendCounts, displs, recv, root), false);
    }

    @Override
    public final Work scatterVAsync(Buffer send, long[] sendCounts, long[] displs, Buffer recv, int root) {
        return runSteps(VarSize.scatterV(rank, size, send, sendCounts, displs, recv, root), true);
    }

    /**
     * The view {@link #withTimeout} returns: the target's ops, carrying the view's deadline. It
     * owns nothing: {@link #close()} does nothing, {@link #abort()} aborts the target.
     */
    private static final class Deadline<W extends Work> extends AbstractCommunicator<W> {
        private final AbstractCommunicator<W> target;

        Deadline(AbstractCommunicator<W> target, Duration timeout) {
            super(target.backend(), target.rank(), target.size(), timeout);
            this.target = target;
        }

        @Override
        protected W execute(Op op, boolean async) {
            return target.execute(op, async);
        }

        @Override
        AbstractCommunicator<W> owner() {
            return target.owner();
        }

        @Override
        protected AutoCloseable openSteps(String name, boolean async) {
            return target.openSteps(name, async);
        }

        /** This view's deadline ({@link #timeout()}), on every op it makes. */
        @Override
        protected Duration callTimeout() {
            return timeout();
        }

        /** Another view of the same communicator. */
        @Override
        public Communicator withTimeout(Duration t) {
            return target.withTimeout(t);
        }

        @Override
        public Communicator split(int color, int key) {
            return target.split(color, key);
        }

        @Override
        public Communicator shrink(java.util.Set<Integer> excluded) {
            return target.shrink(excluded);
        }

        @Override
        public Communicator shrinkExcludingFailed() {
            return target.shrinkExcludingFailed();
        }

        @Override
        public java.nio.file.Path dumpFlightRecord(java.nio.file.Path dir) {
            return target.dumpFlightRecord(dir);
        }

        /** Aborts the communicator (not only the view). */
        @Override
        public void abort() {
            target.abort();
        }

        /** Does nothing: the view owns nothing. Close the communicator itself. */
        @Override
        public void close() {
            // the target stays open
        }

        @Override
        public String toString() {
            return target + " with timeout " + timeout();
        }
    }
}
