package org.jccl.host.tcp;

import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.host.engine.OpCode;

/**
 * The call in progress on a TCP transport: what it is (its fingerprint travels in every frame
 * header and is checked by the receiver) and its deadline. Mutable and reused, so that calls
 * allocate nothing.
 */
public final class TcpCall {
    /** Collective sequence number (per communicator, the same on every rank). */
    public long seq;
    /** Operation code. */
    public int opcode;
    /** DataType ordinal. */
    public int dtype;
    /** ReduceOp kind ordinal, or {@link OpCode#NO_REDOP}. */
    public int redop;
    /** Root, or -1. */
    public int root;
    /** Element count of the call (its fingerprint: per-rank count). */
    public long count;
    /** Deadline (System.nanoTime). */
    public long deadline;
    /** The timeout the deadline was computed from. */
    public long timeoutNanos;
    /**
     * The fingerprint ({@link #packed()}) of the collective before this one on this transport, 0
     * for the first: frames carry it, so that a disagreement nobody saw in a call fails the next.
     */
    public long prev;
    private long lastSeq;
    private long lastPacked;

    /** Sets the fields for a new call and starts its deadline. */
    public void set(long seq, int opcode, DataType type, ReduceOp op, int root, long count, long timeoutNanos) {
        this.seq = seq;
        this.opcode = opcode;
        this.dtype = type.ordinal();
        this.redop = op == null ? OpCode.NO_REDOP : op.kind().ordinal();
        this.root = root;
        this.count = count;
        this.timeoutNanos = timeoutNanos;
        this.deadline = System.nanoTime() + timeoutNanos;
        if (seq > 0 && seq != lastSeq) { // a new collective (send/recv calls have sequence 0)
            prev = lastPacked;
            lastPacked = packed();
            lastSeq = seq;
        }
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
        return OpCode.pack(opcode, dtype, redop, root);
    }

    /** Human description of this call. */
    public String describe() {
        return OpCode.describe(packed(), count, seq);
    }

    /** Human description of a previous collective's fingerprint (its count is not carried). */
    static String describePrevious(long packed, long seq) {
        return packed == 0 ? "none" : OpCode.describe(packed, -1, seq);
    }

    /** Human description of a fingerprint. */
    static String describe(long packed, long count, long seq) {
        return OpCode.describe(packed, count, seq);
    }
}
