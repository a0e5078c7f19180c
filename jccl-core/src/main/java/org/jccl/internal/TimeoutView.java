package org.jccl.internal;

import java.time.Duration;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.ReduceOp;
import org.jccl.Work;

/**
 * The view {@link Communicator#withTimeout(Duration)} returns for the host engine's communicators:
 * every call is the target's, made with the view's deadline. The target reads that deadline from a
 * field the view sets (through the target's setter) on the calling thread just before the call and
 * clears just after (calls of a communicator come from one thread at a time), so a view call costs
 * two field writes and allocates nothing; async calls capture it when they are queued.
 *
 * <p>{@link #close()} does nothing (the view owns nothing); {@link #abort()} aborts the target.
 */
public final class TimeoutView implements Communicator {

    private final Communicator target;
    private final java.util.function.Consumer<Duration> callTimeout;
    private final Duration timeout;

    /**
     * A view of {@code target} with deadline {@code timeout} (checked by the caller); {@code
     * callTimeout} sets the deadline of the target's next calls on this thread (null: its own).
     */
    public TimeoutView(Communicator target, java.util.function.Consumer<Duration> callTimeout, Duration timeout) {
        this.target = target;
        this.callTimeout = callTimeout;
        this.timeout = timeout;
    }

    /** The communicator this is a view of. */
    public Communicator target() {
        return target;
    }

    @Override
    public int rank() {
        return target.rank();
    }

    @Override
    public int size() {
        return target.size();
    }

    @Override
    public String backend() {
        return target.backend();
    }

    /** This view's deadline. */
    @Override
    public Duration timeout() {
        return timeout;
    }

    /** Another view of the same communicator. */
    @Override
    public Communicator withTimeout(Duration t) {
        return target.withTimeout(t);
    }

    @Override
    public void allReduce(Buffer send, Buffer recv, ReduceOp op) {
        callTimeout.accept(timeout);
        try {
            target.allReduce(send, recv, op);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work allReduceAsync(Buffer send, Buffer recv, ReduceOp op) {
        callTimeout.accept(timeout);
        try {
            return target.allReduceAsync(send, recv, op);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void broadcast(Buffer send, Buffer recv, int root) {
        callTimeout.accept(timeout);
        try {
            target.broadcast(send, recv, root);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work broadcastAsync(Buffer send, Buffer recv, int root) {
        callTimeout.accept(timeout);
        try {
            return target.broadcastAsync(send, recv, root);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void reduce(Buffer send, Buffer recv, ReduceOp op, int root) {
        callTimeout.accept(timeout);
        try {
            target.reduce(send, recv, op, root);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root) {
        callTimeout.accept(timeout);
        try {
            return target.reduceAsync(send, recv, op, root);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void allGather(Buffer send, Buffer recv) {
        callTimeout.accept(timeout);
        try {
            target.allGather(send, recv);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work allGatherAsync(Buffer send, Buffer recv) {
        callTimeout.accept(timeout);
        try {
            return target.allGatherAsync(send, recv);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void reduceScatter(Buffer send, Buffer recv, ReduceOp op) {
        callTimeout.accept(timeout);
        try {
            target.reduceScatter(send, recv, op);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op) {
        callTimeout.accept(timeout);
        try {
            return target.reduceScatterAsync(send, recv, op);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void allToAll(Buffer send, Buffer recv) {
        callTimeout.accept(timeout);
        try {
            target.allToAll(send, recv);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work allToAllAsync(Buffer send, Buffer recv) {
        callTimeout.accept(timeout);
        try {
            return target.allToAllAsync(send, recv);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void gather(Buffer send, Buffer recv, int root) {
        callTimeout.accept(timeout);
        try {
            target.gather(send, recv, root);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work gatherAsync(Buffer send, Buffer recv, int root) {
        callTimeout.accept(timeout);
        try {
            return target.gatherAsync(send, recv, root);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void scatter(Buffer send, Buffer recv, int root) {
        callTimeout.accept(timeout);
        try {
            target.scatter(send, recv, root);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work scatterAsync(Buffer send, Buffer recv, int root) {
        callTimeout.accept(timeout);
        try {
            return target.scatterAsync(send, recv, root);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void send(Buffer buffer, int peer) {
        callTimeout.accept(timeout);
        try {
            target.send(buffer, peer);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work sendAsync(Buffer buffer, int peer) {
        callTimeout.accept(timeout);
        try {
            return target.sendAsync(buffer, peer);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void recv(Buffer buffer, int peer) {
        callTimeout.accept(timeout);
        try {
            target.recv(buffer, peer);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work recvAsync(Buffer buffer, int peer) {
        callTimeout.accept(timeout);
        try {
            return target.recvAsync(buffer, peer);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public void barrier() {
        callTimeout.accept(timeout);
        try {
            target.barrier();
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Work barrierAsync() {
        callTimeout.accept(timeout);
        try {
            return target.barrierAsync();
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Communicator split(int color, int key) {
        callTimeout.accept(timeout);
        try {
            return target.split(color, key);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Communicator shrink(java.util.Set<Integer> excluded) {
        callTimeout.accept(timeout);
        try {
            return target.shrink(excluded);
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public Communicator shrinkExcludingFailed() {
        callTimeout.accept(timeout);
        try {
            return target.shrinkExcludingFailed();
        } finally {
            callTimeout.accept(null);
        }
    }

    @Override
    public java.nio.file.Path dumpFlightRecord(java.nio.file.Path dir) {
        return target.dumpFlightRecord(dir);
    }

    /** Aborts the communicator (not only the view). */
    @Override
    public void abort() {
        target.abort();
    }

    /** Does nothing: the view owns nothing. Close the communicator itself. */
    @Override
    public void close() {
        // the target stays open
    }

    @Override
    public String toString() {
        return target + " with timeout " + timeout;
    }
}
