package org.jccl.cuda;

import static org.jccl.cuda.NcclCommunicator.ABORTED;
import static org.jccl.cuda.NcclCommunicator.LAUNCH_STAMP_NANOS;
import static org.jccl.cuda.NcclCommunicator.LIVE_PER_GPU;
import static org.jccl.cuda.NcclCommunicator.LOG;
import static org.jccl.cuda.NcclCommunicator.OPEN;
import static org.jccl.cuda.NcclCommunicator.RECV;
import static org.jccl.cuda.NcclCommunicator.SEND;
import static org.jccl.cuda.NcclCommunicator.YOUNG_NANOS;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.spi.Liveness;

/**
 * Failure handling of {@link NcclCommunicator}: the watchdog's pass over a communicator's pending
 * work (deadlines, NCCL's asynchronous errors, heartbeats), the first failure and the abort it
 * causes (ncclCommAbort, at once or delayed until the other ranks can have learned it), failures
 * posted in the job's store for the other ranks and read from it ({@link FailureWatch}), the
 * ranks a failure names (for shrinkExcludingFailed), and the flight recorder's record of each
 * work. The state lives in the communicator; these methods take it as their first argument.
 */
final class NcclHealth {
    private NcclHealth() {
    }

    /** A work-specific failure carrying the communicator's cause. */
    static JcclException failureFor(NcclCommunicator c, NcclWork w, JcclException cause) {
        if (cause.getMessage() != null && cause.getMessage().contains(w.describe())) {
            return cause;
        }
        JcclException e;
        if (cause instanceof CollectiveTimeoutException t) {
            e = new CollectiveTimeoutException(w.describe() + " on " + c.describe() + " failed: " + cause.getMessage(),
                    t.missingRanks());
            e.initCause(cause);
        } else if (cause instanceof PeerFailureException pf) {
            e = new PeerFailureException(pf.rank(), w.describe() + " on " + c.describe() + " failed: " + cause.getMessage(),
                    cause);
        } else if (cause instanceof AbortedException) {
            e = new AbortedException(w.describe() + " on " + c.describe() + " failed: " + cause.getMessage());
            e.initCause(cause);
        } else {
            e = new JcclException(w.describe() + " on " + c.describe() + " failed: " + cause.getMessage(), cause);
        }
        return e;
    }

    static CollectiveTimeoutException timeoutFor(NcclCommunicator c, NcclWork w, String detail, List<Integer> missing) {
        int async = NcclLibrary.SUCCESS;
        String last = "";
        if (c.state.get() == OPEN) {
            async = NcclLibrary.asyncError(c.comm, c.watchScratch);
            last = NcclLibrary.lastError(c.comm);
        }
        return new CollectiveTimeoutException("nccl " + w.describe() + " on " + c.describe() + " did not complete within "
                + Duration.ofNanos(w.budgetNanos) + " (" + detail + "); " + missingText(c, w, missing) + "; NCCL state "
                + NcclLibrary.resultName(async) + (last.isBlank() ? "" : ", last NCCL error: " + last.strip()) + "; the communicator was aborted", missing);
    }

    private static String missingText(NcclCommunicator c, NcclWork w, List<Integer> missing) {
        if (w.kind() == SEND || w.kind() == RECV) {
            return "its peer, rank " + w.peer + ", never matched it (NCCL runs a rank's ungrouped sends and receives in"
                    + " stream order: if every rank of a ring sends before it receives, none ever receives; issue each"
                    + " rank's send and receive of one exchange inside one NcclGroup)";
        }
        if (missing.isEmpty()) {
            return c.jobStore == null ? "a peer rank is probably dead or stuck (without a store jccl cannot tell which)"
                    : "every rank had reached it: NCCL itself is stuck";
        }
        Liveness.Watch lw = c.watch;
        return "rank(s) " + missing + " had not reached collective #" + w.collective + " (dead, stuck or elsewhere)"
                + (lw == null ? "" : lw.silentNote(missing));
    }

    /**
     * Which ranks never reached {@code w}, learned through the store: every rank that times out
     * posts how many collectives it issued, and ranks that post none that high within 2 s are
     * missing. A send or receive names its peer.
     */
    private static List<Integer> missingFor(NcclCommunicator c, NcclWork w) {
        if (w.kind() == SEND || w.kind() == RECV) {
            return List.of(w.peer);
        }
        if (c.jobStore == null || w.collective <= 0) {
            return List.of();
        }
        try {
            String base = c.scope + "/progress/";
            long issued;
            c.lock.lock();
            try {
                issued = c.collIssued;
            } finally {
                c.lock.unlock();
            }
            c.jobStore.set(base + c.rank(), Long.toString(issued).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            long until = System.nanoTime() + 2_000_000_000L;
            while (true) {
                List<Integer> missing = new ArrayList<>();
                for (int r = 0; r < c.size(); r++) {
                    if (r == c.rank()) {
                        continue;
                    }
                    byte[] v = c.jobStore.tryGet(base + r);
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
            LOG.warn(c.rank(), "could not learn the missing ranks of " + w.describe() + " through the store: " + e);
            return List.of();
        }
    }

    /** Called by a waiter or the watchdog when {@code w} passed its deadline. */
    static void onTimeout(NcclCommunicator c, NcclWork w) {
        if (c.state.get() != OPEN) {
            w.fail(failureFor(c, w, c.closedCause()));
            return;
        }
        CollectiveTimeoutException e;
        List<Integer> missing = missingFor(c, w);
        if (c.state.get() != OPEN) {
            w.fail(failureFor(c, w, c.closedCause()));
            return;
        }
        if (c.lock.tryLock()) {
            try {
                e = timeoutFor(c, w, "its event never fired", missing);
            } finally {
                c.lock.unlock();
            }
        } else {
            e = new CollectiveTimeoutException("nccl " + w.describe() + " on " + c.describe() + " did not complete within "
                    + Duration.ofNanos(w.budgetNanos) + "; " + missingText(c, w, missing) + "; the communicator was aborted",
                    missing);
        }
        // NCCL can end the kernels of the other ranks on this rank's abort as if the collective had
        // completed: give their deadlines (which came up about now) time to fire first.
        abortWith(c, e, 2_000_000_000L, true);
        w.fail(failureFor(c, w, e));
    }

    /** Polls ncclCommGetAsyncError (skipped while another thread holds the lock); aborts on an error. */
    static void checkAsyncError(NcclCommunicator c, NcclWork oldest) {
        Liveness.Watch lw = c.watch;
        if (lw != null && c.state.get() == OPEN) {
            int dead = lw.firstDead();
            if (dead >= 0) {
                failByLiveness(c, lw, dead, (oldest == null ? "pending work" : oldest.describe()) + " on " + c.describe());
                return;
            }
        }
        if (c.state.get() != OPEN || !c.lock.tryLock()) {
            return;
        }
        int s;
        String last = "";
        try {
            if (c.state.get() != OPEN) {
                return;
            }
            s = NcclLibrary.asyncError(c.comm, c.watchScratch);
            if (s != NcclLibrary.SUCCESS && s != NcclLibrary.IN_PROGRESS) {
                last = NcclLibrary.lastError(c.comm);
            }
        } finally {
            c.lock.unlock();
        }
        if (s != NcclLibrary.SUCCESS && s != NcclLibrary.IN_PROGRESS) {
            String what = oldest == null ? "" : " while " + oldest.describe() + " was pending";
            abortWith(c, new NcclException("NCCL asynchronous error on " + c.describe() + what, s, NcclLibrary.errorString(s),
                    last));
        }
    }

    /** Aborts the NCCL communicator once and fails every pending work with {@code cause}. */
    static void abortWith(NcclCommunicator c, JcclException cause) {
        abortWith(c, cause, 0);
    }

    /**
     * Fails the communicator with {@code cause} at once and calls ncclCommAbort after {@code
     * delayNanos}. A delay is for deaths learned from heartbeats: the first rank to learn one must
     * not abort NCCL before the other survivors have learned it too, because NCCL can end their
     * kernels on a peer's abort as if the collective had completed.
     */
    static void abortWith(NcclCommunicator c, JcclException cause, long delayNanos) {
        abortWith(c, cause, delayNanos, false);
    }

    /**
     * As {@link #abortWith(NcclCommunicator, JcclException, long)}; with {@code post}, the failure
     * is also posted in the job's store for the other ranks (their {@link FailureWatch} fails their
     * pending work with it), and NCCL's abort waits at least {@link #POST_DELAY_NANOS} so that they
     * have read it before this rank's abort can end their kernels.
     */
    static void abortWith(NcclCommunicator c, JcclException cause, long delayNanos, boolean post) {
        noteFailure(c, cause);
        if (!c.failure.compareAndSet(null, cause)) {
            return;
        }
        boolean wasOpen = c.state.compareAndSet(OPEN, ABORTED);
        LOG.info(c.rank(), () -> "aborting " + c.describe() + ": " + cause.getMessage()); // its works fail with cause
        if (wasOpen) {
            CustomAllReduce car = c.car;
            if (car != null) {
                car.abort(); // its kernels waiting at a barrier return now
            }
            autoDump(c, cause.getMessage());
        }
        if (post && c.jobStore != null && wasOpen) {
            c.posted = LateAborts.execute(() -> postFailure(c, cause));
            delayNanos = Math.max(delayNanos, POST_DELAY_NANOS);
        }
        if (wasOpen) {
            if (delayNanos <= 0) {
                nativeAbort(c);
            } else {
                c.nativeAbortAt = System.nanoTime() + delayNanos;
                LateAborts.schedule(() -> nativeAbort(c), delayNanos);
            }
        }
        failPending(c, cause);
    }

    /** How long a posting rank waits before NCCL's abort: ten periods of the peers' FailureWatch. */
    static final long POST_DELAY_NANOS = 10 * FailureWatch.PERIOD_NANOS;

    /** Records the works armed since the last call, in launch order. Holding the recorder. */
    static void flushTrace(NcclCommunicator c) {
        long t = c.ring.tail();
        for (long i = Math.max(c.traced, t - WorkRing.CAPACITY); i < t; i++) {
            NcclWork w = c.ring.at(i);
            if (w != null && w.ringIndex == i && w.trace < 0) {
                recordLaunch(c, w);
            }
        }
        c.traced = t;
    }

    /** Holding the recorder. */
    private static void recordLaunch(NcclCommunicator c, NcclWork w) {
        int kind = w.kind();
        boolean p2p = org.jccl.spi.Collective.of(kind).pointToPoint();
        boolean rooted = org.jccl.spi.Collective.of(kind).rooted();
        DataType type = w.type();
        w.trace = c.recorder.schedule(w.collective, kind, type == null ? -1 : type.ordinal(), w.count(), w.redop,
                rooted ? w.peer : -1, p2p ? w.peer : -1, w.deadline - w.budgetNanos);
        c.recorder.startedNow(w.trace); // enqueued = started, as far as the host can tell
    }

    static void traceEnd(NcclCommunicator c, NcclWork w, boolean ok) {
        if (!c.recorder.isRecording()) {
            return;
        }
        long now = System.nanoTime();
        synchronized (c.recorder) {
            if (w.ringIndex >= 0 && w.ringIndex < c.traceFloor) {
                // a work from before restartNumbering (the JIT warm-up's) completing late, e.g. on the
                // watchdog's thread: its record was cleared, and its handle would point into the new one
                return;
            }
            flushTrace(c);
            if (w.trace < 0) {
                recordLaunch(c, w); // failed before it was armed: out of launch order
            }
            if (ok) {
                c.recorder.completed(w.trace, now);
            } else {
                c.recorder.failed(w.trace);
            }
        }
    }

    /** The name of this communicator in dumps: the same on every rank, so that jccl doctor lines them up. */
    static String traceName(NcclCommunicator c) {
        return "nccl-" + c.scope;
    }

    private static void autoDump(NcclCommunicator c, String reason) {
        synchronized (c.recorder) {
            flushTrace(c);
            c.recorder.dumpOnFailure(c.traceDir, traceName(c), c.rank(), c.size(), reason, LOG);
        }
    }

    /** {@link NcclCommunicator#dumpFlightRecord}. */
    static java.nio.file.Path dumpFlightRecord(NcclCommunicator c, java.nio.file.Path dir) {
        Objects.requireNonNull(dir, "dir");
        try {
            synchronized (c.recorder) {
                flushTrace(c);
                return c.recorder.dump(dir, traceName(c), c.rank(), c.size(), "dumpFlightRecord() called");
            }
        } catch (java.io.IOException e) {
            throw new JcclException("cannot write the flight recorder to " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * close() of an aborted communicator keeps the delays abortWith set: the report reaches the
     * store and NCCL's abort waits for its time (at most a few seconds), then happens.
     */
    static void awaitDelayedAbort(NcclCommunicator c) {
        java.util.concurrent.Future<?> p = c.posted;
        if (p != null) {
            try {
                p.get(2, java.util.concurrent.TimeUnit.SECONDS);
            } catch (Exception e) {
                LOG.warn(c.rank(), "the failure report of " + c.describe() + " did not reach the store in 2 s: " + e);
            }
        }
        long wait = c.nativeAbortAt - System.nanoTime();
        if (c.nativeAbortAt != 0 && wait > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(Math.min(wait, 5_000_000_000L));
        }
    }

    /** An idle communicator's counter is read every this many FailureWatch periods (0.5 s). */
    private static final int IDLE_PERIODS = 10;

    /**
     * Posts this rank's failure for the others: {@code <scope>/failure/<rank>} = kind, culprit and
     * reason; then bumps {@code <scope>/failures}. The culprit is the rank to blame: a dead or
     * missing peer when known, else this rank.
     */
    private static void postFailure(NcclCommunicator c, JcclException cause) {
        try {
            int culprit = c.rank();
            char kind = 'F';
            if (cause instanceof PeerFailureException pf && pf.rank() >= 0 && pf.rank() < c.size()) {
                culprit = pf.rank();
            } else if (cause instanceof CollectiveTimeoutException te && !te.missingRanks().isEmpty()) {
                culprit = te.missingRanks().get(0);
                kind = 'T';
            } else if (cause instanceof AbortedException) {
                kind = 'A';
            }
            String v = kind + "|" + culprit + "|" + cause.getMessage();
            c.jobStore.set(c.scope + "/failure/" + c.rank(), v.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            c.jobStore.add(c.scope + "/failures", 1);
        } catch (RuntimeException e) {
            LOG.warn(c.rank(), "could not tell the other ranks through the store why " + c.describe() + " failed: " + e);
        }
    }

    /** FailureWatch: reads the failure counter while this communicator waits for work; fails it on news. */
    static void checkPostedFailures(NcclCommunicator c) {
        if (c.jobStore == null || c.postedFailuresOff || c.state.get() != OPEN) {
            return;
        }
        // An idle communicator is read too, every IDLE_PERIODS periods: a rank that was elsewhere
        // (a long close, another communicator) while a peer posted its failure and aborted must not
        // launch into the aborted peer, whose abort can end this rank's kernel as if it completed.
        if (c.waiters.get() == 0 && !c.ring.hasWatched() && ++c.idlePeriods < IDLE_PERIODS) {
            return;
        }
        c.idlePeriods = 0;
        long n = c.jobStore.add(c.scope + "/failures", 0);
        if (n <= c.seenPostedFailures) {
            return;
        }
        c.seenPostedFailures = n;
        for (int r = 0; r < c.size(); r++) {
            if (r == c.rank()) {
                continue;
            }
            byte[] v = c.jobStore.tryGet(c.scope + "/failure/" + r);
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
            abortWith(c, e, POST_DELAY_NANOS, false);
            return;
        }
    }

    static void postedFailuresUnavailable(NcclCommunicator c, Throwable t) {
        if (!c.postedFailuresOff) {
            c.postedFailuresOff = true;
            LOG.warn(c.rank(), "reading the failures other ranks post in the store stopped for " + c.describe() + ": " + t);
        }
    }

    /**
     * Whether this process has communicators on another GPU than this one's. Only then can NCCL's
     * teardown of one wait for another rank's thread (see {@link LateAborts#offThread}), and only
     * then does it run on a thread of its own; a process per GPU keeps it on the caller.
     */
    static boolean severalGpus(NcclCommunicator c) {
        for (Map.Entry<Integer, AtomicInteger> e : LIVE_PER_GPU.entrySet()) {
            if (e.getKey() != c.device.ordinal() && e.getValue().get() > 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * ncclCommAbort of both NCCL communicators, once, on a thread of its own (see
     * {@link LateAborts#offThread}): NCCL sets the abort flags at once, but the reclaim that follows
     * can wait for kernels on other GPUs of this process.
     */
    private static void nativeAbort(NcclCommunicator c) {
        if (!c.nativeAborted.compareAndSet(false, true)) {
            return;
        }
        if (severalGpus(c)) {
            LateAborts.offThread("jccl-nccl-abort-" + c.name, () -> nativeAbortNow(c));
        } else {
            nativeAbortNow(c);
        }
    }

    /** The ncclCommAborts of {@link #nativeAbort}, after claiming them. */
    private static void nativeAbortNow(NcclCommunicator c) {
        c.lock.lock();
        try {
            abortHandles(c);
        } finally {
            c.lock.unlock();
            c.nativeAbortDone.countDown();
        }
    }

    /** ncclCommAbort of the data communicator and, when it is another handle, of the control one. */
    static void abortHandles(NcclCommunicator c) {
        NcclInit.abortQuietly(c.comm);
        if (c.ctl != c.comm) {
            NcclInit.abortQuietly(c.ctl);
        }
    }

    /** In close's teardown thread: aborts NCCL if no one has yet, else waits for the abort under way. */
    static void finishNativeAbort(NcclCommunicator c) {
        if (c.nativeAborted.compareAndSet(false, true)) {
            nativeAbortNow(c);
            return;
        }
        try {
            c.nativeAbortDone.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A heartbeat-declared death: fail now, abort NCCL once every survivor can have learned it. */
    private static void failByLiveness(NcclCommunicator c, Liveness.Watch lw, int dead, String during) {
        long interval = lw.liveness().interval().toNanos();
        abortWith(c, lw.failure(dead, during), 2 * interval + 500_000_000L);
    }

    private static void failPending(NcclCommunicator c, JcclException cause) {
        for (NcclWork w : c.ring.unfinished()) {
            w.fail(failureFor(c, w, cause));
        }
    }

    /** One watchdog pass over this communicator; true while work is outstanding. */
    static boolean watch(NcclCommunicator c, long now) {
        if (c.state.get() != OPEN) {
            JcclException f = c.failure.get();
            if (f != null) {
                failPending(c, f);
            }
            return false;
        }
        long from = c.ring.advanceHead();
        long to = c.ring.tail();
        if (from >= to) {
            return false;
        }
        // While the owner keeps launching, every CUDA or NCCL call made here would take a driver or
        // NCCL lock its next launch needs (measured: +0.2-0.4 us per enqueue on H200): only
        // deadlines, read from memory, are checked then. The owner waits for its work itself, or
        // stops launching, and the watchdog then polls.
        boolean ownerActive = now - c.lastLaunch < YOUNG_NANOS + LAUNCH_STAMP_NANOS;
        boolean current = false;
        NcclWork oldest = null;
        int polled = 0;
        int seen = 0;
        for (long i = from; i < to && seen < 5; i++) {
            NcclWork w = c.ring.at(i);
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
                c.device.makeCurrent();
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
                onTimeout(c, w);
                return false;
            }
        }
        if (oldest != null && !ownerActive && now - (oldest.deadline - oldest.budgetNanos) >= YOUNG_NANOS) {
            checkAsyncError(c, oldest); // not while the owner launches: it would take the lock the launch needs
        } else if (oldest != null && c.watch != null) {
            Liveness.Watch lw = c.watch;
            int dead = lw.firstDead();
            if (dead >= 0) {
                failByLiveness(c, lw, dead, oldest.describe() + " on " + c.describe());
                return false;
            }
        }
        return c.ring.hasWatched();
    }

    static java.util.TreeSet<Integer> knownFailed(NcclCommunicator c) {
        java.util.TreeSet<Integer> out = new java.util.TreeSet<>(c.failedRanks);
        Liveness.Watch w = c.watch;
        if (w != null) {
            out.addAll(w.deadMembers()); // ranks the job's heartbeats declared dead
        }
        return out;
    }

    /** Remembers the ranks a failure names, for shrinkExcludingFailed. */
    static void noteFailure(NcclCommunicator c, JcclException e) {
        if (e instanceof PeerFailureException pf && pf.rank() >= 0 && pf.rank() < c.size() && pf.rank() != c.rank()) {
            c.failedRanks.add(pf.rank());
        } else if (e instanceof CollectiveTimeoutException te) {
            for (int r : te.missingRanks()) {
                if (r >= 0 && r < c.size() && r != c.rank()) {
                    c.failedRanks.add(r);
                }
            }
        }
    }


    /** Heartbeats: fails with a PeerFailureException when a member of this communicator was declared dead. */
    static void checkLiveness(NcclCommunicator c, NcclWork w, String during) {
        Liveness.Watch lw = c.watch;
        if (lw == null) {
            return;
        }
        int dead = lw.firstDead();
        if (dead >= 0) {
            PeerFailureException e = lw.failure(dead, during + " on " + c.describe());
            failByLiveness(c, lw, dead, during + " on " + c.describe());
            if (w != null) {
                w.fail(failureFor(c, w, e));
            }
            throw w == null ? e : failureFor(c, w, e);
        }
    }

    /**
     * Called when a work's event fired: null when its result can be trusted, else the failure (the
     * communicator is aborted with it). An event also fires when NCCL stopped the kernel after a
     * peer failed or aborted, so the NCCL asynchronous error and the heartbeats are consulted
     * (ncclCommGetAsyncError is an atomic read inside NCCL, safe without the lock).
     */
    static JcclException verifyCompletion(NcclCommunicator c, NcclWork w) {
        JcclException f = c.failure.get();
        if (f != null) {
            return f;
        }
        CustomAllReduce car = c.car;
        JcclException k = car == null ? null : car.quitEarly();
        if (k != null) {
            abortWith(c, k);
            return c.failure.get();
        }
        int s = NcclLibrary.asyncError(c.comm, Scratch.get());
        if (s != NcclLibrary.SUCCESS && s != NcclLibrary.IN_PROGRESS) {
            NcclException e = new NcclException("NCCL asynchronous error on " + c.describe() + " when " + w.describe()
                    + " ended (its result is not valid)", s, NcclLibrary.errorString(s), "");
            abortWith(c, e);
            return c.failure.get();
        }
        Liveness.Watch lw = c.watch;
        if (lw != null) {
            int dead = lw.firstDead();
            if (dead >= 0) {
                failByLiveness(c, lw, dead, w.describe() + " on " + c.describe());
                return c.failure.get();
            }
        }
        return null;
    }
}
