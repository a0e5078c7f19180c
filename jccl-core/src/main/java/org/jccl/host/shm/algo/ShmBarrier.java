package org.jccl.host.shm.algo;

import org.jccl.host.shm.ShmTransport;

/** Barrier: one empty chunk that every rank posts and waits for. */
public final class ShmBarrier {
    private ShmBarrier() {
    }

    /** Returns once every rank has entered. */
    public static void run(ShmTransport t) {
        long g = t.beginChunk();
        t.postIn(g);
        t.awaitAllIn(g);
        t.endChunk(g);
    }
}
