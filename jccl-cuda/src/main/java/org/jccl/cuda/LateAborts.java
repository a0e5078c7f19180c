package org.jccl.cuda;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * One daemon thread that runs the ncclCommAborts jccl delays and the failure reports it posts in
 * the store (see NcclHealth#abortWith): a report is written before the abort it precedes.
 */
final class LateAborts {
    private static final ScheduledExecutorService EXEC;

    static {
        ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "jccl-nccl-late-abort");
            t.setDaemon(true);
            return t;
        });
        e.setRemoveOnCancelPolicy(true);
        EXEC = e;
    }

    private LateAborts() {
    }

    /** Runs {@code task} soon on the same thread (store writes that must not delay the caller). */
    static java.util.concurrent.Future<?> execute(Runnable task) {
        return EXEC.submit(task);
    }

    static void schedule(Runnable abort, long delayNanos) {
        EXEC.schedule(abort, delayNanos, TimeUnit.NANOSECONDS);
    }

    /**
     * Runs an NCCL teardown (ncclCommAbort, ncclCommFinalize/Destroy) on a daemon thread of its
     * own. In a process that drives several GPUs, the last rank to destroy or abort an NCCL
     * communicator frees the resources of every rank of it in the process (commReclaim in NCCL's
     * init.cc), on their GPUs too; a free synchronizes a GPU, so it waits for whatever kernel runs
     * there, possibly another communicator's collective that waits for the calling thread. Neither
     * the caller, nor this executor, nor the watchdog may wait for that.
     */
    static void offThread(String name, Runnable task) {
        Thread t = new Thread(task, name);
        t.setDaemon(true);
        try {
            t.start();
        } catch (Throwable e) {
            task.run(); // no thread to be had: as before, on the caller
        }
    }
}
