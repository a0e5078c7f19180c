package org.jccl.cuda;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;

/**
 * An NCCL group call (ncclGroupStart / ncclGroupEnd): the asynchronous operations issued inside
 * it, on one or several communicators, are launched together when it closes. This is how one
 * thread drives several GPUs, and how several sends and receives form one exchange.
 *
 * <pre>{@code
 * try (NcclGroup g = NcclGroup.start()) {
 *     for (NcclCommunicator c : comms) works.add(c.allReduceAsync(bufs.get(c.rank()), ReduceOp.SUM));
 * }   // launched here; wait on the works afterwards
 * }</pre>
 *
 * <p>Only the {@code Async} forms may be called inside a group (a blocking call could never
 * finish before the group is launched). Groups nest; the outermost close launches. A group
 * belongs to the thread that started it.
 */
public final class NcclGroup implements AutoCloseable {
    private static final ThreadLocal<NcclGroup> CURRENT = new ThreadLocal<>();
    /** Groups open in the process: while none is, {@link #current()} skips the thread-local lookup of every launch. */
    private static final java.util.concurrent.atomic.AtomicInteger OPEN = new java.util.concurrent.atomic.AtomicInteger();

    private final NcclGroup parent;
    private final Thread owner = Thread.currentThread();
    private final List<NcclWork> works = new ArrayList<>();
    private final List<NcclCommunicator> workComms = new ArrayList<>();
    private final List<Checked> checked = new ArrayList<>();
    private boolean closed;

    private NcclGroup(NcclGroup parent) {
        this.parent = parent;
    }

    /** Starts a group on this thread (ncclGroupStart). */
    public static NcclGroup start() {
        Nccl.requireAvailable();
        int r = NcclLibrary.groupStart();
        if (r != NcclLibrary.SUCCESS) {
            throw new NcclException("ncclGroupStart", r, NcclLibrary.errorString(r), NcclLibrary.lastError(0));
        }
        OPEN.incrementAndGet(); // before this thread's own current() can look
        NcclGroup g = new NcclGroup(CURRENT.get());
        CURRENT.set(g);
        return g;
    }

    /** The innermost open group of this thread, or null. */
    static NcclGroup current() {
        return OPEN.get() == 0 ? null : CURRENT.get();
    }

    private NcclGroup root() {
        NcclGroup g = this;
        while (g.parent != null) {
            g = g.parent;
        }
        return g;
    }

    /** Registers a work that will be armed when the outermost group closes. */
    void add(NcclCommunicator comm, NcclWork work) {
        NcclGroup r = root();
        r.works.add(work);
        r.workComms.add(comm);
    }

    /** A JCCL_CHECK operation: its fingerprint is verified, then its native call made, when the group closes. */
    private record Checked(NcclCommunicator comm, NcclWork work, long seq, byte[] fp, Runnable call) {
    }

    /** Registers a checked operation whose native call waits for the outermost close. */
    void addChecked(NcclCommunicator comm, NcclWork work, long seq, byte[] fp, Runnable call) {
        NcclGroup r = root();
        r.checked.add(new Checked(comm, work, seq, fp, call));
        r.works.add(work);
        r.workComms.add(comm);
    }

    /**
     * JCCL_CHECK: verifies every checked operation's fingerprint (all were posted when issued, so
     * one thread driving several communicators cannot deadlock here), then makes their native
     * calls inside the still open NCCL group. Returns the first failure, or null.
     */
    private JcclException runChecked() {
        try {
            for (Checked c : checked) {
                c.comm().verifyCheck(c.seq(), c.fp(), c.work().kind());
            }
            for (Checked c : checked) {
                c.call().run();
            }
            return null;
        } catch (JcclException e) {
            return e;
        }
    }

    /**
     * Ends the group (ncclGroupEnd). The outermost close launches every operation of the group,
     * waits (with the communicators' deadlines) until NCCL has enqueued them, and arms each
     * operation's work with its completion event.
     *
     * @throws InvalidUsageException when called from another thread or before an inner group closed
     * @throws NcclException         when NCCL refused the group; every work of the group fails with it
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (Thread.currentThread() != owner) {
            throw new InvalidUsageException("an NcclGroup must be closed by the thread that started it (" + owner.getName()
                    + ")");
        }
        if (CURRENT.get() != this) {
            throw new InvalidUsageException("an inner NcclGroup is still open: close groups in reverse order of start");
        }
        closed = true;
        if (parent == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(parent);
        }
        OPEN.decrementAndGet();
        JcclException checkFailure = parent == null && !checked.isEmpty() ? runChecked() : null;
        int r = NcclLibrary.groupEnd();
        if (checkFailure != null) {
            for (NcclWork w : works) {
                w.fail(checkFailure);
            }
            throw checkFailure;
        }
        if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
            NcclException e = new NcclException("ncclGroupEnd", r, NcclLibrary.errorString(r), NcclLibrary.lastError(0));
            for (NcclWork w : root().works) {
                w.fail(e);
            }
            throw e;
        }
        if (parent != null) {
            return;
        }
        // Group the works per communicator, keeping issue order.
        Map<NcclCommunicator, List<NcclWork>> byComm = new LinkedHashMap<>();
        for (int i = 0; i < works.size(); i++) {
            byComm.computeIfAbsent(workComms.get(i), k -> new ArrayList<>()).add(works.get(i));
        }
        JcclException first = null;
        for (Map.Entry<NcclCommunicator, List<NcclWork>> e : byComm.entrySet()) {
            try {
                e.getKey().armGroupWorks(e.getValue());
            } catch (JcclException ex) {
                if (first == null) {
                    first = ex;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
