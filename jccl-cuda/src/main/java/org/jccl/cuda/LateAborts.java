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
        Thread t = new Thread(() -> {
            try {
                task.run();
            } finally {
                TEARDOWNS.remove(Thread.currentThread());
            }
        }, name);
        t.setDaemon(true);
        TEARDOWNS.add(t);
        try {
            t.start();
        } catch (Throwable e) {
            TEARDOWNS.remove(t);
            task.run(); // no thread to be had: as before, on the caller
        }
    }

    /** The teardown threads running now. */
    private static final java.util.Set<Thread> TEARDOWNS = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** How long the JVM's exit waits for them at most. */
    private static final long EXIT_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    static {
        // A JVM that exits while NCCL tears a communicator down on one of these threads runs CUDA's
        // exit handlers under it, and NCCL then crashes the process in ncclCommDestroy: the exit
        // waits for them first (bounded: a teardown stuck on a GPU must not hold the exit forever).
        Runtime.getRuntime().addShutdownHook(new Thread(LateAborts::awaitTeardowns, "jccl-nccl-exit"));
    }

    private static void awaitTeardowns() {
        long end = System.nanoTime() + EXIT_WAIT_NANOS;
        for (Thread t : TEARDOWNS) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return;
            }
            try {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
