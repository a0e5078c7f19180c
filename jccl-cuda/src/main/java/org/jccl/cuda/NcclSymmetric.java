package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.jccl.cuda.NcclCommunicator.LOG;
import static org.jccl.cuda.NcclCommunicator.OPEN;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.ReduceOp;

/**
 * NCCL symmetric memory: ncclMemAlloc / ncclMemFree for {@link CudaDevice#allocateSymmetric}, and
 * the windows of {@link NcclCommunicator#register} (ncclCommWindowRegister / Deregister, NCCL 2.27+).
 *
 * <p>Registration is collective: NCCL exchanges the ranks' memory handles inside the call, so on
 * jccl's blocking data communicator the call waits, inside NCCL, for every rank's, and no deadline
 * can end that wait safely (ncclCommAbort while a thread is inside the call frees what it uses). So
 * every rank first meets the others in an all-reduce of the window sizes, waited for with the
 * communicator's deadline like any blocking collective (a rank that never comes aborts the
 * communicator by its deadline, as for a collective, before anyone has entered NCCL's call; sizes
 * that differ are refused on every rank). Only when every rank has arrived does the caller's thread
 * enter ncclCommWindowRegister, holding the communicator's lock, so that an abort (the watchdog's,
 * another thread's) waits until the call has returned rather than freeing the communicator under it.
 * On the nonblocking communicator ({@code JCCL_NCCL_NONBLOCKING=1}) the call returns
 * ncclInProgress and is polled with the deadline instead.
 */
final class NcclSymmetric {
    private NcclSymmetric() {
    }

    /** ncclMemAlloc of {@code bytes} on the current device. */
    static long memAlloc(long bytes) {
        MemorySegment s = Scratch.get();
        int r;
        try {
            r = (int) NcclLibrary.ncclMemAlloc.invokeExact(s, bytes);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (r != NcclLibrary.SUCCESS) {
            throw new NcclException("ncclMemAlloc(" + bytes + " bytes)", r, NcclLibrary.errorString(r),
                    NcclLibrary.lastError(0));
        }
        return s.get(JAVA_LONG, 0);
    }

    /** ncclMemFree; a failure is logged (a free has no one to throw to: close() paths). */
    static void memFree(long ptr) {
        try {
            int r = (int) NcclLibrary.ncclMemFree.invokeExact(ptr);
            if (r != NcclLibrary.SUCCESS) {
                LOG.warn(-1, "ncclMemFree(0x" + Long.toHexString(ptr) + ") failed: " + NcclLibrary.resultName(r) + " "
                        + NcclLibrary.errorString(r));
            }
        } catch (Throwable t) {
            LOG.warn(-1, "ncclMemFree(0x" + Long.toHexString(ptr) + ") failed: " + t);
        }
    }

    /** {@link NcclCommunicator#register}: every check before any native call, then the size agreement, then NCCL. */
    static SymmetricWindow register(NcclCommunicator c, DeviceBuffer b) {
        String why = Nccl.symmetricMemoryUnavailableCause();
        if (why != null) {
            throw new InvalidUsageException("register: NCCL symmetric memory is not available: " + why
                    + "; collectives take ordinary device buffers without registration");
        }
        Objects.requireNonNull(b, "buffer");
        c.ensureOpen();
        if (NcclGroup.current() != null) {
            throw new InvalidUsageException("register inside an NcclGroup: registration is collective and waits for "
                    + "every rank, which a group defers to its end; register before opening the group");
        }
        if (b.device().ordinal() != c.device.ordinal()) {
            throw new IllegalArgumentException("buffer " + b + " lives on GPU " + b.device().ordinal() + " but "
                    + c.describe() + " runs on GPU " + c.device.ordinal() + ": register it with that GPU's communicator");
        }
        b.checkLive();
        if (!b.isSymmetric()) {
            throw new IllegalArgumentException("buffer " + b + " is not symmetric memory: NCCL windows need its "
                    + "allocator; allocate the buffer with CudaDevice.allocateSymmetric(type, count)");
        }
        if (!b.ownsMemory()) {
            throw new IllegalArgumentException("buffer " + b + " is a slice or view: register the whole buffer that "
                    + "allocateSymmetric returned (collectives may then use slices of it)");
        }
        if (b.byteSize() == 0) {
            throw new IllegalArgumentException("buffer " + b + " has 0 bytes: there is nothing to register");
        }
        for (SymmetricWindow w : c.windows) {
            if (w.isOpen() && w.buffer.sameAllocation(b)) {
                throw new IllegalArgumentException("buffer " + b + " is already registered with " + c.describe()
                        + " (" + w + "): use that window, or close it first");
            }
        }
        if (c.comm == c.ctl) {
            // Seen on 2x H100 with NCCL 2.28.3 (2026-11-27): on the nonblocking communicator the call
            // completed without error but made no window. Refused before any native call instead.
            throw new InvalidUsageException("register on " + c.describe() + ": symmetric windows work on jccl's default "
                    + "(blocking) data communicator; with JCCL_NCCL_NONBLOCKING=1 NCCL " + Nccl.versionString()
                    + " made no window: unset JCCL_NCCL_NONBLOCKING to use symmetric memory");
        }
        agreeOnSize(c, b.byteSize());
        b.windowOpened();
        SymmetricWindow w = null;
        try {
            long win = windowRegister(c, b);
            if (win == 0) {
                throw new InvalidUsageException("NCCL " + Nccl.versionString() + " made no symmetric window on "
                        + c.describe() + ": the communicator has no symmetric memory support (NCCL needs every rank "
                        + "in one NVLink domain, each GPU with direct NVLink to every other, and CUDA virtual memory, "
                        + "NCCL_CUMEM_ENABLE not 0); collectives take this buffer as ordinary device memory");
            }
            w = new SymmetricWindow(c, b, win);
            c.windows.add(w);
            if (c.state.get() != OPEN) {
                deregister(w); // closed or aborted meanwhile: its teardown may have missed this window
                c.ensureOpen();
            }
            SymmetricWindow made = w;
            LOG.info(c.rank(), () -> "registered " + made);
            return w;
        } finally {
            if (w == null) {
                b.windowClosed();
            }
        }
    }

    /**
     * Every rank meets here with the communicator's deadline and learns that all registered the same
     * size: an all-reduce (MAX) of {@code bytes, -bytes}.
     */
    private static void agreeOnSize(NcclCommunicator c, long bytes) {
        long[] v = {bytes, -bytes};
        try (DeviceBuffer sizes = c.device.allocate(DataType.INT64, 2)) {
            sizes.copyFrom(HostBuffer.of(v));
            NcclLaunch.launch(c, NcclCommunicator.ALL_REDUCE, sizes, sizes, 2, DataType.INT64, ReduceOp.MAX, 0, null,
                    true).await();
            sizes.copyTo(HostBuffer.of(v));
        }
        long largest = v[0];
        long smallest = -v[1];
        if (largest != bytes || smallest != bytes) {
            throw new IllegalArgumentException("register: the ranks of " + c.describe() + " register different sizes ("
                    + smallest + " to " + largest + " bytes; this rank " + bytes + "): a symmetric window has the same "
                    + "size on every rank, so allocate the same count and type everywhere");
        }
    }

    /**
     * Refuses an all-gather ({@code perRank} = its send size) or reduce-scatter ({@code perRank} = its
     * recv size) whose gathered or scattered buffer lies in a window of {@code c} when the per-rank
     * size is not a multiple of 16 bytes: NCCL 2.28.3's symmetric all-gather returned wrong data
     * there (4099 floats per rank on 2x H100, 2026-11-27: rank 1's part shifted by one element),
     * while 4 bytes per rank came out right), and reduce-scatter's symmetric kernels were not
     * verified at such sizes; no fixed NCCL version is known, so every version is checked. A no-op
     * while the communicator has no window (one isEmpty check).
     */
    static void checkUnaligned(NcclCommunicator c, String what, DeviceBuffer windowed, long perRank) {
        if (c.windows.isEmpty() || perRank % 16 == 0) {
            return;
        }
        for (SymmetricWindow w : c.windows) {
            if (w.isOpen() && w.buffer.sameAllocation(windowed)) {
                throw new IllegalArgumentException(what + " of " + perRank + " bytes per rank on a symmetric window: NCCL "
                        + Nccl.versionString() + "'s symmetric kernels gave wrong results when the per-rank size is not a "
                        + "multiple of 16 bytes; pad the count to a multiple of 16 bytes, or use a buffer outside the window");
            }
        }
    }

    /** ncclCommWindowRegister on the caller's thread; 0 when NCCL made no window. */
    private static long windowRegister(NcclCommunicator c, DeviceBuffer b) {
        // The out-parameter lives with the communicator: a nonblocking NCCL writes it when the call completes.
        MemorySegment out = c.arena.allocate(JAVA_LONG);
        out.set(JAVA_LONG, 0, 0L);
        long deadline = System.nanoTime() + c.timeout().toNanos();
        boolean nonblocking = c.comm == c.ctl;
        int r;
        c.lock.lock();
        try {
            c.ensureOpen();
            c.device.makeCurrent();
            r = (int) NcclLibrary.ncclCommWindowRegister.invokeExact(c.comm, b.rawPointer(), b.byteSize(), out,
                    NcclLibrary.WIN_COLL_SYMMETRIC);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        } finally {
            c.lock.unlock();
        }
        if (r == NcclLibrary.IN_PROGRESS && nonblocking) {
            r = awaitNonblocking(c, "ncclCommWindowRegister", deadline);
        }
        if (r != NcclLibrary.SUCCESS) {
            NcclException e = new NcclException("ncclCommWindowRegister(" + b.byteSize() + " bytes) on " + c.describe(),
                    r, NcclLibrary.errorString(r), NcclLibrary.lastError(c.comm));
            // Other ranks may have registered: a communicator whose ranks disagree about a window could
            // hang in its next collective, so it is aborted (the others fail by their deadline).
            NcclHealth.abortWith(c, e);
            throw e;
        }
        return out.get(JAVA_LONG, 0);
    }

    /** Polls a nonblocking communicator until its pending call completes, aborting it at the deadline. */
    private static int awaitNonblocking(NcclCommunicator c, String what, long deadline) {
        MemorySegment s = c.arena.allocate(8, 8);
        org.jccl.spi.TimedIdleStrategy idle = CudaDevice.gpuWait();
        while (true) {
            int r = NcclLibrary.asyncError(c.comm, s);
            if (r != NcclLibrary.IN_PROGRESS) {
                return r;
            }
            if (System.nanoTime() - deadline > 0) {
                CollectiveTimeoutException e = new CollectiveTimeoutException(what + " on " + c.describe()
                        + " did not complete within " + c.timeout() + ": a rank did not register", java.util.List.of());
                NcclHealth.abortWith(c, e);
                throw e;
            }
            idle.idle();
        }
    }

    /** {@link SymmetricWindow#close()}. */
    static void deregister(SymmetricWindow w) {
        NcclCommunicator c = w.comm;
        synchronized (w) {
            if (!w.open.get()) {
                return;
            }
            if (c.state.get() == OPEN) {
                // No kernel may still reach peers through the window when NCCL unmaps them.
                c.device.synchronize(c.timeout());
                c.lock.lock();
                try {
                    if (c.state.get() == OPEN) {
                        nativeDeregister(c, w);
                    }
                } finally {
                    c.lock.unlock();
                }
            }
            closed(w);
        }
    }

    /**
     * The communicator closes: its windows are deregistered ({@code nativeToo}: the communicator is
     * healthy and drained; else only marked closed, NCCL's abort releases them) and buffers closed
     * meanwhile go back to NCCL. Idempotent.
     */
    static void closeAll(NcclCommunicator c, boolean nativeToo) {
        for (SymmetricWindow w : c.windows) {
            synchronized (w) {
                if (!w.open.get()) {
                    continue;
                }
                if (nativeToo) {
                    try {
                        c.device.makeCurrent();
                        nativeDeregister(c, w);
                    } catch (RuntimeException e) {
                        LOG.warn(c.rank(), "deregistering " + w + " at close failed: " + e);
                    }
                }
                closed(w);
            }
        }
    }

    private static void closed(SymmetricWindow w) {
        w.open.set(false);
        w.comm.windows.remove(w);
        w.buffer.windowClosed();
    }

    /** ncclCommWindowDeregister; the caller holds the communicator's lock. */
    private static void nativeDeregister(NcclCommunicator c, SymmetricWindow w) {
        int r;
        try {
            r = (int) NcclLibrary.ncclCommWindowDeregister.invokeExact(c.comm, w.handle);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (r == NcclLibrary.IN_PROGRESS && c.comm == c.ctl) {
            r = awaitNonblocking(c, "ncclCommWindowDeregister", System.nanoTime() + c.timeout().toNanos());
        }
        if (r != NcclLibrary.SUCCESS) {
            throw new NcclException("ncclCommWindowDeregister on " + c.describe(), r, NcclLibrary.errorString(r),
                    NcclLibrary.lastError(c.comm));
        }
    }
}
