package org.jccl.cuda;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * One daemon thread for every NCCL communicator of the process: polls the events of outstanding
 * asynchronous work and ncclCommGetAsyncError; past a work's deadline or on an asynchronous error
 * it aborts the communicator, which fails every pending work with the cause. It sleeps while no
 * work is outstanding, so an idle process pays nothing. Operations captured into a CUDA graph are
 * never in its rings (their events would fire only in a launch); its thread runs in CUDA's relaxed
 * capture mode so its queries cannot disturb another thread's capture.
 */
final class Watchdog implements Runnable {
    private static final long POLL_NANOS = 500_000;
    private static final long IDLE_NANOS = 1_000_000_000L;
    private static final Watchdog INSTANCE = new Watchdog();

    private final Set<NcclCommunicator> comms = ConcurrentHashMap.newKeySet();
    private final Thread thread;
    private volatile boolean sleeping;

    private Watchdog() {
        thread = new Thread(this, "jccl-nccl-watchdog");
        thread.setDaemon(true);
        thread.start();
    }

    static void register(NcclCommunicator c) {
        INSTANCE.comms.add(c);
    }

    static void unregister(NcclCommunicator c) {
        INSTANCE.comms.remove(c);
    }

    /** Called after a work was added: wakes the thread if it sleeps. */
    static void wake() {
        Watchdog w = INSTANCE;
        if (w.sleeping) {
            LockSupport.unpark(w.thread);
        }
    }

    @Override
    public void run() {
        try {
            // Another thread may capture a stream in CUDA's GLOBAL mode (PyTorch's default): this
            // thread's event queries must neither fail nor invalidate that capture.
            CudaDriver.relaxCaptureModeOfThisThread();
        } catch (RuntimeException e) {
            // Without it, captures in GLOBAL mode may fail; everything else works as before.
        }
        while (true) {
            boolean busy = false;
            for (NcclCommunicator c : comms) {
                try {
                    busy |= c.watch(System.nanoTime());
                } catch (RuntimeException | Error e) {
                    // A broken communicator must not stop the watchdog of the others.
                    c.watchdogFailed(e);
                }
            }
            if (busy) {
                LockSupport.parkNanos(POLL_NANOS);
            } else {
                sleeping = true;
                boolean any = false;
                for (NcclCommunicator c : comms) {
                    any |= c.hasPending();
                }
                if (!any) {
                    LockSupport.parkNanos(IDLE_NANOS);
                }
                sleeping = false;
            }
        }
    }
}
