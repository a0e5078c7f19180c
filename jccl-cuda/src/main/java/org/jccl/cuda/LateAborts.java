package org.jccl.cuda;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** One daemon thread that runs the ncclCommAborts jccl delays (see NcclCommunicator#abortWith). */
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

    static void schedule(Runnable abort, long delayNanos) {
        EXEC.schedule(abort, delayNanos, TimeUnit.NANOSECONDS);
    }
}
