package org.jccl.host.engine;

import org.jccl.HostBuffer;

/**
 * What every transport's {@link P2p} holds the same way: the direction, the buffer and the peer,
 * fixed when the send or receive is created. A subclass moves the bytes ({@link #progress},
 * {@link #isDone}, {@link #runToCompletion}).
 */
public abstract class AbstractP2p implements P2p {
    /** True for a send. */
    protected final boolean isSend;
    /** The buffer sent, or received into. */
    protected final HostBuffer buffer;
    /** The peer. */
    protected final int peer;

    /** A send ({@code isSend}) or receive of {@code buffer} with {@code peer}. */
    protected AbstractP2p(boolean isSend, HostBuffer buffer, int peer) {
        this.isSend = isSend;
        this.buffer = buffer;
        this.peer = peer;
    }

    @Override
    public final int peer() {
        return peer;
    }

    @Override
    public final boolean isSend() {
        return isSend;
    }

    @Override
    public final HostBuffer buffer() {
        return buffer;
    }
}
