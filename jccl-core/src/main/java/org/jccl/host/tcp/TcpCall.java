package org.jccl.host.tcp;

import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * The call in progress on a TCP transport: what it is (its fingerprint travels in every frame
 * header and is checked by the receiver) and its deadline. Mutable and reused, so that calls
 * allocate nothing.
 */
public final class TcpCall {
    /** Operation codes (the same numbers as the shared-memory engine's). */
    public static final int OP_ALLREDUCE = 0, OP_BROADCAST = 1, OP_REDUCE = 2, OP_ALLGATHER = 3, OP_REDUCESCATTER = 4,
            OP_ALLTOALL = 5, OP_GATHER = 6, OP_SCATTER = 7, OP_BARRIER = 8, OP_SEND = 9, OP_RECV = 10, OP_SPLIT = 11;
    /** ReduceOp slot of calls without a reduction. */
    public static final int NO_REDOP = 15;

    /** Operation names by opcode. */
    static final String[] NAMES = {"allReduce", "broadcast", "reduce", "allGather", "reduceScatter", "allToAll",
        "gather", "scatter", "barrier", "send/recv", "recv", "split"};

    /** Collective sequence number (per communicator, the same on every rank). */
    public long seq;
    /** Operation code. */
    public int opcode;
    /** DataType ordinal. */
    public int dtype;
    /** ReduceOp kind ordinal, or {@link #NO_REDOP}. */
    public int redop;
    /** Root, or -1. */
    public int root;
    /** Element count of the call (its fingerprint: per-rank count). */
    public long count;
    /** Deadline (System.nanoTime). */
    public long deadline;
    /** The timeout the deadline was computed from. */
    public long timeoutNanos;

    /** Sets the fields for a new call and starts its deadline. */
    public void set(long seq, int opcode, DataType type, ReduceOp op, int root, long count, long timeoutNanos) {
        this.seq = seq;
        this.opcode = opcode;
        this.dtype = type.ordinal();
        this.redop = op == null ? NO_REDOP : op.kind().ordinal();
        this.root = root;
        this.count = count;
        this.timeoutNanos = timeoutNanos;
        this.deadline = System.nanoTime() + timeoutNanos;
    }

    /** Restarts the deadline (a point-to-point batch that made progress). */
    public void touch() {
        deadline = System.nanoTime() + timeoutNanos;
    }

    /** opcode, dtype, redop and root packed into one word: the fingerprint frames carry. */
    public long packed() {
        return pack(opcode, dtype, redop, root);
    }

    static long pack(int opcode, int dtype, int redop, int root) {
        return ((long) opcode << 48) | ((long) dtype << 40) | ((long) redop << 32) | (root & 0xffffffffL);
    }

    /** Human description of this call. */
    public String describe() {
        return describe(packed(), count, seq);
    }

    /** Human description of a fingerprint. */
    static String describe(long packed, long count, long seq) {
        int op = (int) (packed >>> 48) & 0xffff;
        int dt = (int) (packed >>> 40) & 0xff;
        int ro = (int) (packed >>> 32) & 0xff;
        int root = (int) packed;
        StringBuilder b = new StringBuilder();
        b.append(op < NAMES.length ? NAMES[op] : "op" + op).append(" #").append(seq).append(" (");
        if (op != OP_BARRIER) {
            b.append(dt < DataType.values().length ? DataType.values()[dt] : "type" + dt);
            b.append(" x ").append(count);
            if (ro < ReduceOp.Kind.values().length) {
                b.append(", ").append(ReduceOp.Kind.values()[ro]);
            }
            if (root >= 0) {
                b.append(", root ").append(root);
            }
        }
        return b.append(')').toString();
    }
}
