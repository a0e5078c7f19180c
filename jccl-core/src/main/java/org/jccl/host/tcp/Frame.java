package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The frame format of the TCP transport: every byte a collective or send/recv puts on a socket is
 * a frame, a 72-byte header followed by {@code LENGTH} payload bytes. Integers are big-endian;
 * payload bytes are the elements as they lie in memory (both ends check at connection time that
 * they share the byte order).
 *
 * <pre>
 *  +-------------------+-------------------+---------------------------------------+
 *  |  0 KIND u32       |  4 LENGTH u32     |  8 COMMUNICATOR ID u64                |
 *  +-------------------+-------------------+---------------------------------------+
 *  | 16 SEQUENCE u64 (collective number, or send/recv message number of the pair)  |
 *  | 24 CALL u64 (opcode u16 | dtype u8 | redop u8 | root i32: the fingerprint)    |
 *  | 32 COUNT u64 (elements of the call)                                           |
 *  | 40 TAG u64 (algorithm step; ABORT: the reason code)                           |
 *  | 48 OFFSET u64 (byte offset of this payload in its message; ABORT: culprit + 1) |
 *  | 56 MESSAGE BYTES u64 (bytes of the whole message)                             |
 *  | 64 PREVIOUS u64 (the CALL word of the sender's previous collective; 0: none)  |
 *  +-------------------------------------------------------------------------------+
 *  | 72 PAYLOAD [LENGTH]                                                           |
 * </pre>
 *
 * KIND is {@link #DATA}, {@link #ABORT} (the sender failed or aborted; TAG holds an {@code
 * ABORT_*} code, OFFSET the rank it blames plus one (0: the sender itself failed; else another
 * rank that died or did not arrive, which the receiver then names), the payload a UTF-8 reason of
 * at most {@link #MAX_REASON} bytes) or {@link
 * #CLOSE} (the sender closed the communicator; no payload). A receiver knows exactly which frame
 * comes next on each socket (messages are matched in order per peer and cut into chunks the same
 * way on both ends), so it checks every header field against what it expects: a difference is a
 * {@link org.jccl.CollectiveMismatchException} naming both calls, never silent corruption.
 * PREVIOUS (collective frames only; 0 in send/recv and control frames) catches a disagreement that
 * no receiver could see in the call itself: ranks that each name themselves the root of a small
 * broadcast receive nothing in it, so without PREVIOUS a rank whose direct peers in the next
 * collective agreed with it could complete that collective while the ranks that hold the stale
 * frames fail it. With it, every rank whose next collective depends on a disagreeing rank's data
 * fails in that collective.
 */
public final class Frame {
    private Frame() {
    }

    /** Header bytes. */
    public static final int HEADER_BYTES = 72;
    /** "JCDF": data. */
    public static final int DATA = 0x4A434446;
    /** "JCAB": the sender failed or aborted. */
    public static final int ABORT = 0x4A434142;
    /** "JCCZ": the sender closed the communicator. */
    public static final int CLOSE = 0x4A43435A;
    /** Largest reason of an ABORT frame. */
    public static final int MAX_REASON = 4096;

    /** ABORT codes. */
    public static final long ABORT_ABORTED = 1, ABORT_FAILED = 2, ABORT_MISMATCH = 4;

    /** The ABORT code that tells peers about {@code e}: what it is, so that they fail with the same kind. */
    public static long abortCode(org.jccl.JcclException e) {
        return e instanceof org.jccl.CollectiveMismatchException ? ABORT_MISMATCH
                : e instanceof org.jccl.AbortedException ? ABORT_ABORTED : ABORT_FAILED;
    }

    static final int KIND = 0, LENGTH = 4, COMM = 8, SEQ = 16, CALL = 24, COUNT = 32, TAG = 40, OFFSET = 48, MSG_BYTES = 56, PREV = 64;

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /** Writes a header at {@code at}. */
    static void put(MemorySegment s, long at, int kind, int length, long comm, long seq, long call, long count, long tag,
                    long offset, long msgBytes, long prev) {
        s.set(INT, at + KIND, kind);
        s.set(INT, at + LENGTH, length);
        s.set(LONG, at + COMM, comm);
        s.set(LONG, at + SEQ, seq);
        s.set(LONG, at + CALL, call);
        s.set(LONG, at + COUNT, count);
        s.set(LONG, at + TAG, tag);
        s.set(LONG, at + OFFSET, offset);
        s.set(LONG, at + MSG_BYTES, msgBytes);
        s.set(LONG, at + PREV, prev);
    }

    static int kind(MemorySegment s, long at) {
        return s.get(INT, at + KIND);
    }

    static int length(MemorySegment s, long at) {
        return s.get(INT, at + LENGTH);
    }

    static long word(MemorySegment s, long at, int field) {
        return s.get(LONG, at + field);
    }
}
