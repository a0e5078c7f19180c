package org.jccl.host.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;
import org.jccl.AbortedException;
import org.jccl.CollectiveMismatchException;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.host.engine.OpCode;
import org.jccl.spi.Liveness;

/**
 * The failure paths of a {@link TcpTransport}, off the path of a message: what a peer's ABORT
 * frame, a broken or closed connection, a frame header that differs from the expected one or a
 * corrupt stream means (the exception naming the right rank), and this rank's own failure (ABORT
 * frames to every peer, then close). The transport's progress loop calls in here only once a
 * connection reports a problem.
 */
final class TcpFailures {
    /** How long a failure waits for a peer's ABORT frame that explains it before blaming the peer. */
    static final long GRACE_NANOS = 100_000_000L;
    /** How long {@link #abortPeers} writes the ABORT frames at most. */
    static final long FAIL_FLUSH_NANOS = 200_000_000L;
    /** How long {@link #abortPeers} then waits at most for the peers to close, discarding their input. */
    static final long FAIL_DRAIN_NANOS = 150_000_000L;
    /** A peer that sent nothing for this long while {@link #abortPeers} drains is not waited for any longer. */
    static final long FAIL_QUIET_NANOS = 20_000_000L;

    private TcpFailures() {
    }

    /**
     * {@code c} broke (reset, broken pipe) or ended without a word. The peer may only be the
     * messenger: a rank that fails because another one died sends an ABORT frame naming that rank
     * before it closes, and that frame may still sit unread behind the data, on another of its
     * sockets, or come from a third rank; the heartbeats may know the dead rank too. So before
     * blaming the peer, looks for a peer's account among the bytes readable on every connection
     * and asks the liveness watch, for at most {@link #GRACE_NANOS}: the peer's own ABORT frame
     * says why it went, another rank's names the culprit. Only then is the peer declared dead.
     */
    static JcclException broken(TcpTransport t, TcpConnection c) {
        int rank = t.rank();
        int size = t.size();
        String name = t.name();
        TcpCall call = t.call;
        IOException io = c.ioError;
        String what = (io != null ? "broke its connection (" + io.getMessage() + ")" : "closed its connection without a word")
                + " while rank " + rank + " was in " + call.describe() + ": the process died, was killed, or its host went away";
        long end = System.nanoTime() + GRACE_NANOS;
        while (true) {
            for (TcpConnection x : t.allRef) {
                // (sockets of other peers never used stay unread: no staging buffers for them)
                if (x.peer != rank && (x.peer == c.peer || x.buffered())) {
                    x.drainForAbort();
                }
            }
            // The peer's own account first (on any of its sockets), then a third rank naming a culprit.
            for (TcpConnection x : t.allRef) {
                if (x.peer == c.peer && x.abortCode != 0) {
                    return peerAbort(t, x.peer, x.abortCode, x.abortReason, x.abortCulprit);
                }
            }
            for (TcpConnection x : t.allRef) {
                if (x.peer != rank && x.abortCode == Frame.ABORT_FAILED && x.abortCulprit >= 0 && x.abortCulprit < size
                        && x.abortCulprit != rank && x.abortCulprit != x.peer) {
                    return peerAbort(t, x.peer, x.abortCode, x.abortReason
                            + " [rank " + rank + " also saw rank " + c.peer + " " + what + "]", x.abortCulprit);
                }
            }
            Liveness.Watch w = t.watch;
            int d = w == null ? -1 : w.firstDead();
            if (d >= 0 && d != rank) {
                return w.failure(d, call.describe() + " on rank " + rank + " of communicator " + name
                        + " (rank " + c.peer + " " + what + ")");
            }
            if (System.nanoTime() - end > 0 || t.abortReason() != null) {
                break;
            }
            LockSupport.parkNanos(1_000_000);
        }
        return new PeerFailureException(c.peer, "rank " + c.peer + " of communicator " + name + " " + what, io);
    }

    /**
     * The exception for a peer's ABORT frame: {@code p} sent {@code code} with {@code reason};
     * {@code culprit}, when it names a third rank, is the one to blame.
     */
    static JcclException peerAbort(TcpTransport t, int p, long code, String reason, int culprit) {
        int rank = t.rank();
        int size = t.size();
        if (code == Frame.ABORT_FAILED && culprit >= 0 && culprit < size && culprit != p && culprit != rank) {
            // p only reports another rank's failure: blame that one.
            return new PeerFailureException(culprit, "rank " + culprit + " failed (reported by rank " + p + "): " + reason);
        }
        if (code == Frame.ABORT_MISMATCH) {
            return new CollectiveMismatchException("rank " + p + " detected a mismatch: " + reason);
        }
        if (code == Frame.ABORT_ABORTED) {
            return new AbortedException("rank " + p + " aborted the communicator: " + reason);
        }
        return new PeerFailureException(p, "rank " + p + " failed: " + reason);
    }

    /** A frame that breaks the protocol (not a jccl peer, or memory corruption): fail loudly. */
    static void corrupt(TcpTransport t, TcpConnection c, String what) {
        throw new JcclException("rank " + t.rank() + ": " + c + " of communicator " + t.name() + " sent " + what
                + " during " + t.call.describe() + ": the stream is corrupt; the communicator cannot go on");
    }

    /**
     * A frame header that differs from the expected one: a mismatch, unless the peer's ABORT
     * follows with another account (it failed, or was aborted). The peer usually sees this rank's
     * header as a mismatch at the same moment and waits for this rank's account in turn: so this
     * rank sends its ABORT to the peer first, then waits at most {@link #GRACE_NANOS} for the
     * peer's. A mismatch from the peer too confirms this rank's own account, which names both calls
     * as this rank sees them; any other code is the peer's failure.
     */
    static void mismatch(TcpTransport t, TcpConnection c, TcpOp op, long seq, long packed, long count, long msgBytes,
                         long tag, long prev) {
        CollectiveMismatchException mine = describeMismatch(t, c, op, seq, packed, count, msgBytes, tag, prev);
        byte[] reason = mine.getMessage().getBytes(StandardCharsets.UTF_8);
        long end = System.nanoTime() + GRACE_NANOS;
        while (true) {
            for (TcpConnection x : t.allRef) {
                if (x.peer == c.peer) {
                    x.stepAbort(Frame.ABORT_MISMATCH, reason, -1);
                }
            }
            for (TcpConnection x : t.allRef) {
                if (x.peer == c.peer && x.drainForAbort()) {
                    if (x.abortCode == Frame.ABORT_MISMATCH) {
                        throw mine;
                    }
                    throw peerAbort(t, x.peer, x.abortCode, x.abortReason, x.abortCulprit);
                }
            }
            if (System.nanoTime() - end > 0 || c.eof) {
                break;
            }
            LockSupport.parkNanos(200_000);
        }
        throw mine;
    }

    /** This rank's account of the mismatch {@link #mismatch} found on {@code c}. */
    private static CollectiveMismatchException describeMismatch(TcpTransport t, TcpConnection c, TcpOp op, long seq,
                                                                long packed, long count, long msgBytes, long tag,
                                                                long prev) {
        int rank = t.rank();
        String msg;
        if (op.p2p) {
            DataType[] types = DataType.values();
            int mine = (int) (op.call >>> 40) & 0xff;
            int theirs = (int) (packed >>> 40) & 0xff;
            msg = "send/recv mismatch: rank " + rank + " posts recv #" + op.seq + " of " + op.bytes + " bytes of "
                    + types[mine] + " from rank " + c.peer + ", but rank " + c.peer + " sent "
                    + (((packed >>> 48) & 0xffff) == OpCode.SEND ? "message #" + seq + " of " + msgBytes + " bytes of "
                    + (theirs < types.length ? types[theirs] : "type " + theirs) : "something else")
                    + ": sends and receives between a pair must match in order, type and count";
        } else {
            String theirs = TcpCall.describe(packed, count, seq);
            String mine = TcpCall.describe(op.call, op.count, op.seq);
            if (theirs.equals(mine) && prev != op.prev && tag == op.tag && msgBytes == op.bytes) {
                return new CollectiveMismatchException("collective mismatch: ranks " + rank + " and " + c.peer + " both called "
                        + mine + ", but their previous collectives differ: rank " + rank + " called "
                        + TcpCall.describePrevious(op.prev, op.seq - 1) + ", rank " + c.peer + " called "
                        + TcpCall.describePrevious(prev, seq - 1) + " (the ranks that named different roots or "
                        + "collectives returned from it without seeing each other): " + OpCode.SAME_CALLS);
            }
            msg = "collective mismatch: rank " + rank + " called " + mine + " but rank " + c.peer + " called " + theirs
                    + (theirs.equals(mine) ? " with another algorithm step (tag " + Long.toHexString(tag) + " vs "
                    + Long.toHexString(op.tag) + ", message " + msgBytes + " vs " + op.bytes + " bytes: different "
                    + "JCCL_ALGO or tuning settings?)" : "") + " at the same step: " + OpCode.SAME_CALLS;
        }
        return new CollectiveMismatchException(msg);
    }

    /**
     * The failing side of {@link TcpTransport#fail(long, String, int)}: sends an ABORT frame
     * ({@code code}, {@code reason}, {@code culprit}) on every connection of {@code cs} (a socket in
     * the middle of a data frame finishes it first), shuts the output down, discards what the peers
     * still send until they close (so that no reset destroys the ABORT frame in flight), then
     * closes the connections. Bounded: at most {@link #FAIL_FLUSH_NANOS} to write, {@link
     * #FAIL_DRAIN_NANOS} to drain.
     */
    static void abortPeers(TcpConnection[] cs, long code, String reason, int culprit) {
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        boolean[] done = new boolean[cs.length];
        long end = System.nanoTime() + FAIL_FLUSH_NANOS;
        while (true) {
            boolean all = true;
            for (int i = 0; i < cs.length; i++) {
                if (!done[i]) {
                    done[i] = cs[i].stepAbort(code, r, culprit);
                    all &= done[i];
                }
            }
            if (all || System.nanoTime() - end > 0) {
                break;
            }
            LockSupport.parkNanos(200_000);
        }
        for (TcpConnection c : cs) {
            try {
                c.ch.shutdownOutput();
            } catch (IOException ignored) {
                // the peer may be gone already
            }
        }
        // Closing a socket with unread input sends a reset, which discards this side's data not
        // yet transmitted (the ABORT frame) and may cut the peer's reading short: read until each
        // peer closes too (it does once it failed on the ABORT), has sent nothing for
        // FAIL_QUIET_NANOS (a peer outside a call: the socket then closes with nothing unread), or
        // FAIL_DRAIN_NANOS passed.
        Arrays.fill(done, false);
        ByteBuffer scratch = ByteBuffer.allocate(64 << 10);
        long start = System.nanoTime();
        long[] lastInput = new long[cs.length];
        Arrays.fill(lastInput, start);
        while (true) {
            boolean all = true;
            long now = System.nanoTime();
            for (int i = 0; i < cs.length; i++) {
                if (!done[i]) {
                    int got = cs[i].discardInput(scratch);
                    if (got > 0) {
                        lastInput[i] = now;
                    }
                    done[i] = got < 0 || now - lastInput[i] > FAIL_QUIET_NANOS;
                    all &= done[i];
                }
            }
            if (all || now - start > FAIL_DRAIN_NANOS) {
                break;
            }
            LockSupport.parkNanos(500_000);
        }
        for (TcpConnection c : cs) {
            c.close();
        }
    }
}
