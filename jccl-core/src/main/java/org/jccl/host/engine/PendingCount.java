package org.jccl.host.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The async works queued and not yet finished, kept as two counters on separate cache lines: the
 * caller counts what it queues, the worker what it finishes. A single shared counter would move
 * its line between the two threads twice per async call.
 */
final class PendingCount {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    /** Indexes 128 bytes apart, and away from the array's header and its neighbours. */
    private static final int QUEUED = 8;
    private static final int FINISHED = 24;
    private final long[] words = new long[33];

    /** One more work queued (a caller). */
    void queued() {
        LONGS.getAndAdd(words, QUEUED, 1L);
    }

    /** One queued work finished (the worker, or close() failing what is left). */
    void finished() {
        LONGS.getAndAdd(words, FINISHED, 1L);
    }

    /**
     * Works queued and not finished. Exact for the thread that queues: it reads its own count
     * first, and the worker can only finish works counted there.
     */
    int get() {
        long q = (long) LONGS.getVolatile(words, QUEUED);
        long f = (long) LONGS.getVolatile(words, FINISHED);
        return (int) (q - f);
    }
}
