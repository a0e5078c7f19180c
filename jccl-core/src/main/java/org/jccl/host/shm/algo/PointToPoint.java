package org.jccl.host.shm.algo;

import org.jccl.HostBuffer;
import org.jccl.host.engine.AbstractP2p;
import org.jccl.host.shm.ShmTransport;

/**
 * One send or receive, progressed in chunks through the pair's mailbox without blocking, so that
 * several can advance together (consecutive async sends/recvs behave like an NCCL group). Messages
 * between a pair match in order; each carries its byte count and type, checked by the receiver.
 */
public final class PointToPoint extends AbstractP2p {
    private final ShmTransport t;
    private long messageNo;
    private long offset;
    private boolean started;
    private boolean done;

    /** A send ({@code isSend}) or receive of {@code buffer} with {@code peer}. */
    public PointToPoint(ShmTransport t, boolean isSend, HostBuffer buffer, int peer) {
        super(isSend, buffer, peer);
        this.t = t;
    }

    @Override
    public PointToPoint reuse(boolean isSend, HostBuffer buffer, int peer) {
        rebind(isSend, buffer, peer);
        messageNo = 0;
        offset = 0;
        started = false;
        done = false;
        return this;
    }

    /** True once every byte moved. */
    @Override
    public boolean isDone() {
        return done;
    }

    /**
     * Moves as many chunks as possible now.
     *
     * @return true when any chunk moved
     */
    @Override
    public boolean progress() {
        if (done) {
            return false;
        }
        if (!started) {
            messageNo = isSend ? t.nextSendMessage(peer) : t.nextRecvMessage(peer);
            started = true;
        }
        long total = buffer.byteSize();
        int dtype = buffer.type().ordinal();
        boolean moved = false;
        while (!done) {
            if (isSend) {
                long len = Math.min(t.mailboxBytes(), total - offset);
                if (!t.trySendChunk(peer, messageNo, total, dtype, buffer.segment(), offset, offset, len)) {
                    break;
                }
                offset += len;
            } else {
                long len = t.tryRecvChunk(peer, messageNo, total, dtype, buffer.segment(), offset, offset);
                if (len < 0) {
                    break;
                }
                offset += len;
            }
            moved = true;
            done = offset >= total;
        }
        return moved;
    }

    /** Runs this operation to completion on the calling thread. */
    @Override
    public void runToCompletion() {
        int idle = 0;
        while (!done) {
            if (progress()) {
                idle = 0;
            } else {
                try {
                    t.idleP2p(idle++, peer);
                } catch (org.jccl.JcclException e) {
                    // What the peer sent before it closed or failed is still there: take it first.
                    if (!progress()) {
                        throw e;
                    }
                }
            }
        }
    }
}
