package org.jccl.host.engine;

import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * The call in progress on a transport: what it is (its fingerprint, checked against the peers',
 * and its description in messages) and its deadline. Mutable and reused, so that calls allocate
 * nothing. A transport that tracks more per call extends it.
 */
public class CallInfo {
    /** Collective sequence number (per communicator, the same on every rank; 0 for send/recv). */
    public long seq;
    /** Operation code (an {@link OpCode} constant). */
    public int opcode;
    /** DataType ordinal. */
    public int dtype;
    /** ReduceOp kind ordinal, or {@link OpCode#NO_REDOP}. */
    public int redop;
    /** Root, or -1. */
    public int root;
    /** Element count as the call's fingerprint (per-rank count). */
    public long count;
    /** Deadline (System.nanoTime); 0 until the transport starts it. */
    public long deadline;
    /** The timeout the deadline is computed from. */
    public long timeoutNanos;

    /** Sets the fields for a new call; its deadline is not started (0). */
    public void set(long seq, int opcode, int dtype, int redop, int root, long count, long timeoutNanos) {
        this.seq = seq;
        this.opcode = opcode;
        this.dtype = dtype;
        this.redop = redop;
        this.root = root;
        this.count = count;
        this.timeoutNanos = timeoutNanos;
        this.deadline = 0;
    }

    /** {@link #set(long, int, int, int, int, long, long)} from the call's type and operation (null: none). */
    public final void set(long seq, int opcode, DataType type, ReduceOp op, int root, long count, long timeoutNanos) {
        set(seq, opcode, type.ordinal(), op == null ? OpCode.NO_REDOP : op.kind().ordinal(), root, count, timeoutNanos);
    }

    /** opcode, dtype, redop and root packed into one word. */
    public long packed() {
        return OpCode.pack(opcode, dtype, redop, root);
    }

    /** Human description of this call. */
    public String describe() {
        return OpCode.describe(packed(), count, seq);
    }
}
