package org.jccl.host.engine;

import org.jccl.HostBuffer;

/**
 * What every transport's {@link P2p} holds the same way: the direction, the buffer and the peer,
 * set when the send or receive is created (or, for a transport that reuses its objects, by {@link
 * #rebind}). A subclass moves the bytes ({@link #progress}, {@link #isDone}, {@link #runToCompletion}).
 */
public abstract class AbstractP2p implements P2p {
    /** True for a send. */
    protected boolean isSend;
    /** The buffer sent, or received into. */
    protected HostBuffer buffer;
    /** The peer. */
    protected int peer;

    /** A send ({@code isSend}) or receive of {@code buffer} with {@code peer}. */
    protected AbstractP2p(boolean isSend, HostBuffer buffer, int peer) {
        rebind(isSend, buffer, peer);
    }

    /** Sets the direction, the buffer and the peer: a {@link #reuse} sets its own progress state too. */
    protected final void rebind(boolean isSend, HostBuffer buffer, int peer) {
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
