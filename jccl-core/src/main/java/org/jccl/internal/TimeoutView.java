package org.jccl.internal;

import java.time.Duration;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.ReduceOp;
import org.jccl.Work;

/**
 * The view {@link Communicator#withTimeout(Duration)} returns for backends that implement {@link
 * Target}: every call is the target's, made with the view's deadline. The target reads that
 * deadline from a field the view sets on the calling thread just before the call and clears just
 * after (calls of a communicator come from one thread at a time), so a view call costs two field
 * writes and allocates nothing; async calls capture it when they are queued.
 *
 * <p>{@link #close()} does nothing (the view owns nothing); {@link #abort()} aborts the target.
 */
public final class TimeoutView implements Communicator {

    /** A communicator whose next calls on this thread can be given another deadline. */
    public interface Target extends Communicator {
        /**
         * Internal (called by {@link TimeoutView}): the deadline of the calls this thread makes
         * next, or null for the communicator's own. Not for applications: use {@link
         * Communicator#withTimeout(Duration)}.
         */
        void callTimeout(Duration timeout);
    }

    private final Target target;
    private final Duration timeout;

    /** A view of {@code target} with deadline {@code timeout} (checked by the caller). */
    public TimeoutView(Target target, Duration timeout) {
        this.target = target;
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
        target.callTimeout(timeout);
        try {
            target.allReduce(send, recv, op);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work allReduceAsync(Buffer send, Buffer recv, ReduceOp op) {
        target.callTimeout(timeout);
        try {
            return target.allReduceAsync(send, recv, op);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void broadcast(Buffer send, Buffer recv, int root) {
        target.callTimeout(timeout);
        try {
            target.broadcast(send, recv, root);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work broadcastAsync(Buffer send, Buffer recv, int root) {
        target.callTimeout(timeout);
        try {
            return target.broadcastAsync(send, recv, root);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void reduce(Buffer send, Buffer recv, ReduceOp op, int root) {
        target.callTimeout(timeout);
        try {
            target.reduce(send, recv, op, root);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root) {
        target.callTimeout(timeout);
        try {
            return target.reduceAsync(send, recv, op, root);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void allGather(Buffer send, Buffer recv) {
        target.callTimeout(timeout);
        try {
            target.allGather(send, recv);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work allGatherAsync(Buffer send, Buffer recv) {
        target.callTimeout(timeout);
        try {
            return target.allGatherAsync(send, recv);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void reduceScatter(Buffer send, Buffer recv, ReduceOp op) {
        target.callTimeout(timeout);
        try {
            target.reduceScatter(send, recv, op);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op) {
        target.callTimeout(timeout);
        try {
            return target.reduceScatterAsync(send, recv, op);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void allToAll(Buffer send, Buffer recv) {
        target.callTimeout(timeout);
        try {
            target.allToAll(send, recv);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work allToAllAsync(Buffer send, Buffer recv) {
        target.callTimeout(timeout);
        try {
            return target.allToAllAsync(send, recv);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void gather(Buffer send, Buffer recv, int root) {
        target.callTimeout(timeout);
        try {
            target.gather(send, recv, root);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work gatherAsync(Buffer send, Buffer recv, int root) {
        target.callTimeout(timeout);
        try {
            return target.gatherAsync(send, recv, root);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void scatter(Buffer send, Buffer recv, int root) {
        target.callTimeout(timeout);
        try {
            target.scatter(send, recv, root);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work scatterAsync(Buffer send, Buffer recv, int root) {
        target.callTimeout(timeout);
        try {
            return target.scatterAsync(send, recv, root);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void send(Buffer buffer, int peer) {
        target.callTimeout(timeout);
        try {
            target.send(buffer, peer);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work sendAsync(Buffer buffer, int peer) {
        target.callTimeout(timeout);
        try {
            return target.sendAsync(buffer, peer);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void recv(Buffer buffer, int peer) {
        target.callTimeout(timeout);
        try {
            target.recv(buffer, peer);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work recvAsync(Buffer buffer, int peer) {
        target.callTimeout(timeout);
        try {
            return target.recvAsync(buffer, peer);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public void barrier() {
        target.callTimeout(timeout);
        try {
            target.barrier();
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Work barrierAsync() {
        target.callTimeout(timeout);
        try {
            return target.barrierAsync();
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Communicator split(int color, int key) {
        target.callTimeout(timeout);
        try {
            return target.split(color, key);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Communicator shrink(java.util.Set<Integer> excluded) {
        target.callTimeout(timeout);
        try {
            return target.shrink(excluded);
        } finally {
            target.callTimeout(null);
        }
    }

    @Override
    public Communicator shrinkExcludingFailed() {
        target.callTimeout(timeout);
        try {
            return target.shrinkExcludingFailed();
        } finally {
            target.callTimeout(null);
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
