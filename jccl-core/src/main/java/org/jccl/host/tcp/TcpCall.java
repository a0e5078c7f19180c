package org.jccl.host.tcp;

import org.jccl.host.engine.CallInfo;
import org.jccl.host.engine.OpCode;

/**
 * The call in progress on a TCP transport: its fingerprint travels in every frame header with the
 * previous collective's and is checked by the receiver; its deadline starts with the call.
 */
public final class TcpCall extends CallInfo {
    /**
     * The fingerprint ({@link #packed()}) of the collective before this one on this transport, 0
     * for the first: frames carry it, so that a disagreement nobody saw in a call fails the next.
     */
    public long prev;
    private long lastSeq;
    private long lastPacked;

    /** Sets the fields for a new call and starts its deadline. */
    @Override
    public void set(long seq, int opcode, int dtype, int redop, int root, long count, long timeoutNanos) {
        super.set(seq, opcode, dtype, redop, root, count, timeoutNanos);
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

    static long pack(int opcode, int dtype, int redop, int root) {
        return OpCode.pack(opcode, dtype, redop, root);
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
