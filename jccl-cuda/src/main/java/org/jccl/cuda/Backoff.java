package org.jccl.cuda;

import java.util.concurrent.locks.LockSupport;

/**
 * How a thread waits for the GPU without blocking in the driver (so every wait keeps its
 * deadline): spin for the first 50 us, which covers a small collective, then yield, then sleep
 * in 50 us steps so a long wait costs no CPU.
 */
final class Backoff {
    private static final long SPIN_NANOS = 50_000;
    private static final long YIELD_NANOS = 2_000_000;
    private static final long PARK_NANOS = 50_000;

    private final long start = System.nanoTime();

    /** Waits a little; call in a loop that re-checks its condition. */
    void idle() {
        long waited = System.nanoTime() - start;
        if (waited < SPIN_NANOS) {
            Thread.onSpinWait();
        } else if (waited < YIELD_NANOS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(PARK_NANOS);
        }
    }
}
