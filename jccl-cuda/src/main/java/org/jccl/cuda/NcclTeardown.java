package org.jccl.cuda;

import static org.jccl.cuda.NcclCommunicator.ABORTED;
import static org.jccl.cuda.NcclCommunicator.CLOSED;
import static org.jccl.cuda.NcclCommunicator.LIVE_PER_GPU;
import static org.jccl.cuda.NcclCommunicator.LOG;
import static org.jccl.cuda.NcclCommunicator.OPEN;
import static org.jccl.cuda.NcclInit.rethrow;

import java.util.ArrayList;
import java.util.List;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;

/**
 * The teardown of {@link NcclCommunicator#close()}: outstanding work is drained with the deadline,
 * then both NCCL communicators are finalized and destroyed (or aborted, on an error, a deadline or
 * an earlier failure), pending works fail, and the communicator's CUDA resources, arena and owned
 * device are released. NCCL's part runs on a thread of its own when the process drives several
 * GPUs (see {@link LateAborts#offThread}).
 */
final class NcclTeardown {
    private NcclTeardown() {
    }

    /** {@link NcclCommunicator#close()}. */
    static void close(NcclCommunicator c) {
        int prior = c.state.getAndSet(CLOSED);
        if (prior == CLOSED) {
            return;
        }
        Watchdog.unregister(c);
        FailureWatch.unregister(c);
        boolean apart = NcclHealth.severalGpus(c);
        LIVE_PER_GPU.get(c.device.ordinal()).decrementAndGet();
        // NCCL's part of the teardown (ncclCommFinalize/Destroy or ncclCommAbort) runs on a thread of
        // its own, which then frees the arena NCCL may still read (the names) and an owned device:
        // with several GPUs in one process, the last rank to destroy a communicator frees every
        // rank's resources of it, which waits for the kernels on their GPUs, e.g. a peer's next
        // collective on another communicator that waits for this rank (LateAborts#offThread).
        Runnable nativeTeardown = () -> NcclHealth.finishNativeAbort(c);
        java.util.concurrent.CountDownLatch released = new java.util.concurrent.CountDownLatch(1);
        try {
            if (prior == ABORTED) {
                NcclHealth.awaitDelayedAbort(c); // a delayed abort may still be due: the teardown thread runs it
            }
            if (prior == OPEN) {
                c.lock.lock();
                try {
                    c.device.makeCurrent();
                    long deadline = System.nanoTime() + c.timeout().toNanos();
                    // Outstanding work must finish first: a blocking ncclCommFinalize would wait for it with no deadline.
                    if (!drainPending(c, deadline)) {
                        c.failure.compareAndSet(null, new CollectiveTimeoutException(c.describe() + " still had work running "
                                + c.timeout() + " after close(): aborted instead of finalized", List.of()));
                    } else {
                        if (c.car != null) {
                            c.car.quiesce(deadline); // no peer may still read this rank's buffer when it is freed
                        }
                        NcclSymmetric.closeAll(c, true); // drained: deregister the windows before NCCL's teardown
                        nativeTeardown = () -> {
                            c.lock.lock();
                            try {
                                finalizeAndDestroy(c, deadline);
                            } finally {
                                c.lock.unlock();
                            }
                        };
                    }
                } finally {
                    c.lock.unlock();
                }
            }
        } finally {
            Runnable nt = nativeTeardown;
            if (apart) {
                // Its own hold on the GPU's context: the caller may close its CudaDevice as soon as close()
                // returns, while NCCL's teardown still runs on that context.
                CudaDevice hold = holdContext(c);
                LateAborts.offThread("jccl-nccl-close-" + c.name, () -> {
                    runTeardown(c, nt);
                    // The communicator's stream, events and buffers, the arena and an owned device go only
                    // after NCCL's teardown, which may still use them, and after the caller's part.
                    try {
                        released.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    releaseCudaResources(c);
                    closeArenaAndDevice(c);
                    if (hold != null) {
                        hold.close();
                    }
                });
            } else {
                runTeardown(c, nt);
            }
        }
        try {
            JcclException f = c.failure.get();
            for (NcclWork w : c.ring.unfinished()) {
                if (f == null && w.isDone()) {
                    continue;
                }
                w.fail(c.failureFor(w, f != null ? f : new AbortedException(c.describe() + " was closed")));
            }
        } finally {
            try {
                NcclSymmetric.closeAll(c, false); // windows left (aborted, or timed out): NCCL's teardown drops them
                releaseHostResources(c);
                if (!apart) {
                    releaseCudaResources(c); // NCCL's teardown has run on this thread
                }
            } finally {
                released.countDown();
                if (!apart) {
                    closeArenaAndDevice(c);
                }
            }
        }
    }

    private static void runTeardown(NcclCommunicator c, Runnable nativeTeardown) {
        try {
            nativeTeardown.run();
        } catch (RuntimeException | Error e) {
            LOG.warn(c.rank(), "closing the NCCL communicators of " + c.describe() + " failed: " + e);
        }
    }

    /** ncclCommFinalize and ncclCommDestroy of both NCCL communicators (aborted instead on error or deadline). */
    private static void finalizeAndDestroy(NcclCommunicator c, long deadline) {
        try {
            c.device.makeCurrent();
        } catch (RuntimeException e) {
            // a caller's device closed meanwhile: NCCL sets its own device for what follows
        }
        if (!c.nativeAborted.compareAndSet(false, true)) {
            NcclHealth.finishNativeAbort(c); // aborted meanwhile (cannot happen once closed; kept safe): wait for it
            return;
        }
        c.nativeAbortDone.countDown(); // finalized or aborted here: a late nativeAbort must not touch the handles
        try {
            NcclLaunch.destroyPreMulOps(c);
            boolean clean = finalizeOne(c, c.comm, deadline);
            if (clean) {
                destroyOne(c, c.comm);
                if (c.ctl != c.comm) {
                    if (finalizeOne(c, c.ctl, deadline)) {
                        destroyOne(c, c.ctl);
                    } else {
                        NcclInit.abortQuietly(c.ctl);
                    }
                }
            } else {
                NcclHealth.abortHandles(c);
            }
        } catch (RuntimeException | Error e) {
            NcclHealth.abortHandles(c);
            throw e;
        }
    }

    /** Waits (polling, until {@code deadline}) for every pending work; false when some did not finish. */
    private static boolean drainPending(NcclCommunicator c, long deadline) {
        org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
        for (NcclWork w : c.ring.unfinished()) {
            while (!w.isFinished() && !w.pollEvent()) {
                if (System.nanoTime() - deadline > 0) {
                    return false;
                }
                b.idle();
            }
        }
        return true;
    }

    /** ncclCommFinalize, then polls until NCCL has flushed; false on error or deadline. */
    private static boolean finalizeOne(NcclCommunicator c, long h, long deadline) {
        int r;
        try {
            r = (int) NcclLibrary.ncclCommFinalize.invokeExact(h);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r != NcclLibrary.SUCCESS && r != NcclLibrary.IN_PROGRESS) {
            LOG.warn(c.rank(), "ncclCommFinalize returned " + NcclLibrary.resultName(r) + ": aborting instead");
            return false;
        }
        org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
        while (true) {
            int s = NcclLibrary.asyncError(h, c.lockedScratch);
            if (s == NcclLibrary.SUCCESS) {
                return true;
            }
            if (s != NcclLibrary.IN_PROGRESS || System.nanoTime() - deadline > 0) {
                c.failure.compareAndSet(null, new CollectiveTimeoutException(c.describe() + " could not finalize within "
                        + c.timeout() + " (NCCL state " + NcclLibrary.resultName(s) + "): aborted instead", List.of()));
                return false;
            }
            b.idle();
        }
    }

    private static void destroyOne(NcclCommunicator c, long h) {
        int d;
        try {
            d = (int) NcclLibrary.ncclCommDestroy.invokeExact(h);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (d != NcclLibrary.SUCCESS) {
            LOG.warn(c.rank(), "ncclCommDestroy returned " + NcclLibrary.resultName(d));
        }
    }

    /** A retain of the communicator's GPU context for its teardown thread, or null when CUDA refuses one now. */
    private static CudaDevice holdContext(NcclCommunicator c) {
        try {
            return CudaDevice.open(c.device.ordinal());
        } catch (RuntimeException e) {
            LOG.warn(c.rank(), "closing " + c.describe() + " without its own hold on GPU " + c.device.ordinal() + ": " + e);
            return null;
        }
    }

    /** The communicator's shares of its job's store. */
    private static void releaseHostResources(NcclCommunicator c) {
        if (c.store != null) {
            c.store.release(c.rank());
        }
        if (c.adopted != null) {
            c.adopted.release(c.rank());
        }
    }

    /** The communicator's stream, events and device buffers: only once NCCL's teardown is over. */
    private static void releaseCudaResources(NcclCommunicator c) {
        if (c.car != null) {
            c.car.close();
        }
        List<AutoCloseable> toClose = new ArrayList<>();
        if (c.barrierBuffer != null) {
            toClose.add(c.barrierBuffer);
        }
        if (c.scratch != null) {
            toClose.add(c.scratch);
        }
        toClose.addAll(c.retiredScratch);
        toClose.add(c.stream);
        for (AutoCloseable r : toClose) {
            try {
                r.close();
            } catch (Exception e) {
                LOG.warn(c.rank(), "closing " + r + " failed: " + e);
            }
        }
        for (CudaEvent e : c.ring.allEvents()) {
            try {
                if (!c.device.isClosed()) {
                    c.device.makeCurrent();
                    e.destroyPooled();
                }
            } catch (RuntimeException ex) {
                LOG.warn(c.rank(), "destroying " + e + " failed: " + ex);
            }
        }
        c.ring.clearEvents();
    }

    /** The last of close(): on its teardown thread, after NCCL's teardown and the communicator's resources. */
    private static void closeArenaAndDevice(NcclCommunicator c) {
        try {
            c.arena.close();
        } catch (RuntimeException e) {
            LOG.warn(c.rank(), "closing the arena of " + c.describe() + " failed: " + e);
        }
        if (c.ownsDevice) {
            c.device.close();
        }
    }
}
