package org.jccl.spi;

import java.time.Duration;
import org.jccl.Buffer;
import org.jccl.Checks;
import org.jccl.ReduceOp;

/**
 * One call of a collective or a send/receive: the operation descriptor every call of every backend
 * goes through ({@link AbstractCommunicator#execute}), like NCCL's {@code ncclInfo}. The deadline
 * travels with the call: {@link #timeout()} is a {@link org.jccl.Communicator#withTimeout} view's,
 * or null for the communicator's own.
 *
 * <p>A flyweight: each communicator (and each view) fills its one instance for each call, so a
 * blocking call allocates nothing. It is valid only during {@link AbstractCommunicator#execute}
 * (calls of a communicator come from one thread at a time): a backend copies what it keeps.
 */
public final class Op {
    private Collective collective;
    private Buffer send;
    private Buffer recv;
    private ReduceOp op;
    private int root;
    private int peer;
    private Duration timeout;

    Op() {
    }

    Op set(Collective c, Buffer send, Buffer recv, ReduceOp op, int root, int peer, Duration timeout) {
        this.collective = c;
        this.send = send;
        this.recv = recv;
        this.op = op;
        this.root = root;
        this.peer = peer;
        this.timeout = timeout;
        return this;
    }

    /** Which operation. */
    public Collective collective() {
        return collective;
    }

    /**
     * The send buffer: null for a barrier and a receive; may be null off the root where the
     * operation reads it on the root only.
     */
    public Buffer send() {
        return send;
    }

    /**
     * The receive buffer: null for a barrier and a send; may be null off the root where the
     * operation writes it on the root only.
     */
    public Buffer recv() {
        return recv;
    }

    /** The reduction of a reducing operation, else null. */
    public ReduceOp op() {
        return op;
    }

    /** The root rank of a rooted operation, else -1. */
    public int root() {
        return root;
    }

    /** The other rank of a send or receive, else -1. */
    public int peer() {
        return peer;
    }

    /** This call's deadline, or null: the communicator's. */
    public Duration timeout() {
        return timeout;
    }

    /** The checks every backend shares, before any backend-specific one: the root or peer in range. */
    public void checkRanks(int size) {
        if (collective.rooted()) {
            Checks.rank(root, size, "root");
        } else if (collective.pointToPoint()) {
            Checks.rank(peer, size, "peer");
        }
    }

    /** This call's deadline in nanoseconds: the view's, else {@code defaultNanos}. */
    public long timeoutNanos(long defaultNanos) {
        return timeout == null ? defaultNanos : timeout.toNanos();
    }

    /** This call's deadline: the view's, else {@code communicatorTimeout}. */
    public Duration timeoutOr(Duration communicatorTimeout) {
        return timeout == null ? communicatorTimeout : timeout;
    }

    @Override
    public String toString() {
        return collective + "(send=" + send + ", recv=" + recv + ", op=" + op + ", root=" + root + ", peer=" + peer
                + ", timeout=" + timeout + ")";
    }
}
