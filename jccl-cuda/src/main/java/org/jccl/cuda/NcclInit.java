package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.internal.Log;

/**
 * Making NCCL communicators: one rank of a job ({@link NcclCommunicator#create}), every GPU of one
 * process in one NCCL group ({@link NcclCommunicator#initAll}), and the sequence both share with the
 * split and shrink of a parent ({@link NcclDerive}): a config, the native call that starts the
 * nonblocking control communicator, the wait until it is ready, and the split of the blocking data
 * communicator ({@link #make}). Also the NCCL helpers every phase of a communicator uses
 * ({@link #abortQuietly}, {@link #rethrow}).
 */
final class NcclInit {
    private static final Log LOG = NcclCommunicator.LOG;
    private static final AtomicLong IDS = new AtomicLong();

    /**
     * Collectives on the nonblocking control communicator (slower small messages; see
     * NcclCommunicator's class comment).
     */
    static final boolean NONBLOCKING_DATA = "1".equals(org.jccl.internal.Settings.get("JCCL_NCCL_NONBLOCKING"));

    private NcclInit() {
    }

    /**
     * {@link NcclCommunicator#create}: this rank's communicator of a job; {@code store} (closed with
     * the communicator and those derived from it), {@code jobStore} and {@code watch} (the job's
     * heartbeats over its ranks, set before the JIT warm-up so that a death fails it at once) may
     * be null.
     */
    static NcclCommunicator create(CudaDevice device, boolean ownsDevice, int rank, int size, byte[] uniqueId,
                                   Duration timeout, AutoCloseable store, org.jccl.bootstrap.Store jobStore,
                                   String scope, org.jccl.spi.Liveness.Watch watch) {
        return create(device, ownsDevice, rank, size, uniqueId, timeout, store, jobStore, scope, watch, false);
    }

    /**
     * As above; {@code foreign}: some ranks are not jccl's (a torch process group's, {@link
     * TorchNccl}), so this rank makes no NCCL call they would not make: one communicator (no split
     * of a data communicator, as under {@code JCCL_NCCL_NONBLOCKING=1}), no all-reduce kernels of
     * jccl's own (their set-up is collective), no JIT warm-up collectives.
     */
    static NcclCommunicator create(CudaDevice device, boolean ownsDevice, int rank, int size, byte[] uniqueId,
                                   Duration timeout, AutoCloseable store, org.jccl.bootstrap.Store jobStore,
                                   String scope, org.jccl.spi.Liveness.Watch watch, boolean foreign) {
        Nccl.requireAvailable();
        Objects.requireNonNull(device, "device");
        NcclArgs.checkCreateArgs(rank, size, uniqueId, timeout);
        device.ensureOpen();
        CustomAllReduce.mode(org.jccl.internal.Settings.get("JCCL_ALGO")); // a bad JCCL_ALGO fails before NCCL starts
        double warmup = org.jccl.internal.WarmupSetting.seconds(); // and so does a bad JCCL_WARMUP
        Arena arena = Arena.ofShared();
        Making m = null;
        NcclCommunicator c;
        try {
            String what = "ncclCommInitRankConfig (rank " + rank + " of " + size + " on GPU " + device.ordinal() + ")";
            m = new Making(device, arena, rank, size, what, what, null);
            m.oneCommunicator = foreign;
            MemorySegment uid = arena.allocate(NcclLibrary.UNIQUE_ID_BYTES, 8);
            uid.copyFrom(MemorySegment.ofArray(uniqueId));
            make(new Making[] {m}, false,
                    (r, out, cfg) -> (int) NcclLibrary.ncclCommInitRankConfig.invokeExact(out, size, uid, r, cfg),
                    null, timeout);
            c = new NcclCommunicator(device, ownsDevice, m.ctl, m.data, rank, size, timeout, m.name, arena,
                    store == null ? null : new SharedStore(store), jobStore, scope);
        } catch (RuntimeException | Error e) {
            // Abort before the arena goes: NCCL may still write into it while a call is in progress.
            if (m != null) {
                m.abort();
            }
            arena.close();
            throw e;
        }
        if (foreign) {
            c.watch = watch;
            return c;
        }
        try {
            CustomAllReduce.attach(c); // collective: every rank of the new communicator runs it
            c.watch = watch;
            NcclWarmup.atCreation(c, warmup); // collective too
        } catch (RuntimeException | Error e) {
            c.abort();
            c.close();
            throw e;
        }
        return c;
    }

    /** {@link NcclCommunicator#initAll}: a communicator per device, initialised together in one NCCL group. */
    static List<NcclCommunicator> initAll(List<CudaDevice> devices, Duration timeout) {
        Nccl.requireAvailable();
        Objects.requireNonNull(devices, "devices");
        Objects.requireNonNull(timeout, "timeout");
        if (devices.isEmpty()) {
            throw new IllegalArgumentException("devices is empty: pass at least one CudaDevice");
        }
        for (int i = 0; i < devices.size(); i++) {
            CudaDevice d = Objects.requireNonNull(devices.get(i), "devices[" + i + "]");
            d.ensureOpen();
            for (int j = 0; j < i; j++) {
                if (devices.get(j).ordinal() == d.ordinal()) {
                    throw new IllegalArgumentException("devices[" + j + "] and devices[" + i + "] are both GPU " + d.ordinal()
                            + ": NCCL needs one rank per GPU");
                }
            }
        }
        int n = devices.size();
        CustomAllReduce.mode(org.jccl.internal.Settings.get("JCCL_ALGO")); // a bad JCCL_ALGO fails before NCCL starts
        double warmup = org.jccl.internal.WarmupSetting.seconds(); // read here: the warm-up threads do not see this thread's settings
        byte[] uniqueId = Nccl.newUniqueId();
        NcclArgs.checkCreateArgs(0, n, uniqueId, timeout);
        Arena[] arenas = new Arena[n];
        Making[] ms = new Making[n];
        List<NcclCommunicator> result = new ArrayList<>(n);
        boolean ok = false;
        try {
            MemorySegment[] uids = new MemorySegment[n];
            for (int i = 0; i < n; i++) {
                arenas[i] = Arena.ofShared();
                CudaDevice d = devices.get(i);
                ms[i] = new Making(d, arenas[i], i, n, "ncclCommInitRankConfig (rank " + i + " of " + n + " on GPU "
                        + d.ordinal() + ")", "rank " + i + " of " + n, null);
                uids[i] = arenas[i].allocate(NcclLibrary.UNIQUE_ID_BYTES, 8);
                uids[i].copyFrom(MemorySegment.ofArray(uniqueId));
            }
            make(ms, true, (r, out, cfg) -> (int) NcclLibrary.ncclCommInitRankConfig.invokeExact(out, n, uids[r], r, cfg),
                    null, timeout);
            // One process: JCCL_CHECK's exchange goes through a store in memory shared by these ranks.
            org.jccl.bootstrap.Store local = CollectiveCheck.enabledByEnv() ? new MemoryStore() : null;
            for (int i = 0; i < n; i++) {
                result.add(new NcclCommunicator(devices.get(i), false, ms[i].ctl, ms[i].data, i, n, timeout, ms[i].name,
                        arenas[i], null, local, "nccl"));
            }
            CustomAllReduce.attachAll(result);
            // One thread per communicator: NCCL collectives of one group's GPUs must be issued concurrently.
            NcclWarmup.atCreationAll(result, warmup);
            ok = true;
            return result;
        } finally {
            if (!ok) {
                for (NcclCommunicator c : result) {
                    c.abort();
                    c.close();
                }
                for (int i = result.size(); i < n; i++) {
                    if (ms[i] != null) {
                        ms[i].abort();
                    }
                    if (arenas[i] != null) {
                        arenas[i].close();
                    }
                }
            }
        }
    }

    /**
     * The native call that starts a control communicator: ncclCommInitRankConfig, or ncclCommSplit
     * or ncclCommShrink of a parent. NCCL writes the new handle into {@code out}.
     */
    interface Start {
        int call(int rank, MemorySegment out, MemorySegment cfg) throws Throwable;
    }

    /**
     * One rank's communicator while it is made: its GPU, arena, commName and ncclConfig_t, the slot
     * NCCL writes the control handle into, its rank and size in the new communicator, and the
     * handles made so far (0 until then), which {@link #abort} aborts when making it fails.
     */
    static final class Making {
        final CudaDevice device;
        final Arena arena;
        final String name;
        final MemorySegment cfg;
        final MemorySegment out;
        /** Names the rank in the errors of its native call and its waits. */
        final String what;
        /** Names the rank in the errors of its data split. */
        final String splitWhat;
        /** Collectives on the control communicator: no data split (a foreign communicator's). */
        boolean oneCommunicator;
        MemorySegment scratch;
        int rank;
        int size;
        long ctl;
        long data;

        /** {@code out}: the slot for the control handle, or null for one in {@code arena}. */
        Making(CudaDevice device, Arena arena, int rank, int size, String what, String splitWhat, MemorySegment out) {
            this.device = device;
            this.arena = arena;
            this.name = commName(rank);
            MemorySegment cname = arena.allocateFrom(name);
            this.cfg = arena.allocate(NcclLibrary.CONFIG_SIZE + 8, 8);
            NcclLibrary.fillConfig(cfg, cname);
            this.out = out != null ? out : arena.allocate(8, 8);
            this.rank = rank;
            this.size = size;
            this.what = what;
            this.splitWhat = splitWhat;
        }

        /** Aborts the handles made so far (the caller then closes the arena). */
        void abort() {
            if (data != 0 && data != ctl) {
                abortQuietly(data);
            }
            abortQuietly(ctl);
        }
    }

    /**
     * The one sequence that makes NCCL communicators, for create, initAll and the split or shrink
     * of a parent, with the deadline {@code timeout} from now: for each rank, the native call
     * {@code start} with its config and its GPU current; the wait until its control communicator
     * is ready; then the split of its data communicator (unless {@link #NONBLOCKING_DATA}). With
     * {@code grouped} (initAll) the starts run in one NCCL group and the data splits in another.
     * With a {@code parent}, the parent is waited for first (NCCL writes the new handle only when
     * the split completes) and the new rank and size are read from the new communicator. On
     * failure it throws, leaving in {@code ms} the handles made so far for the caller to abort.
     *
     * @return false when a parent's split gave this rank no communicator (NO_COLOR, or excluded)
     */
    static boolean make(Making[] ms, boolean grouped, Start start, NcclCommunicator parent, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        int n = ms.length;
        if (grouped) {
            groupStart();
        }
        int firstError = NcclLibrary.SUCCESS;
        int ge = NcclLibrary.SUCCESS;
        try {
            for (Making m : ms) {
                m.device.makeCurrent();
                int r;
                try {
                    r = start.call(m.rank, m.out, m.cfg);
                } catch (Throwable t) {
                    throw rethrow(t);
                }
                if (parent == null) {
                    m.ctl = m.out.get(JAVA_LONG, 0);
                }
                if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
                    if (!grouped) {
                        throw new NcclException(m.what, r, NcclLibrary.errorString(r),
                                NcclLibrary.lastError(parent == null ? m.ctl : parent.ctl));
                    }
                    if (firstError == NcclLibrary.SUCCESS) {
                        firstError = r;
                    }
                }
            }
        } finally {
            // a group left open would swallow this thread's next NCCL calls
            if (grouped) {
                ge = NcclLibrary.groupEnd();
            }
        }
        if (grouped) {
            if (firstError != NcclLibrary.SUCCESS || (ge != NcclLibrary.SUCCESS && ge != NcclLibrary.IN_PROGRESS)) {
                int r = firstError != NcclLibrary.SUCCESS ? firstError : ge;
                throw new NcclException("ncclCommInitRankConfig of " + n + " GPUs in a group", r, NcclLibrary.errorString(r),
                        NcclLibrary.lastError(0));
            }
        }
        for (Making m : ms) {
            if (parent != null) {
                try {
                    awaitReady(parent.ctl, deadline, timeout, m.what, parent.lockedScratch);
                } catch (JcclException e) {
                    // the parent is stuck or broken; aborting also stops NCCL writing `out`
                    NcclHealth.abortWith(parent, e);
                    throw e;
                }
                m.ctl = m.out.get(JAVA_LONG, 0);
                if (m.ctl == 0) {
                    return false; // NO_COLOR, or excluded
                }
            }
            m.scratch = m.arena.allocate(8, 8);
            awaitReady(m.ctl, deadline, timeout, m.what, m.scratch);
            if (parent != null) {
                try {
                    check((int) NcclLibrary.ncclCommUserRank.invokeExact(m.ctl, m.scratch), "ncclCommUserRank");
                    m.rank = m.scratch.get(JAVA_INT, 0);
                    check((int) NcclLibrary.ncclCommCount.invokeExact(m.ctl, m.scratch), "ncclCommCount");
                    m.size = m.scratch.get(JAVA_INT, 0);
                } catch (Throwable t) {
                    throw rethrow(t);
                }
            }
        }
        if (NONBLOCKING_DATA || ms[0].oneCommunicator) {
            for (Making m : ms) {
                m.data = m.ctl;
            }
            return true;
        }
        MemorySegment[] outs = new MemorySegment[n];
        if (grouped) {
            groupStart();
        }
        int g = NcclLibrary.SUCCESS;
        try {
            for (int i = 0; i < n; i++) {
                Making m = ms[i];
                outs[i] = m.arena.allocate(8, 8);
                m.device.makeCurrent();
                startDataSplit(m.ctl, m.rank, m.arena, m.name, outs[i]);
            }
        } finally {
            if (grouped) {
                g = NcclLibrary.groupEnd();
            }
        }
        if (g != NcclLibrary.SUCCESS && g != NcclLibrary.IN_PROGRESS) {
            throw new NcclException("ncclCommSplit of " + n + " data communicators in a group", g,
                    NcclLibrary.errorString(g), NcclLibrary.lastError(0));
        }
        for (int i = 0; i < n; i++) {
            Making m = ms[i];
            finishDataSplit(m, outs[i], deadline, timeout);
        }
        return true;
    }

    private static void groupStart() {
        int gs = NcclLibrary.groupStart();
        if (gs != NcclLibrary.SUCCESS) {
            throw new NcclException("ncclGroupStart", gs, NcclLibrary.errorString(gs), NcclLibrary.lastError(0));
        }
    }

    /** Issues ncclCommSplit(ctl, color 0, key) for a blocking data communicator sharing ctl's resources. */
    private static void startDataSplit(long ctl, int key, Arena arena, String name, MemorySegment out) {
        MemorySegment cname = arena.allocateFrom(name + "-data");
        MemorySegment cfg = arena.allocate(NcclLibrary.CONFIG_SIZE + 8, 8);
        NcclLibrary.fillConfig(cfg, cname, true, true);
        out.set(JAVA_LONG, 0, 0L);
        int r;
        try {
            r = (int) NcclLibrary.ncclCommSplit.invokeExact(ctl, 0, key, out, cfg);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
            throw new NcclException("ncclCommSplit of the data communicator", r, NcclLibrary.errorString(r),
                    NcclLibrary.lastError(ctl));
        }
    }

    /**
     * Waits for the data split issued by {@link #startDataSplit}; NCCL sets the new handle only when
     * done. The handle goes into {@code m} before the wait for it to be ready, so that a failed wait
     * leaves it for {@link Making#abort} instead of leaking it.
     */
    private static void finishDataSplit(Making m, MemorySegment out, long deadline, Duration timeout) {
        awaitReady(m.ctl, deadline, timeout, m.splitWhat + " splitting its data communicator", m.scratch);
        long data = out.get(JAVA_LONG, 0);
        if (data == 0) {
            throw new JcclException(m.splitWhat + ": ncclCommSplit returned no data communicator");
        }
        m.data = data;
        awaitReady(data, deadline, timeout, m.splitWhat + " readying its data communicator", m.scratch);
    }

    static CollectiveCheck checkFor(org.jccl.bootstrap.Store store, String prefix, int rank, int size,
                                    Duration timeout) {
        if (!CollectiveCheck.enabledByEnv()) {
            return null;
        }
        if (store == null) {
            LOG.warn(rank, "JCCL_CHECK=1 is ignored for this NCCL communicator: it was made without a store (pass one to "
                    + "NcclCommunicator.create, or use Jccl.init)");
            return null;
        }
        LOG.info(rank, () -> "JCCL_CHECK=1: every collective's fingerprint is compared across ranks through the store");
        return new CollectiveCheck(store, prefix, rank, size, timeout);
    }

    private static String commName(int rank) {
        return "jccl-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet() + "-r" + rank;
    }

    /** Polls a nonblocking communicator until it leaves ncclInProgress; the caller aborts it on failure. */
    static void awaitReady(long c, long deadline, Duration timeout, String what, MemorySegment scratch) {
        org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
        while (true) {
            int s = NcclLibrary.asyncError(c, scratch);
            if (s == NcclLibrary.SUCCESS) {
                return;
            }
            if (s != NcclLibrary.IN_PROGRESS) {
                throw new NcclException(what, s, NcclLibrary.errorString(s), NcclLibrary.lastError(c));
            }
            if (System.nanoTime() - deadline > 0) {
                throw new CollectiveTimeoutException(what + " did not finish within " + timeout
                        + ": not every rank joined (check that all ranks call it with the same unique id and size)",
                        List.of());
            }
            b.idle();
        }
    }

    static void abortQuietly(long c) {
        if (c == 0) {
            return;
        }
        try {
            int r = (int) NcclLibrary.ncclCommAbort.invokeExact(c);
            if (r != NcclLibrary.SUCCESS) {
                LOG.warn(-1, "ncclCommAbort returned " + NcclLibrary.resultName(r));
            }
        } catch (Throwable t) {
            LOG.warn(-1, "ncclCommAbort failed: " + t);
        }
    }

    private static void check(int r, String call) {
        if (r != NcclLibrary.SUCCESS) {
            throw new NcclException(call, r, NcclLibrary.errorString(r), "");
        }
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
