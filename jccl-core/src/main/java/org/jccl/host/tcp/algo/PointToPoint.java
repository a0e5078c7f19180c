package org.jccl.host.tcp.algo;

import org.jccl.HostBuffer;
import org.jccl.host.engine.AbstractP2p;
import org.jccl.host.tcp.TcpTransport;

/**
 * One send or receive over the pair's send/recv socket, posted on first progress and completed
 * without blocking, so several advance together (consecutive async sends/recvs behave like an
 * NCCL group). Messages between a pair match in order; each header carries the message number,
 * type and byte count, which the receiver checks.
 */
public final class PointToPoint extends AbstractP2p {
    private final TcpTransport t;
    private int id = -1;
    private boolean done;

    /** A send ({@code isSend}) or receive of {@code buffer} with {@code peer}. */
    public PointToPoint(TcpTransport t, boolean isSend, HostBuffer buffer, int peer) {
        super(isSend, buffer, peer);
        this.t = t;
    }

    @Override
    public PointToPoint reuse(boolean isSend, HostBuffer buffer, int peer) {
        rebind(isSend, buffer, peer);
        id = -1;
        done = false;
        return this;
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
