package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.jccl.cuda.NcclArgs.scaled;
import static org.jccl.cuda.NcclCommunicator.ALL_GATHER;
import static org.jccl.cuda.NcclCommunicator.ALL_REDUCE;
import static org.jccl.cuda.NcclCommunicator.ALL_TO_ALL;
import static org.jccl.cuda.NcclCommunicator.BARRIER;
import static org.jccl.cuda.NcclCommunicator.BROADCAST;
import static org.jccl.cuda.NcclCommunicator.GATHER;
import static org.jccl.cuda.NcclCommunicator.LAUNCH_STAMP_NANOS;
import static org.jccl.cuda.NcclCommunicator.LOG;
import static org.jccl.cuda.NcclCommunicator.OPEN;
import static org.jccl.cuda.NcclCommunicator.RECV;
import static org.jccl.cuda.NcclCommunicator.REDUCE;
import static org.jccl.cuda.NcclCommunicator.REDUCE_SCATTER;
import static org.jccl.cuda.NcclCommunicator.SCATTER;
import static org.jccl.cuda.NcclCommunicator.SEND;
import static org.jccl.cuda.NcclCommunicator.opName;
import static org.jccl.cuda.NcclInit.rethrow;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.ReduceOp;

/**
 * The launch path of {@link NcclCommunicator}: from checked arguments to an operation enqueued on a
 * stream and an {@link NcclWork} armed with the event that completes it. One launch takes the
 * communicator's lock once, makes the native call(s) with the context current, and publishes the
 * work in the communicator's {@link WorkRing} (at most {@link WorkRing#CAPACITY} in flight, so an
 * enqueue never waits for CUDA's launch queue). Also: JCCL_CHECK's fingerprint exchange before the
 * native call, operations deferred to an {@link NcclGroup}'s close, all-to-all, gather and scatter
 * as grouped sends and receives where NCCL has no native call, and PreMulSum operators.
 */
final class NcclLaunch {
    private NcclLaunch() {
    }

    static NcclWork launch(NcclCommunicator c, int kind, DeviceBuffer send, DeviceBuffer recv, long count,
                           DataType type, ReduceOp op, int root, CudaStream userStream, boolean blocking) {
        NcclGroup group = NcclGroup.current();
        if (blocking && group != null) {
            throw new InvalidUsageException("blocking " + opName(kind) + " inside an NcclGroup can never finish before "
                    + "the group is launched: call " + opName(kind) + "Async and wait after closing the group");
        }
        c.ensureNotClosed();
        long sh = userStream == null ? c.streamHandle : userStream.handle();
        boolean captured = capturing(c, kind, sh, send, recv, blocking);
        if (group == null && !captured && !c.ring.hasRoom()) {
            makeRoom(c); // outside the lock
        }
        if (c.watch != null) {
            NcclHealth.checkLiveness(c, null, opName(kind));
        }
        long sp = send == null ? 0 : send.rawPointer();
        long rp = recv == null ? 0 : recv.rawPointer();
        NcclWork w;
        // JCCL_CHECK: the JIT warm-up's collectives skip the exchange (NcclWarmup says why); warmingUp is
        // read only on communicators that check, so the others' launches never branch on it.
        if (c.check != null && kind != SEND && kind != RECV && !c.warmingUp) {
            return launchChecked(c, kind, sp, rp, count, type, op, root, sh, blocking, group, captured);
        }
        c.lock.lock();
        try {
            c.ensureOpen();
            long s = ++c.seq;
            int r = callNative(c, kind, s, sp, rp, count, type, op, root, sh);
            w = newWork(c, kind, s, type, count, sh, op, root, kind != SEND && kind != RECV ? ++c.collIssued : 0, blocking,
                    captured);
            if (group != null) {
                group.add(c, w);
                return w;
            }
            arm(c, w, r);
        } finally {
            c.lock.unlock();
        }
        return handOver(c, w, blocking);
    }

    /**
     * Whether {@code sh} is being captured into a CUDA graph (one capture-safe query), so the
     * operation is captured rather than run. Refuses, before any native call, what a capture
     * cannot hold: a blocking call (it would wait for work that runs only at a launch), an
     * in-place all-to-all (it stages through the communicator's scratch, which later calls reuse),
     * and a stream whose capture an earlier call already invalidated.
     */
    private static boolean capturing(NcclCommunicator c, int kind, long sh, DeviceBuffer send, DeviceBuffer recv,
                                     boolean blocking) {
        int status = CudaDriver.captureStatus(sh);
        if (status == CudaDriver.CAPTURE_NONE) {
            return false;
        }
        String stream = "stream 0x" + Long.toHexString(sh);
        if (status != CudaDriver.CAPTURE_ACTIVE) {
            throw new InvalidUsageException(opName(kind) + " on " + stream + ", whose CUDA graph capture an earlier call "
                    + "invalidated: end the capture (it reports the failure) and capture again");
        }
        if (blocking) {
            throw new InvalidUsageException("blocking " + opName(kind) + " on " + stream + ", which is being captured into "
                    + "a CUDA graph: it would wait for an operation that runs only when the graph is launched; call "
                    + opName(kind) + "Async (its work is complete once captured) and await the graph launch's work");
        }
        if (kind == ALL_TO_ALL && send != null && send == recv && c.size() > 1) {
            throw new InvalidUsageException("in-place allToAll on " + stream + ", which is being captured into a CUDA "
                    + "graph: it stages its input in the communicator's scratch memory, which later calls reuse; give "
                    + "separate send and recv buffers inside a capture");
        }
        return true;
    }

    /**
     * The native call(s) of operation {@code s} with the context made current: SUCCESS or
     * IN_PROGRESS, else an NcclException. Under the lock.
     */
    private static int callNative(NcclCommunicator c, int kind, long s, long sp, long rp, long count, DataType type,
                                  ReduceOp op, int root, long sh) {
        c.device.makeCurrent(c.lockedScratch); // the lock's own scratch: no thread-local lookup
        int red = op == null ? 0 : redOp(c, op, type);
        int r = call(c, kind, sp, rp, count, type, red, root, sh);
        if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
            throw new NcclException("nccl " + opName(kind) + " #" + s + " (" + type + " x " + count + ") on "
                    + c.describe(), r, NcclLibrary.errorString(r), NcclLibrary.lastError(c.comm));
        }
        return r;
    }

    /**
     * The work of operation {@code s}, its deadline starting now. Under the lock. The flight
     * recorder learns of it later, from the ring (see {@link #flushTrace}).
     */
    private static NcclWork newWork(NcclCommunicator c, int kind, long s, DataType type, long count, long sh,
                                    ReduceOp op, int root, long collective, boolean blocking, boolean captured) {
        long budget = callBudgetNanos(c);
        long now = System.nanoTime(); // the one clock reading of a launch: deadline, trace, watchdog
        noteLaunch(c, now);
        NcclWork w = new NcclWork(c, kind, s, type, count, sh, now + budget, blocking,
                op == null ? -1 : op.kind().ordinal(), captured);
        if (captured) {
            CudaGraph.noteCaptured(sh, c);
        }
        w.budgetNanos = budget;
        w.peer = root;
        w.collective = collective;
        return w;
    }

    /** Records the event that completes {@code w} once NCCL has enqueued it ({@code r}: the call's result). Under the lock. */
    private static void arm(NcclCommunicator c, NcclWork w, int r) {
        if (r == NcclLibrary.IN_PROGRESS) {
            waitNotInProgress(c, w);
        }
        // Blocking calls wait on an event too: polling the stream instead measured ~3 us slower per call
        // on 4x H200 (NCCL 2.28), though it saves the record.
        armInRing(c, w);
    }

    /**
     * Records the event of the ring's next slot after {@code w} and publishes {@code w} there.
     * Under the lock, with the context current.
     */
    private static void armInRing(NcclCommunicator c, NcclWork w) {
        if (w.captured) {
            return; // an event recorded into a capture fires only in a launch: nothing to watch here
        }
        freeNextSlot(c, w);
        w.arm(c.ring.eventFor(c.device));
        c.ring.publish(w);
    }

    /** As {@link #armInRing}, with the event of {@code first} (armed earlier in the same group, same stream). */
    private static void armSharedInRing(NcclCommunicator c, NcclWork w, NcclWork first) {
        freeNextSlot(c, w);
        w.armShared(first);
        c.ring.publish(w);
    }

    /** Makes sure the ring's next slot is free for {@code w}. Under the lock. */
    private static void freeNextSlot(NcclCommunicator c, NcclWork w) {
        if (!c.ring.hasRoom()) {
            c.ring.advanceHead();
            if (c.ring.blocker() != null) {
                awaitSlotLocked(c, w);
            }
        }
    }

    /**
     * Another thread filled the ring between this launch's check and its lock (or a group arms
     * more works than the ring has free slots): waits here for the oldest work, with its deadline.
     */
    private static void awaitSlotLocked(NcclCommunicator c, NcclWork w) {
        org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
        NcclWork full;
        while ((full = c.ring.blocker()) != null) {
            if (full.pollEvent()) {
                continue;
            }
            if (System.nanoTime() - full.deadline > 0) {
                c.onTimeout(full); // aborts the communicator: every pending work fails
            }
            if (c.state.get() != OPEN) {
                JcclException e = c.failureFor(w, c.closedCause());
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
    private static void makeRoom(NcclCommunicator c) {
        makeRoom(c, 1);
    }

    /** As {@link #makeRoom(NcclCommunicator)}, for {@code slots} works (a group's, armed together). */
    private static void makeRoom(NcclCommunicator c, int slots) {
        long head = c.ring.advanceHead();
        if (c.ring.hasRoom(slots)) {
            return;
        }
        NcclWork mid = c.ring.at(head + WorkRing.CAPACITY / 2);
        if (mid != null && !mid.isFinished()) {
            c.device.makeCurrent();
            mid.pollEvent();
            head = c.ring.advanceHead();
            if (c.ring.hasRoom(slots)) {
                return;
            }
        }
        NcclWork oldest = c.ring.blocker();
        if (oldest != null) {
            awaitQuietly(oldest);
            c.ring.advanceHead();
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
    private static NcclWork handOver(NcclCommunicator c, NcclWork w, boolean blocking) {
        if (!blocking && !w.captured) {
            Watchdog.wake();
        }
        return w;
    }

    /**
     * JCCL_CHECK: the fingerprint exchange runs before NCCL sees the call, outside the lock (an
     * abort must never wait behind a store read). Inside a group the native call is deferred to
     * the group's close, which verifies every fingerprint first.
     */
    private static NcclWork launchChecked(NcclCommunicator c, int kind, long sp, long rp, long count, DataType type,
                                          ReduceOp op, int root, long sh, boolean blocking, NcclGroup group,
                                          boolean captured) {
        long cs;
        c.lock.lock();
        try {
            c.ensureOpen();
            cs = ++c.collIssued;
        } finally {
            c.lock.unlock();
        }
        byte[] fp = CollectiveCheck.fingerprint(kind, type, count, root, op);
        c.check.post(cs, fp);
        if (group == null) {
            verifyCheck(c, cs, fp, kind);
        }
        NcclWork w;
        c.lock.lock();
        try {
            c.ensureOpen();
            long s = ++c.seq;
            w = newWork(c, kind, s, type, count, sh, op, root, cs, blocking, captured);
            if (group != null) {
                group.addChecked(c, w, cs, fp, () -> deferredCall(c, w, kind, sp, rp, count, type, op, root, sh));
                return w;
            }
            arm(c, w, callNative(c, kind, s, sp, rp, count, type, op, root, sh));
        } finally {
            c.lock.unlock();
        }
        return handOver(c, w, blocking);
    }

    /** JCCL_CHECK: compares this rank's fingerprint of collective {@code cs} with every other rank's. */
    static void verifyCheck(NcclCommunicator c, long cs, byte[] fp, int kind) {
        try {
            verifyCheck0(c, cs, fp, kind);
        } catch (CollectiveTimeoutException e) {
            NcclHealth.noteFailure(c, e);
            throw e;
        }
    }

    private static void verifyCheck0(NcclCommunicator c, long cs, byte[] fp, int kind) {
        c.check.verify(cs, fp, opName(kind) + " (collective #" + cs + ") on " + c.describe(), () -> {
            if (c.state.get() == OPEN) {
                return null;
            }
            JcclException f = c.failure.get();
            return f != null ? f : new AbortedException(c.describe() + " was closed while JCCL_CHECK waited for the other ranks");
        });
    }

    /** A checked operation of a group, called by the group's close after every fingerprint matched. */
    private static void deferredCall(NcclCommunicator c, NcclWork w, int kind, long sp, long rp, long count,
                                     DataType type, ReduceOp op, int root, long sh) {
        c.lock.lock();
        try {
            c.ensureOpen();
            callNative(c, kind, w.sequence(), sp, rp, count, type, op, root, sh);
        } finally {
            c.lock.unlock();
        }
    }

    /** The native call(s) of one operation. Runs under the lock with the context current. */
    private static int call(NcclCommunicator c, int kind, long sp, long rp, long count, DataType type, int red,
                            int root, long sh) {
        int dt = type.ncclValue();
        try {
            return switch (kind) {
                // The one dispatch point of jccl's own all-reduce kernels: the tuner there picks them or NCCL.
                case ALL_REDUCE -> c.car != null && c.car.launch(sp, rp, count, type, red, sh) ? NcclLibrary.SUCCESS
                        : (int) NcclLibrary.ncclAllReduce.invokeExact(sp, rp, count, dt, red, c.comm, sh);
                case BARRIER -> (int) NcclLibrary.ncclAllReduce.invokeExact(sp, rp, count, dt, red, c.comm, sh);
                case BROADCAST -> (int) NcclLibrary.ncclBroadcast.invokeExact(sp, rp, count, dt, root, c.comm, sh);
                case REDUCE -> (int) NcclLibrary.ncclReduce.invokeExact(sp, rp, count, dt, red, root, c.comm, sh);
                case ALL_GATHER -> (int) NcclLibrary.ncclAllGather.invokeExact(sp, rp, count, dt, c.comm, sh);
                case REDUCE_SCATTER -> (int) NcclLibrary.ncclReduceScatter.invokeExact(sp, rp, count, dt, red, c.comm, sh);
                case SEND -> (int) NcclLibrary.ncclSend.invokeExact(sp, count, dt, root, c.comm, sh);
                case RECV -> (int) NcclLibrary.ncclRecv.invokeExact(rp, count, dt, root, c.comm, sh);
                case ALL_TO_ALL -> allToAllCall(c, sp, rp, count, type, sh);
                case GATHER -> gatherCall(c, sp, rp, count, type, root, sh);
                case SCATTER -> scatterCall(c, sp, rp, count, type, root, sh);
                default -> throw new IllegalStateException("unknown op " + kind);
            };
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static boolean nativeA2A(NcclCommunicator c) {
        return !c.forceSendRecvFallback && Nccl.hasNativeAllToAll();
    }

    private static int allToAllCall(NcclCommunicator c, long sendPtr, long rp, long count, DataType type,
                                    long sh) throws Throwable {
        long block = scaled(count, type);
        long staged = sendPtr;
        if (sendPtr == rp && count > 0 && c.size() > 1) {
            // NCCL's all-to-all is out of place only: stage the input in the communicator's scratch.
            staged = scratch(c, block * c.size());
            CudaDriver.memcpyDtoDAsync(staged, sendPtr, block * c.size(), sh);
        }
        long sp = staged;
        if (nativeA2A(c)) {
            return (int) NcclLibrary.ncclAlltoAll.invokeExact(sp, rp, count, type.ncclValue(), c.comm, sh);
        }
        return grouped(() -> {
            for (int p = 0; p < c.size(); p++) {
                if (p == c.rank()) {
                    if (block > 0 && sp != rp) {
                        CudaDriver.memcpyDtoDAsync(rp + p * block, sp + p * block, block, sh);
                    }
                    continue;
                }
                int r = (int) NcclLibrary.ncclSend.invokeExact(sp + p * block, count, type.ncclValue(), p, c.comm, sh);
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                    return r;
                }
                r = (int) NcclLibrary.ncclRecv.invokeExact(rp + p * block, count, type.ncclValue(), p, c.comm, sh);
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                    return r;
                }
            }
            return NcclLibrary.SUCCESS;
        });
    }

    private static int gatherCall(NcclCommunicator c, long sp, long rp, long count, DataType type, int root,
                                  long sh) throws Throwable {
        if (nativeA2A(c)) {
            return (int) NcclLibrary.ncclGather.invokeExact(sp, rp, count, type.ncclValue(), root, c.comm, sh);
        }
        long block = scaled(count, type);
        return grouped(() -> {
            if (c.rank() != root) {
                return (int) NcclLibrary.ncclSend.invokeExact(sp, count, type.ncclValue(), root, c.comm, sh);
            }
            for (int p = 0; p < c.size(); p++) {
                if (p == c.rank()) {
                    if (block > 0 && sp != rp + p * block) {
                        CudaDriver.memcpyDtoDAsync(rp + p * block, sp, block, sh);
                    }
                    continue;
                }
                int r = (int) NcclLibrary.ncclRecv.invokeExact(rp + p * block, count, type.ncclValue(), p, c.comm, sh);
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                    return r;
                }
            }
            return NcclLibrary.SUCCESS;
        });
    }

    private static int scatterCall(NcclCommunicator c, long sp, long rp, long count, DataType type, int root,
                                   long sh) throws Throwable {
        if (nativeA2A(c)) {
            return (int) NcclLibrary.ncclScatter.invokeExact(sp, rp, count, type.ncclValue(), root, c.comm, sh);
        }
        long block = scaled(count, type);
        return grouped(() -> {
            if (c.rank() != root) {
                return (int) NcclLibrary.ncclRecv.invokeExact(rp, count, type.ncclValue(), root, c.comm, sh);
            }
            for (int p = 0; p < c.size(); p++) {
                if (p == c.rank()) {
                    if (block > 0 && rp != sp + p * block) {
                        CudaDriver.memcpyDtoDAsync(rp, sp + p * block, block, sh);
                    }
                    continue;
                }
                int r = (int) NcclLibrary.ncclSend.invokeExact(sp + p * block, count, type.ncclValue(), p, c.comm, sh);
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
    private static long scratch(NcclCommunicator c, long bytes) {
        if (c.scratch == null || c.scratch.byteSize() < bytes) {
            if (c.scratch != null) {
                // A stream may still read the old area: keep it until the communicator closes.
                c.retiredScratch.add(c.scratch);
            }
            c.scratch = c.device.allocate(DataType.UINT8, bytes);
        }
        return c.scratch.rawPointer();
    }

    /** The ncclRedOp_t for {@code op} on {@code type}; PreMulSum operators are created once per (type, scalar). */
    private static int redOp(NcclCommunicator c, ReduceOp op, DataType type) {
        if (op.kind() != ReduceOp.Kind.PREMUL_SUM) {
            return op.kind().ncclValue();
        }
        long key = Double.doubleToLongBits(op.scalar()) * 31 + type.ordinal();
        Integer cached = c.preMulOps.get(key);
        if (cached != null) {
            return cached;
        }
        MemorySegment s = c.lockedScratch;
        s.fill((byte) 0);
        NumberFormats.put(s.asSlice(8), type, 0, op.scalar());
        int r;
        try {
            r = (int) NcclLibrary.ncclRedOpCreatePreMulSum.invokeExact(s, s.asSlice(8), type.ncclValue(),
                    NcclLibrary.SCALAR_HOST_IMMEDIATE, c.comm);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r != NcclLibrary.SUCCESS) {
            throw new NcclException("ncclRedOpCreatePreMulSum(" + op.scalar() + ", " + type + ") on " + c.describe(), r,
                    NcclLibrary.errorString(r), NcclLibrary.lastError(c.comm));
        }
        int id = s.get(JAVA_INT, 0);
        if (c.preMulOps.size() >= 64) {
            destroyPreMulOps(c);
        }
        c.preMulOps.put(key, id);
        return id;
    }

    static void destroyPreMulOps(NcclCommunicator c) {
        for (int id : c.preMulOps.values()) {
            try {
                int r = (int) NcclLibrary.ncclRedOpDestroy.invokeExact(id, c.comm);
                if (r != NcclLibrary.SUCCESS) {
                    LOG.warn(c.rank(), "ncclRedOpDestroy returned " + NcclLibrary.resultName(r));
                }
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }
        c.preMulOps.clear();
    }

    /** Waits (under the lock) until NCCL has finished enqueueing a nonblocking call. */
    private static void waitNotInProgress(NcclCommunicator c, NcclWork w) {
        org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
        while (true) {
            if (c.state.get() != OPEN) {
                throw c.failureFor(w, c.closedCause());
            }
            int s = NcclLibrary.asyncError(c.comm, c.lockedScratch);
            if (s == NcclLibrary.SUCCESS) {
                return;
            }
            if (s != NcclLibrary.IN_PROGRESS) {
                NcclException e = new NcclException("nccl " + w.describe() + " on " + c.describe(), s,
                        NcclLibrary.errorString(s), NcclLibrary.lastError(c.comm));
                NcclHealth.abortWith(c, e); // the lock is reentrant
                throw e;
            }
            if (System.nanoTime() - w.deadline > 0) {
                CollectiveTimeoutException e = NcclHealth.timeoutFor(c, w, "NCCL was still enqueueing it", List.of());
                NcclHealth.abortWith(c, e);
                throw e;
            }
            b.idle();
        }
    }

    /** Arms the works an NcclGroup issued on this communicator, once ncclGroupEnd returned. */
    static void armGroupWorks(NcclCommunicator c, List<NcclWork> works) {
        // As a single launch does, settle finished works with one query per half ring before the
        // lock when the ring looks full (else each work below would wait for the oldest, one query
        // each: a send/recv loop of more than 256 steps paid two per step).
        int room = Math.min(works.size(), WorkRing.CAPACITY);
        if (!c.ring.hasRoom(room)) {
            makeRoom(c, room);
        }
        c.lock.lock();
        try {
            if (c.state.get() != OPEN) {
                JcclException e = c.closedCause();
                for (NcclWork w : works) {
                    w.fail(c.failureFor(w, e));
                }
                throw e;
            }
            c.device.makeCurrent();
            waitNotInProgress(c, works.get(0));
            // One event per stream: a later work on the stream of an earlier one shares its event,
            // which is recorded after the whole group (send/recv pairs: one record instead of two).
            // The links are set before the first of them is published, so its completion completes them.
            int n = works.size();
            NcclWork[] firstOnStream = n == 1 ? null : new NcclWork[n];
            if (n > 1) {
                // the group's streams (usually one): the first work on each, and the last linked to it
                long[] streams = new long[n];
                NcclWork[] firsts = new NcclWork[n];
                NcclWork[] lasts = new NcclWork[n];
                int k = 0;
                for (int i = 0; i < n; i++) {
                    NcclWork w = works.get(i);
                    if (w.captured) {
                        continue;
                    }
                    int j = 0;
                    while (j < k && streams[j] != w.streamHandle()) {
                        j++;
                    }
                    if (j == k) {
                        streams[k] = w.streamHandle();
                        firsts[k] = w;
                        lasts[k++] = w;
                    } else {
                        firstOnStream[i] = firsts[j];
                        lasts[j].sharer = w;
                        lasts[j] = w;
                    }
                }
            }
            for (int i = 0; i < n; i++) {
                NcclWork w = works.get(i);
                NcclWork first = firstOnStream == null ? null : firstOnStream[i];
                if (first == null) {
                    armInRing(c, w);
                } else {
                    armSharedInRing(c, w, first);
                }
            }
        } catch (JcclException e) {
            for (NcclWork w : works) {
                w.fail(c.failureFor(w, e));
            }
            throw e;
        } finally {
            c.lock.unlock();
        }
        Watchdog.wake();
    }

    private static void noteLaunch(NcclCommunicator c, long now) {
        if (now - c.lastLaunch > LAUNCH_STAMP_NANOS) {
            c.lastLaunch = now;
        }
    }

    static long callBudgetNanos(NcclCommunicator c) {
        Duration t = c.callTimeout;
        return (t == null ? c.timeout() : t).toNanos();
    }
}
