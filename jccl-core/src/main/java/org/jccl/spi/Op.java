package org.jccl.spi;

import java.time.Duration;
import org.jccl.Buffer;
import org.jccl.Checks;
import org.jccl.ReduceOp;

/**
 * One call of a collective or a send/receive: the operation descriptor every call of every backend
 * goes through ({@link AbstractCommunicator#execute}), like NCCL's {@code ncclInfo}. The deadline
 * travels with the call: {@code timeout} is a {@link org.jccl.Communicator#withTimeout} view's, or
 * null for the communicator's own.
 *
 * @param collective which operation
 * @param send       the send buffer (null for a barrier and a receive; may be null off the root
 *                   where the operation reads it on the root only)
 * @param recv       the receive buffer (null for a barrier and a send; may be null off the root
 *                   where the operation writes it on the root only)
 * @param op         the reduction of a reducing operation, else null
 * @param root       the root rank of a rooted operation, else -1
 * @param peer       the other rank of a send or receive, else -1
 * @param timeout    this call's deadline, or null: the communicator's
 */
public record Op(Collective collective, Buffer send, Buffer recv, ReduceOp op, int root, int peer, Duration timeout) {

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
}
