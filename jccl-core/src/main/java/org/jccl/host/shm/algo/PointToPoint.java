package org.jccl.host.shm.algo;

import org.jccl.HostBuffer;
import org.jccl.host.engine.AbstractP2p;
import org.jccl.host.shm.ShmTransport;

/**
 * One send or receive, progressed in chunks through the pair's mailbox without blocking, so that
 * several can advance together (consecutive async sends/recvs behave like an NCCL group). Messages
 * between a pair match in order; each carries its byte count and type, checked by the receiver.
 *
 * <p>A large send from native memory to a peer that can read this process ({@link
 * ShmTransport#singleCopy}) posts one entry with its buffer's address instead; the receiver reads
 * the whole message from there ({@link #SINGLE_COPY_PIECE} bytes per {@link #progress}) and acks the
 * entry, which completes the send: one copy instead of two.
 */
public final class PointToPoint extends AbstractP2p {
    private final ShmTransport t;
    private long messageNo;
    private long offset;
    private boolean started;
    private boolean done;
    /** Send: the chunk number of this message's single-copy entry (0: chunks). */
    private long singleCopyChunk;
    /** Receive: the sender posted its address; reading it. */
    private boolean reading;
    /** Bytes a single-copy receive reads per progress step, so that other sends/recvs move between. */
    static final long SINGLE_COPY_PIECE = 1L << 20;

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
        singleCopyChunk = 0;
        reading = false;
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
        long total = buffer.byteSize();
        int dtype = buffer.type().ordinal();
        if (!started) {
            messageNo = isSend ? t.nextSendMessage(peer) : t.nextRecvMessage(peer);
            started = true;
            if (isSend && t.singleCopy(peer, buffer.segment(), total)) {
                singleCopyChunk = -1; // posted below
            }
        }
        if (singleCopyChunk != 0) {
            if (singleCopyChunk < 0) {
                long k = t.trySendSingleCopy(peer, messageNo, total, dtype, buffer.segment());
                if (k < 0) {
                    return false;
                }
                singleCopyChunk = k;
                done = t.acked(peer, k);
                return true;
            }
            done = t.acked(peer, singleCopyChunk);
            return done;
        }
        if (reading) {
            long n = Math.min(SINGLE_COPY_PIECE, total - offset);
            t.readSingleCopy(peer, buffer.segment(), offset, n);
            offset += n;
            if (offset >= total) {
                t.finishSingleCopy(peer);
                done = true;
            }
            return true;
        }
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
                if (len == ShmTransport.SINGLE_COPY) {
                    reading = true;
                    return true; // read from the next step on
                }
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
