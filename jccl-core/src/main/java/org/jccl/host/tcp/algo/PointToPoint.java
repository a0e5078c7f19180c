package org.jccl.host.tcp.algo;

import org.jccl.HostBuffer;
import org.jccl.host.engine.P2p;
import org.jccl.host.tcp.TcpTransport;

/**
 * One send or receive over the pair's send/recv socket, posted on first progress and completed
 * without blocking, so several advance together (consecutive async sends/recvs behave like an
 * NCCL group). Messages between a pair match in order; each header carries the message number,
 * type and byte count, which the receiver checks.
 */
public final class PointToPoint implements P2p {
    private final TcpTransport t;
    private boolean isSend;
    private HostBuffer buffer;
    private int peer;
    private int id = -1;
    private boolean done;

    /** A send ({@code isSend}) or receive of {@code buffer} with {@code peer}. */
    public PointToPoint(TcpTransport t, boolean isSend, HostBuffer buffer, int peer) {
        this.t = t;
        reset(isSend, buffer, peer);
    }

    /**
     * Makes this object a new send or receive (the blocking calls of one thread reuse theirs, so
     * that a stream of small sends and receives allocates nothing). Only once the previous one is
     * done or abandoned.
     */
    public PointToPoint reset(boolean isSend, HostBuffer buffer, int peer) {
        this.isSend = isSend;
        this.buffer = buffer;
        this.peer = peer;
        this.id = -1;
        this.done = false;
        return this;
    }

    @Override
    public int peer() {
        return peer;
    }

    @Override
    public boolean isSend() {
        return isSend;
    }

    @Override
    public HostBuffer buffer() {
        return buffer;
    }

    private void start() {
        if (id < 0) {
            id = isSend ? t.sendP2p(peer, buffer.segment(), 0, buffer.byteSize(), buffer.type(), buffer.count())
                    : t.recvP2p(peer, buffer.segment(), 0, buffer.byteSize(), buffer.type(), buffer.count());
        }
    }

    @Override
    public boolean progress() {
        if (done) {
            return false;
        }
        start();
        boolean moved = t.progress(false);
        if (t.isDone(id)) {
            t.release(id);
            done = true;
            moved = true;
        }
        return moved;
    }

    @Override
    public boolean isDone() {
        return done;
    }

    @Override
    public void runToCompletion() {
        start();
        t.await(id);
        done = true;
    }
}
