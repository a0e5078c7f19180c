package org.jccl.host.engine;

import org.jccl.Buffer;
import org.jccl.Checks;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;

/**
 * The host engine's argument checks, one method per collective, with the messages every host
 * transport gives: what is wrong, which argument, and what to pass instead. They run before any
 * byte moves.
 */
final class HostArgs {
    private HostArgs() {
    }

    /** {@code b} as a HostBuffer, or an error that says which argument and what to pass. */
    static HostBuffer host(Buffer b, String name) {
        return Checks.hostBuffer(b, name, "this communicator runs the host backend: pass a HostBuffer, or create the "
                + "communicator with a device (Options.withDevice) to use the nccl backend");
    }

    /** In place (same start) or disjoint: nothing in between. */
    static void noPartialOverlap(HostBuffer a, String an, HostBuffer b, String bn) {
        Checks.noPartialOverlap(a, an, b, bn);
    }

    /** An all-reduce's buffers and operator. */
    static void allReduce(HostBuffer s, HostBuffer r, ReduceOp op) {
        Checks.sameType(s, "send", r, "recv");
        Checks.count(r, "recv", s.count(), "recv must have as many elements as send");
        Checks.op(op, s.type());
        noPartialOverlap(s, "send", r, "recv");
    }

    /** A broadcast's buffers on the root ({@code s} is null elsewhere). */
    static void broadcast(HostBuffer s, HostBuffer r, int root, int rank) {
        if (rank == root) {
            Checks.sameType(s, "send", r, "recv");
            Checks.count(r, "recv", s.count(), "recv must have as many elements as send");
            noPartialOverlap(s, "send", r, "recv");
        }
    }

    /** A reduce's root and operator, and the root's recv (returned; null elsewhere). */
    static HostBuffer reduce(HostBuffer s, Buffer recv, ReduceOp op, int root, int rank, int size) {
        Checks.op(op, s.type());
        if (rank != root) {
            return null;
        }
        HostBuffer r = host(recv, "recv");
        Checks.sameType(s, "send", r, "recv");
        Checks.count(r, "recv", s.count(), "the root's recv must have as many elements as send");
        noPartialOverlap(s, "send", r, "recv");
        return r;
    }

    /** An all-gather's (or the gather root's) buffers: recv holds size() x send, in place only as slice rank(). */
    static void gather(HostBuffer s, HostBuffer r, String what, int rank, int size) {
        Checks.sameType(s, "send", r, "recv");
        if (r.count() != s.count() * size) {
            Checks.count(r, "recv", s.count() * size, what + " needs size() x send.count() elements in recv");
        }
        if (r.overlaps(s)) {
            long c = s.count();
            if (!s.sameStart(r.slice(rank * c, c))) {
                throw new IllegalArgumentException("send overlaps recv but is not slice rank() of it: for an in-place "
                        + what + " pass recv.slice(rank() * count, count) as send");
            }
        }
    }

    /** A gather's root, and the root's recv (returned; null elsewhere). */
    static HostBuffer gatherRoot(HostBuffer s, Buffer recv, int root, int rank, int size) {
        if (rank != root) {
            return null;
        }
        HostBuffer r = host(recv, "recv");
        gather(s, r, "gather", rank, size);
        return r;
    }

    /** A reduce-scatter's buffers and operator: send holds size() x recv, in place only as slice rank(). */
    static void reduceScatter(HostBuffer s, HostBuffer r, ReduceOp op, int rank, int size) {
        Checks.sameType(s, "send", r, "recv");
        Checks.count(s, "send", r.count() * size, "reduceScatter needs size() x recv.count() elements in send");
        Checks.op(op, s.type());
        if (r.overlaps(s)) {
            long c = r.count();
            if (!r.sameStart(s.slice(rank * c, c))) {
                throw new IllegalArgumentException("recv overlaps send but is not slice rank() of it: for an in-place "
                        + "reduceScatter pass send.slice(rank() * count, count) as recv");
            }
        }
    }

    /** An all-to-all's buffers: the same size, a multiple of size(). */
    static void allToAll(HostBuffer s, HostBuffer r, int size) {
        Checks.sameType(s, "send", r, "recv");
        Checks.count(r, "recv", s.count(), "allToAll sends and receives the same number of elements");
        Checks.perRankCount(s, size, "send");
        noPartialOverlap(s, "send", r, "recv");
    }

    /** A scatter's root, and the root's send (returned; null elsewhere). */
    static HostBuffer scatter(Buffer send, HostBuffer r, int root, int rank, int size) {
        if (rank != root) {
            return null;
        }
        HostBuffer s = host(send, "send");
        Checks.sameType(s, "send", r, "recv");
        Checks.count(s, "send", r.count() * size, "scatter needs size() x recv.count() elements in the root's send");
        if (r.overlaps(s)) {
            long c = r.count();
            if (!r.sameStart(s.slice(rank * c, c))) {
                throw new IllegalArgumentException("recv overlaps send but is not slice rank() of it: for an in-place "
                        + "scatter pass send.slice(rank() * count, count) as recv");
            }
        }
        return s;
    }
}
