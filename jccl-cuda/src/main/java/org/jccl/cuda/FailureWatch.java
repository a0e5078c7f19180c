package org.jccl.cuda;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * One daemon thread that tells the NCCL communicators of this process about failures their peers
 * posted in the job's store (a peer's abort(), timeout or NCCL error): every 50 ms it reads one
 * counter per communicator that is waiting for work (an idle one every 0.5 s), and reads the
 * reasons only when it grew. Store
 * I/O lives here, never on a waiting thread or the watchdog, so a slow or lost store delays
 * nothing else.
 */
final class FailureWatch implements Runnable {
    static final long PERIOD_NANOS = 50_000_000;
    private static final FailureWatch INSTANCE = new FailureWatch();

    private final Set<NcclCommunicator> comms = ConcurrentHashMap.newKeySet();

    private FailureWatch() {
        Thread t = new Thread(this, "jccl-nccl-failure-watch");
        t.setDaemon(true);
        t.start();
    }

    static void register(NcclCommunicator c) {
        INSTANCE.comms.add(c);
    }

    static void unregister(NcclCommunicator c) {
        INSTANCE.comms.remove(c);
    }

    @Override
    public void run() {
        while (true) {
            LockSupport.parkNanos(PERIOD_NANOS);
            for (NcclCommunicator c : comms) {
                try {
                    c.checkPostedFailures();
                } catch (RuntimeException | Error e) {
                    c.postedFailuresUnavailable(e);
                }
            }
        }
    }
}
