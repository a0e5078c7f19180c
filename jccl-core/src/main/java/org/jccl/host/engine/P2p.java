package org.jccl.host.engine;

import org.jccl.HostBuffer;

/** A send or receive the worker progresses together with its neighbours in the queue. */
public interface P2p {
    /** Moves what can move now; true when anything moved. */
    boolean progress();

    /** True once complete. */
    boolean isDone();

    /** The peer. */
    int peer();

    /** True for a send. */
    boolean isSend();

    /** The message's buffer. */
    HostBuffer buffer();

    /** Runs to completion on the calling thread. */
    void runToCompletion();

    /**
     * This object made a new send or receive when its transport reuses them (a communicator's
     * blocking calls keep theirs, so that small sends and receives allocate nothing), else null.
     * Only once the previous one is done or abandoned; {@code b} null leaves it holding no buffer.
     */
    default P2p reuse(boolean isSend, HostBuffer b, int peer) {
        return null;
    }
}
