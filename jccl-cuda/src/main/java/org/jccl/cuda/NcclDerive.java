package org.jccl.cuda;

import static org.jccl.cuda.NcclCommunicator.LOG;
import static org.jccl.cuda.NcclCommunicator.OPEN;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import org.jccl.InvalidUsageException;
import org.jccl.spi.Liveness;

/**
 * The communicators derived from an {@link NcclCommunicator}: split and ncclCommShrink make the
 * child from the parent's control communicator ({@link #derive}, through {@link NcclInit#make}
 * like every other NCCL communicator); a shrink after a failure, or on an NCCL without
 * ncclCommShrink, makes a fresh one for the survivors ({@link #shrinkTo}). A child gets its own
 * part of the store's key space, a share of its parent's store and the heartbeat watch of its
 * members.
 */
final class NcclDerive {
    private NcclDerive() {
    }

    /**
     * The child of {@code c} that {@code call} (ncclCommSplit or ncclCommShrink of its control
     * communicator) makes; null when this rank gets none (NO_COLOR, or excluded).
     */
    static NcclCommunicator derive(NcclCommunicator c, String what, String checkTag, NcclInit.Start call) {
        // The child reads its settings (JCCL_CHECK, JCCL_TRACE_*) as the parent did: with the parent's own bound.
        return org.jccl.internal.Settings.with(c.settings, () -> {
            double warmup = org.jccl.internal.WarmupSetting.seconds(); // a bad JCCL_WARMUP fails before NCCL starts
            NcclCommunicator child = deriveWithSettings(c, what, checkTag, call);
            if (child != null) {
                warm(child, warmup);
            }
            return child;
        });
    }

    /**
     * The JIT warm-up of a new child (collective over the child's ranks), outside the parent's lock:
     * in a JVM whose warm-ups are done it is one block. On failure the child is aborted and closed.
     */
    private static void warm(NcclCommunicator child, double seconds) {
        try {
            NcclWarmup.atCreation(child, seconds);
        } catch (RuntimeException | Error e) {
            child.abort();
            child.close();
            throw e;
        }
    }

    private static NcclCommunicator deriveWithSettings(NcclCommunicator c, String what, String checkTag, NcclInit.Start call) {
        if (NcclGroup.current() != null) {
            throw new InvalidUsageException(what + " inside an NcclGroup is not supported: close the group first");
        }
        c.ensureNotClosed();
        // Every member of the parent derives in the same order, so this number names the child on every rank.
        String tag = "d" + (++c.derived) + checkTag;
        Arena childArena = Arena.ofShared();
        NcclInit.Making m = null;
        boolean ok = false;
        c.lock.lock();
        try {
            c.ensureOpen();
            String on = what + " on " + c.describe();
            // NCCL writes the new handle only when the split completes, from its own thread: the slot
            // lives in this communicator's arena, which outlives any abort of this communicator.
            m = new NcclInit.Making(c.device, childArena, c.rank(), c.size(), on, on, c.arena.allocate(8, 8));
            if (!NcclInit.make(new NcclInit.Making[] {m}, false, call, c, c.timeout())) {
                return null; // NO_COLOR, or excluded
            }
            // A parent that opened its GPU closes it with itself: the child then holds its own handle.
            CudaDevice childDevice = c.ownsDevice ? CudaDevice.open(c.device.ordinal()) : c.device;
            NcclCommunicator child = new NcclCommunicator(childDevice, c.ownsDevice, m.ctl, m.data, m.rank, m.size,
                    c.timeout(), m.name, childArena, c.store == null ? null : c.store.retain(), c.jobStore,
                    c.scope + "/" + tag);
            child.watch = childWatch(c, c.scope + "/" + tag, m.rank, m.size);
            ok = true;
            return child;
        } catch (RuntimeException | Error e) {
            if (m != null) {
                m.abort();
            }
            throw e;
        } finally {
            c.lock.unlock();
            if (!ok) {
                childArena.close();
            }
        }
    }

    /**
     * Shrinks to the survivors of {@code excluded} (the same set on every survivor, checked through
     * the store when there is one): by ncclCommShrink while the communicator is healthy and NCCL
     * has it, else a fresh communicator whose ncclUniqueId the lowest survivor hands the others
     * through the store.
     */
    static NcclCommunicator shrinkTo(NcclCommunicator c, java.util.SortedSet<Integer> excluded) {
        int no;
        c.lock.lock();
        try {
            no = ++c.shrinks;
        } finally {
            c.lock.unlock();
        }
        List<Integer> survivors = new ArrayList<>();
        for (int r = 0; r < c.size(); r++) {
            if (!excluded.contains(r)) {
                survivors.add(r);
            }
        }
        if (survivors.isEmpty()) {
            throw new IllegalArgumentException("excluded holds every rank: nothing would be left");
        }
        String base = c.scope + "/shrinkto" + no + "/";
        if (c.jobStore != null) {
            org.jccl.internal.ShrinkAgreement.checkSameExclusion(c.jobStore, base, c.rank(), excluded, survivors, c.timeout());
        }
        int newRank = survivors.indexOf(c.rank());
        if (c.state.get() == OPEN && Nccl.hasShrink()) {
            LOG.info(c.rank(), () -> "shrinking " + c.describe() + " without " + excluded + " by ncclCommShrink");
            return c.shrink(excluded.stream().mapToInt(Integer::intValue).toArray());
        }
        if (c.jobStore == null) {
            throw new InvalidUsageException("shrink after a failure needs the job's store to hand a new ncclUniqueId to "
                    + "the survivors: create the communicator with Jccl.init or NcclCommunicator.create(..., store)"
                    + (Nccl.hasShrink() ? "" : " (NCCL " + Nccl.versionString() + " has no ncclCommShrink)"));
        }
        byte[] uid;
        if (newRank == 0) {
            uid = Nccl.newUniqueId();
            c.jobStore.set(base + "uid", uid);
        } else {
            uid = c.jobStore.get(base + "uid", c.timeout());
        }
        LOG.info(c.rank(), () -> "shrinking " + c.describe() + " without " + excluded + ": a new communicator, rank " + c.rank()
                + " becomes " + newRank + " of " + survivors.size());
        CudaDevice d = c.ownsDevice ? CudaDevice.open(c.device.ordinal()) : c.device;
        try {
            Liveness.Watch w = c.watch;
            // The survivors' heartbeat watch goes in before the new communicator's JIT warm-up; the new
            // communicator reads its settings (JCCL_WARMUP, JCCL_ALGO, ...) with the parent's bound, as derive's do.
            NcclCommunicator child = org.jccl.internal.Settings.with(c.settings, () -> NcclInit.create(d, c.ownsDevice,
                    newRank, survivors.size(), uid, c.timeout(), null, c.jobStore, base + "c",
                    w == null ? null : w.sub(survivors)));
            adoptStore(child, c.store);
            return child;
        } catch (RuntimeException | Error e) {
            if (c.ownsDevice) {
                d.close();
            }
            throw e;
        }
    }

    /** A shrunk child made by {@link NcclInit#create} shares its parent's store. */
    private static void adoptStore(NcclCommunicator child, SharedStore s) {
        child.adopted = s == null ? null : s.retain();
    }

    /**
     * The heartbeat watch of a communicator derived from this one: its members' ranks here, learned
     * through the store (each member posts its rank in this communicator under the child's scope).
     */
    private static Liveness.Watch childWatch(NcclCommunicator c, String childScope, int childRank, int childSize) {
        Liveness.Watch w = c.watch;
        if (w == null || c.jobStore == null) {
            return null;
        }
        try {
            c.jobStore.set(childScope + "/member/" + childRank, Integer.toString(c.rank()).getBytes(
                    java.nio.charset.StandardCharsets.US_ASCII));
            int[] members = new int[childSize];
            for (int i = 0; i < childSize; i++) {
                members[i] = Integer.parseInt(new String(c.jobStore.get(childScope + "/member/" + i, c.timeout()),
                        java.nio.charset.StandardCharsets.US_ASCII));
            }
            return w.sub(members);
        } catch (RuntimeException e) {
            LOG.warn(c.rank(), "the communicator derived from " + c.describe() + " runs without heartbeat checks: " + e);
            return null;
        }
    }
}
