package org.jccl.mpi;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import org.jccl.AbortedException;
import org.jccl.CollectiveMismatchException;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.jccl.host.kernel.Reductions;

/**
 * One MPI operation: its request, the native memory it uses, and what to do when MPI reports it
 * complete (copy a staged result back into a heap buffer, divide an AVG sum, check a received
 * count). Completed by MPI_Test polling, on whichever thread calls {@link #isDone()} or
 * {@link #await}; the first thread that sees MPI_Test succeed runs the completion steps, once.
 *
 * <p>A communicator keeps one instance for its blocking calls (reset before each, so blocking
 * calls allocate nothing after warm-up) and creates one per async call.
 */
@SuppressWarnings("restricted") // a global view of native memory for completion on another thread
final class MpiWork implements Work {
    private final MpiCommunicator comm;
    private final Staging staging;
    private final MemorySegment control;
    final MemorySegment request;
    private final MemorySegment flag;
    final MemorySegment status;
    private final MemorySegment countOut;

    // What the operation is, for messages (the text is built only when needed).
    private String name;
    private DataType type;
    private long count;
    private ReduceOp op;
    private int peer;

    // Completion steps.
    private MemorySegment divideSeg;
    private int divisor;
    private long divideCount;
    private MemorySegment copyFrom;
    private MemorySegment copyTo;
    private long copyBytes;
    private final MemorySegment[] staged = new MemorySegment[3];
    private int nStaged;
    private int expectReceived;
    private boolean reduces;

    /**
     * Finished as far as the caller can see (MPI completed it, or it was failed locally). Written
     * with release and read with acquire through {@link #DONE} ({@link #failure} is written
     * before it): plain moves on x86, where the blocking path runs this twice per call.
     */
    private boolean done;
    private static final java.lang.invoke.VarHandle DONE = org.jccl.internal.VarHandles.field(
            java.lang.invoke.MethodHandles.lookup(), "done", boolean.class);

    /**
     * Started in MPI and not yet reported complete by MPI_Test. Written by the issuing thread
     * before the work is published and then only under this work's monitor (async) or the
     * communicator's lock (the blocking instance); read under the same.
     */
    private boolean inMpi;
    private JcclException failure;

    /** True for the communicator's reused blocking instance, whose control block lives as long as it does. */
    private final boolean reusable;

    MpiWork(MpiCommunicator comm, Staging staging, boolean reusable) {
        this.comm = comm;
        this.reusable = reusable;
        this.staging = staging;
        this.control = staging.control();
        this.request = control.asSlice(0, 8);
        this.flag = control.asSlice(8, 4);
        this.status = control.asSlice(16, MpiLibrary.STATUS_BYTES);
        this.countOut = control.asSlice(40, 4);
        this.done = reusable; // the blocking instance starts idle
    }

    /** Prepares this (reused) instance for the next operation. */
    /** Its entry in the communicator's flight recorder (-1: none). */
    long trace = -1;

    /** The deadline of the current operation (the communicator's timeout, or a withTimeout view's). */
    private volatile long budgetNanos;

    long budgetNanos() {
        return budgetNanos;
    }

    MpiWork reset(String name, DataType type, long count, ReduceOp op, int peer) {
        this.budgetNanos = comm.callBudgetNanos();
        // what the last call staged is gone
        divideSeg = null;
        copyFrom = null;
        copyTo = null;
        this.name = name;
        this.type = type;
        this.count = count;
        this.op = op;
        this.peer = peer;
        nStaged = 0;
        expectReceived = -1;
        reduces = op != null;
        if (failure != null) {
            failure = null;
        }
        DONE.setRelease(this, false);
        return this;
    }

    // ------------------------------------------------------------------ memory of the operation

    /** The memory MPI reads {@code b} from: its own when native, else a staged copy. */
    MemorySegment input(HostBuffer b) {
        if (b.segment().isNative()) {
            return b.segment();
        }
        MemorySegment s = temp(b.byteSize());
        MemorySegment.copy(b.segment(), 0, s, 0, b.byteSize());
        return s;
    }

    /**
     * The memory MPI writes {@code b}'s result to: its own when native, else a staging block that
     * is copied back on completion ({@code alsoInput}: filled with {@code b}'s contents first).
     */
    MemorySegment output(HostBuffer b, boolean alsoInput) {
        if (b.segment().isNative()) {
            return b.segment();
        }
        MemorySegment s = temp(b.byteSize());
        if (alsoInput) {
            MemorySegment.copy(b.segment(), 0, s, 0, b.byteSize());
        }
        copyBack(s, b.segment());
        return s;
    }

    /** Scratch memory for the duration of the operation. */
    MemorySegment temp(long bytes) {
        MemorySegment s = staging.take(bytes);
        staged[nStaged++] = s;
        return s;
    }

    /** On completion: {@code to} (all of it) = the first bytes of {@code from}. */
    void copyBack(MemorySegment from, MemorySegment to) {
        copyFrom = from;
        copyTo = to;
        copyBytes = to.byteSize();
    }

    /** On completion, before any copy back: divide the {@code n} elements of {@code seg} by {@code by} (AVG). */
    void divideAfter(MemorySegment seg, long n, int by) {
        // Completion may run on another thread than the caller's: a global view of native memory
        // (a segment of a confined arena could not be touched there).
        divideSeg = seg.isNative() ? MemorySegment.ofAddress(seg.address()).reinterpret(seg.byteSize()) : seg;
        divideCount = n;
        divisor = by;
    }

    /** On completion: the message received must have held exactly {@code n} elements. */
    void expectReceived(int n) {
        expectReceived = n;
    }

    /** MPI started the operation (its request is live until MPI_Test reports it complete). */
    void issued() {
        inMpi = true;
    }

    /** MPI did not start the operation: frees what it took. */
    void abandon() {
        comm.traceEnd(trace, false);
        release();
        if (!reusable) {
            staging.giveControl(control);
        }
        DONE.setRelease(this, true);
    }

    // ------------------------------------------------------------------ completion

    /** Polls MPI once; true when the operation is finished (successfully or not). */
    boolean poll() {
        if (isDoneLocally()) {
            return true;
        }
        if (reusable) {
            // The blocking instance is polled only by the thread that holds the communicator's
            // lock (the exit hook takes that lock too): no monitor on the latency-critical path.
            return pollOnce();
        }
        synchronized (this) {
            return isDoneLocally() || pollOnce();
        }
    }

    /** MPI's blocking form returned successfully: the completion steps now; throws the failure. */
    void completedInline() {
        JcclException f = completedByMpi();
        if (f != null) {
            throw f;
        }
    }

    /** One MPI_Test; on completion the completion steps. The caller excludes other pollers. */
    private boolean pollOnce() {
        int rc = MpiLibrary.test(request, flag, status);
        if (rc != MpiLibrary.SUCCESS) {
            inMpi = false;
            complete(comm.failed(MpiRuntime.error(rc, describe())));
            return true;
        }
        if (flag.get(JAVA_INT, 0) == 0) {
            return false;
        }
        completedByMpi();
        return true;
    }

    /** MPI completed the operation: runs the completion steps, completes this work and returns its failure (null if none). */
    private JcclException completedByMpi() {
        inMpi = false;
        JcclException f = null;
        try {
            finish();
        } catch (JcclException e) {
            f = comm.failed(e);
        } catch (RuntimeException e) {
            f = comm.failed(new JcclException(describe() + " failed after MPI completed it: " + e, e));
        }
        complete(f);
        return f;
    }

    private void finish() {
        if (expectReceived >= 0) {
            MpiRuntime.check(MpiLibrary.getCount(status, comm.rt.type(type), countOut), "MPI_Get_count");
            int got = countOut.get(JAVA_INT, 0);
            if (got != expectReceived) {
                throw new CollectiveMismatchException(describe() + ": the message from rank " + peer + " held "
                        + (got == MpiLibrary.UNDEFINED ? "a partial element" : got + " elements") + " but "
                        + expectReceived + " were expected: send and recv must have the same type and count");
            }
        }
        if (reduces && MpiRuntime.UPCALL_FAILURE.get() != null) {
            Throwable u = MpiRuntime.UPCALL_FAILURE.getAndSet(null);
            if (u != null) {
                throw new JcclException(describe() + ": the reduction in jccl's MPI user op failed: " + u, u);
            }
        }
        if (divideSeg != null) {
            Reductions.divide(type, divideSeg, 0, divideCount, divisor);
        }
        if (copyTo != null) {
            MemorySegment.copy(copyFrom, 0, copyTo, 0, copyBytes);
        }
    }

    private void complete(JcclException f) {
        release();
        failure = f;
        comm.traceEnd(trace, f == null);
        DONE.setRelease(this, true);
        if (!reusable) {
            // MPI_Test has freed the request: nothing touches the control block any more.
            staging.giveControl(control);
            comm.completed(this);
        }
    }

    /** Marks the operation failed without asking MPI (abort, close): its memory stays with MPI. */
    synchronized void failLocally(JcclException e) {
        if (!isDoneLocally()) {
            nStaged = 0;
            failure = e;
            comm.traceEnd(trace, false);
            DONE.setRelease(this, true);
        }
    }

    /** Whether MPI may still use this operation's request and memory. */
    synchronized boolean inMpi() {
        return inMpi;
    }

    /**
     * At exit: asks MPI once more whether the operation completed (without the completion
     * steps: nobody waits for the result any more).
     *
     * @return true when MPI is done with it
     */
    synchronized boolean settledForExit() {
        if (!inMpi) {
            return true;
        }
        int rc = MpiLibrary.test(request, flag, status);
        if (rc != MpiLibrary.SUCCESS || flag.get(JAVA_INT, 0) != 0) {
            inMpi = false;
        }
        return !inMpi;
    }

    private void release() {
        for (int i = 0; i < nStaged; i++) {
            staging.give(staged[i]);
            staged[i] = null;
        }
        nStaged = 0;
    }

    /** Waiting phases of {@link #waitFor}: MPI_Test back to back, then yielding between tests, then sleeping. */
    private static final long SPIN_NANOS = 50_000, YIELD_NANOS = 10_000_000, SLEEP_NANOS = 100_000;

    /**
     * Polls until done or the deadline. MPI progresses a nonblocking operation only inside
     * MPI calls, so the wait keeps calling MPI_Test: back to back for the first 50 us (latency),
     * yielding the core between tests up to 10 ms (ranks may outnumber cores, and a large
     * collective needs its rounds driven), then every 100 us (a long wait for a late rank should
     * not burn a core).
     *
     * @return false when the deadline passed first
     */
    boolean waitFor(long timeoutNanos) {
        // The clock is first read after 64 tests: most short operations end before, and never read it.
        org.jccl.spi.TimedIdleStrategy idle = null;
        int spins = 0;
        for (int i = 0; !poll(); ) {
            if ((++spins & 63) != 0) {
                continue;
            }
            if (idle == null) {
                idle = new org.jccl.spi.TimedIdleStrategy(SPIN_NANOS, YIELD_NANOS, SLEEP_NANOS);
            }
            if (i > 0 && idle.waited() >= timeoutNanos) {
                return false;
            }
            idle.idle(i++);
            if (idle.waited() >= SPIN_NANOS) {
                spins = 63; // past the spinning: check the clock after every test
            }
            if (idle.isParking(i) && Thread.interrupted()) {
                Thread.currentThread().interrupt();
                // MPI cannot cancel the operation: the communicator cannot go on after it.
                throw comm.failed(new AbortedException("interrupted while waiting for " + describe()
                        + " (the operation stays pending in MPI; this communicator is unusable)"));
            }
        }
        return true;
    }

    /** Whether the operation is finished, without asking MPI (acquire: its failure is visible after). */
    boolean isDoneLocally() {
        return (boolean) DONE.getAcquire(this);
    }

    @Override
    public boolean isDone() {
        return poll();
    }

    @Override
    public void await() {
        if (!waitFor(budgetNanos)) {
            throw comm.timedOut(this);
        }
        JcclException f = failure;
        if (f != null) {
            throw f;
        }
    }

    @Override
    public boolean await(Duration timeout) {
        if (timeout == null) {
            throw new IllegalArgumentException("timeout is null: pass a Duration, or call await() for the communicator's timeout");
        }
        if (!waitFor(Math.max(0, timeout.toNanos()))) {
            return false;
        }
        JcclException f = failure;
        if (f != null) {
            throw f;
        }
        return true;
    }

    @Override
    public JcclException exception() {
        return isDoneLocally() ? failure : null;
    }

    /** "allReduce (FLOAT32 x 1024, SUM) on rank 1 of mpi-world#1". */
    String describe() {
        StringBuilder sb = new StringBuilder(name);
        if (type != null) {
            sb.append(" (").append(type).append(" x ").append(count);
            if (op != null) {
                sb.append(", ").append(op);
            }
            sb.append(')');
        }
        if (peer >= 0) {
            sb.append(name.startsWith("send") || name.startsWith("recv") ? " with rank " : " rooted at rank ").append(peer);
        }
        return sb.append(" on rank ").append(comm.rank()).append(" of ").append(comm.id).toString();
    }

    @Override
    public String toString() {
        return "Work[" + describe() + (isDoneLocally() ? failure == null ? ", done]" : ", failed: " + failure.getMessage() + "]" : ", pending]");
    }
}
