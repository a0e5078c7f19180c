package org.jccl.cuda;

import java.util.concurrent.atomic.AtomicInteger;
import org.jccl.internal.Log;

/**
 * The store a communicator was given to close, shared with the communicators derived from it
 * (split, shrink): they use it for JCCL_CHECK, missing-rank reports and further shrinks, and
 * closing it also ends this rank's heartbeats. It closes when the last of them closes.
 */
final class SharedStore {
    private static final Log LOG = Log.get(SharedStore.class);

    private final AutoCloseable store;
    private final AtomicInteger refs = new AtomicInteger(1);

    SharedStore(AutoCloseable store) {
        this.store = store;
    }

    /** One more communicator holds the store; returns this. */
    SharedStore retain() {
        refs.incrementAndGet();
        return this;
    }

    /** A communicator let go; the last one closes the store. */
    void release(int rank) {
        if (refs.decrementAndGet() == 0) {
            try {
                store.close();
            } catch (Exception e) {
                LOG.warn(rank, "closing the store failed: " + e);
            }
        }
    }
}
