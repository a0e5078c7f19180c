package org.jccl.cuda;

import java.time.Duration;
import java.util.Objects;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jccl.DataType;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.Work;
import org.jccl.internal.VarHandles;

/**
 * One enqueued NCCL operation. It completes when the CUDA event recorded right after the
 * operation on its stream completes (the operations of one {@link NcclGroup} on one communicator
 * and stream share the event recorded after the group); {@link #event()} exposes that event so a compute stream can
 * wait for the collective without the host waiting:
 *
 * <pre>{@code
 * NcclWork w = comm.allReduceAsync(grads, ReduceOp.SUM);
 * computeStream.waitFor(w.event());   // GPU-side dependency, the host moves on
 * }</pre>
 *
 * <p>Waiting polls the event (never cuEventSynchronize) so the communicator's deadline always
 * holds; past it, or on an NCCL asynchronous error, the communicator is aborted and the work
 * fails with a cause that names the operation, its sequence number and NCCL's error text.
 *
 * <p>Issued on a stream that is being captured into a CUDA graph, the operation is captured, not
 * run: see {@link #isCaptured()}.
 *
 * <p>The event belongs to the communicator: once this work is observed complete it may be
 * recorded again for a later operation of the same communicator, so a stream that waits on it
 * after that waits at least as long as needed, never less.
 */
public final class NcclWork implements Work {
    static final int PENDING = 0, DONE = 1, FAILED = 2;

    private final NcclCommunicator comm;
    private final int kind;
    private final long sequence;
    private final DataType type;
    private final long count;
    private final long streamHandle;
    final long deadline;
    private static final VarHandle STATE = VarHandles.field(MethodHandles.lookup(), "stateField", int.class);
    private static final VarHandle EVENT = VarHandles.field(MethodHandles.lookup(), "event", CudaEvent.class);

    /** PENDING, DONE or FAILED; read and written through STATE (volatile, no extra object per work). */
    @SuppressWarnings("unused")
    private volatile int stateField;
    /** 1-based index among this communicator's collectives (0 for a send or receive); set before publication. */
    long collective;
    /** The peer of a send or receive (the root of a rooted collective). */
    int peer;
    /** The ReduceOp.Kind ordinal of a reduction, else -1 (for the flight recorder). */
    final byte redop;
    /** Its entry in the communicator's flight recorder (-1: none yet; guarded by the recorder). */
    long trace = -1;
    /** How long this work may take (the communicator's timeout, or a withTimeout view's); set before publication. */
    long budgetNanos;
    private volatile CudaEvent event;
    private volatile JcclException failure;
    /** Its index in the communicator's {@link WorkRing} (-1 until armed); written before publication. */
    long ringIndex = -1;
    /** A blocking call's work: its caller waits for it, the watchdog leaves it alone. */
    final boolean blocking;
    /** Captured into a CUDA graph: complete once captured, never armed, never watched. */
    final boolean captured;

    NcclWork(NcclCommunicator comm, int kind, long sequence, DataType type, long count, long streamHandle,
             long deadline, boolean blocking, int redop, boolean captured) {
        this.comm = comm;
        this.kind = kind;
        this.sequence = sequence;
        this.type = type;
        this.count = count;
        this.streamHandle = streamHandle;
        this.deadline = deadline;
        this.blocking = blocking;
        this.redop = (byte) redop;
        this.captured = captured;
        if (captured) {
            STATE.setRelease(this, DONE); // a plain store on x86: eager launches pay no fence for it
        }
    }

    /** Records {@code e} on this work's stream: from now on the work completes with it. */
    void arm(CudaEvent e) {
        e.recordRaw(streamHandle);
        EVENT.setRelease(this, e); // no fence on the launch path; readers read it as a volatile
    }

    /**
     * The next work of the same {@link NcclGroup}, communicator and stream that completes with this
     * one's event, or null; set under the communicator's lock before this work is published.
     */
    NcclWork sharer;

    /**
     * Arms this work with the event of {@code first}, an earlier work of its group on the same
     * stream, already armed: that event was recorded after the whole group, so it completes with
     * this work too, and no event is recorded for this one (one record per stream and group).
     */
    void armShared(NcclWork first) {
        EVENT.setVolatile(this, first.event); // volatile: see the check below
        // first may have completed before this work had its event, when its completion found no
        // event here and skipped it: then this work completes now (its operations were done then).
        if (first.isFinished()) {
            JcclException f = first.failure;
            if (f != null) {
                fail(comm.failureFor(this, f));
            } else {
                completeInOrder();
            }
        }
    }

    int kind() {
        return kind;
    }

    /** The element type (null for a barrier's internal type-free view). */
    DataType type() {
        return type;
    }

    /** Elements per rank, as launched. */
    long count() {
        return count;
    }

    /** The operation, e.g. "allReduce". */
    public String op() {
        return NcclCommunicator.opName(kind);
    }

    /** This communicator-local sequence number (1 for the first operation). */
    public long sequence() {
        return sequence;
    }

    /** The raw CUstream the operation was enqueued on. */
    public long streamHandle() {
        return streamHandle;
    }

    /**
     * Whether the operation was captured into a CUDA graph ({@link CudaGraph}) rather than run: such
     * a work is complete at once ({@link #isDone()} is true, {@link #await()} returns without
     * waiting) because the operation runs only when the graph is launched; wait for the
     * {@link org.jccl.Work} that {@link CudaGraph#launch} returns instead.
     */
    public boolean isCaptured() {
        return captured;
    }

    /**
     * The event that completes with this operation; a stream can wait on it with
     * {@link CudaStream#waitFor(CudaEvent)}.
     *
     * @throws InvalidUsageException inside an open {@link NcclGroup} (the operation is only
     *                               launched when the group closes), or for a captured operation
     *                               (order other captured work after it on the capturing stream)
     */
    public CudaEvent event() {
        if (captured) {
            throw new InvalidUsageException(describe() + " was captured into a CUDA graph: it has no event of its own; "
                    + "order later captured work after it on the capturing stream, and wait for the graph's launch");
        }
        CudaEvent e = event;
        if (e == null) {
            if (stateField == FAILED) {
                throw failure;
            }
            throw new InvalidUsageException(describe() + " belongs to an NcclGroup that is still open: close the group "
                    + "(which launches it) before asking for its event");
        }
        return e;
    }

    /** "allReduce #12 (FLOAT32 x 1024)". */
    String describe() {
        return op() + " #" + sequence + (type == null ? "" : " (" + type + " x " + count + ")");
    }

    boolean isFinished() {
        return stateField != PENDING;
    }

    @Override
    public boolean isDone() {
        if (stateField == PENDING) {
            CudaEvent e = event;
            if (e != null) {
                comm.device().makeCurrent();
                pollEvent();
            }
        }
        return stateField != PENDING;
    }

    /** Queries the event once; completes the work when it fired. The context must be current. */
    boolean pollEvent() {
        CudaEvent e = event;
        if (e == null || stateField != PENDING) {
            return stateField != PENDING;
        }
        boolean fired;
        try {
            fired = e.queryRaw();
        } catch (CudaException ex) {
            fail(new JcclException(describe() + " on " + comm.describe() + " failed in CUDA: " + ex.getMessage(), ex));
            return true;
        }
        if (fired) {
            // The event also fires when NCCL stopped the kernel because a peer failed or aborted:
            // only a communicator without an asynchronous error and without a dead member completes it.
            JcclException bad = comm.verifyCompletion(this);
            if (bad != null) {
                fail(comm.failureFor(this, bad));
                return true;
            }
            complete();
            // Work armed earlier on the same stream is complete too: settle it now, without a query.
            comm.completedThrough(this);
        }
        return fired || stateField != PENDING;
    }

    /** Completes this work because a later work on the same stream completed. */
    void completeInOrder() {
        if (event != null && stateField == PENDING) {
            complete();
        }
    }

    /**
     * The event fired. If the communicator was aborted meanwhile, the event may have fired only
     * because the abort stopped the kernel, so the work fails with the abort's cause instead.
     */
    private void complete() {
        JcclException abortCause = comm.failure();
        if (abortCause != null) {
            fail(comm.failureFor(this, abortCause));
            return;
        }
        // The works sharing this one's event (armShared) first: whoever sees this work done (e.g. a
        // caller's await, while another thread completes it) must see them done too.
        NcclWork s = sharer;
        if (s != null) {
            s.completeInOrder();
        }
        if (STATE.compareAndSet(this, PENDING, DONE)) {
            comm.traceEnd(this, true); // the event stays with its ring slot, free for the slot's next work
        }
    }

    /**
     * For {@link NcclWarmup}: runs the completion of a work that is already done, as a thread that
     * lost the race to complete it does (the watchdog and the waiter both saw its event fire). A
     * no-op; without it that path (the lost compare-and-set) would be compiled as a trap that the
     * first such race in the caller's calls hits, throwing the compiled call path away.
     */
    void completeLate() {
        if (stateField == DONE) {
            complete();
        }
    }

    /** Fails this work once; later calls are ignored. */
    void fail(JcclException e) {
        Objects.requireNonNull(e);
        synchronized (this) {
            if (stateField != PENDING) {
                return;
            }
            failure = e; // written before the state, which readers check first
            if (!STATE.compareAndSet(this, PENDING, FAILED)) {
                return;
            }
        }
        comm.traceEnd(this, false);
    }

    @Override
    public void await() {
        waitUntil(deadline, true);
    }

    @Override
    public boolean await(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        long until = System.nanoTime() + Math.max(0, timeout.toNanos());
        return waitUntil(until, false);
    }

    private boolean waitUntil(long until, boolean untilIsDeadline) {
        if (event == null && stateField == PENDING) {
            throw new InvalidUsageException(describe() + " belongs to an NcclGroup that is still open: close the group "
                    + "(which launches it) before waiting for it");
        }
        if (stateField == PENDING) {
            comm.device().makeCurrent();
        }
        comm.waiters.incrementAndGet();
        try {
            return waitLoop(until, untilIsDeadline);
        } finally {
            comm.waiters.decrementAndGet();
        }
    }

    private boolean waitLoop(long until, boolean untilIsDeadline) {
        org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
        long lastCheck = System.nanoTime();
        while (true) {
            int s = stateField;
            if (s == DONE) {
                return true;
            }
            if (s == FAILED) {
                throw failure;
            }
            if (pollEvent()) {
                continue;
            }
            long now = System.nanoTime();
            if (now - lastCheck > 1_000_000) {
                comm.checkAsyncError(this);
                lastCheck = now;
                JcclException f = comm.failure();
                if (f != null) {
                    fail(comm.failureFor(this, f)); // failed without NCCL's abort yet (a heartbeat-declared death)
                    continue;
                }
            }
            if (now - deadline > 0) {
                comm.onTimeout(this);
                continue;
            }
            if (!untilIsDeadline && now - until > 0) {
                return false;
            }
            b.idle();
        }
    }

    @Override
    public JcclException exception() {
        return stateField == FAILED ? failure : null;
    }

    @Override
    public String toString() {
        String s = switch (stateField) {
            case DONE -> captured ? "captured" : "done";
            case FAILED -> "failed";
            default -> "pending";
        };
        return "NcclWork[" + describe() + ", " + s + "]";
    }
}
