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
}
