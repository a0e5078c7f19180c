package org.jccl;

import java.util.Objects;

/**
 * Argument checks shared by every backend, so that bad input is rejected with the same clear
 * message before any byte moves.
 */
public final class Checks {
    private Checks() {
    }

    /** Non-null buffer. */
    public static Buffer buffer(Buffer b, String name) {
        if (b == null) {
            throw new IllegalArgumentException(name + " is null: pass a Buffer (e.g. HostBuffer.of(array))");
        }
        return b;
    }

    /** Non-null op valid for the type. */
    public static void op(ReduceOp op, DataType type) {
        if (op == null) {
            throw new IllegalArgumentException("op is null: pass a ReduceOp such as ReduceOp.SUM");
        }
        op.checkSupports(type);
    }

    /** Rank argument in range. */
    public static void rank(int r, int size, String name) {
        if (r < 0 || r >= size) {
            throw new IllegalArgumentException(name + " is " + r + " but the communicator has ranks 0.."
                    + (size - 1) + ": pass a rank in that range");
        }
    }

    /** Same type on both buffers. */
    public static void sameType(Buffer a, String an, Buffer b, String bn) {
        if (a.type() != b.type()) {
            throw new IllegalArgumentException(an + " is " + a.type() + " but " + bn + " is " + b.type()
                    + ": both buffers must have the same data type");
        }
    }

    /** Exact count. */
    public static void count(Buffer b, String name, long expected, String why) {
        if (b.count() != expected) {
            throw new IllegalArgumentException(name + " has " + b.count() + " elements but " + expected
                    + " are needed (" + why + ")");
        }
    }

    /** The count of one rank's block of a buffer that holds {@code size} equal blocks. */
    public static long perRankCount(Buffer b, int size, String name) {
        buffer(b, name);
        if (b.count() % size != 0) {
            throw new IllegalArgumentException(name + " has " + b.count() + " elements, not a multiple of the "
                    + size + " ranks: give it size() x per-rank count elements");
        }
        return b.count() / size;
    }

    /** A positive deadline (per-call timeouts): null, zero and negative are refused, naming the argument. */
    public static java.time.Duration timeout(java.time.Duration t, String name) {
        if (t == null) {
            throw new IllegalArgumentException(name + " is null: give a positive Duration, e.g. Duration.ofSeconds(30)");
        }
        if (t.isZero() || t.isNegative()) {
            throw new IllegalArgumentException(name + " is " + t + ": give a positive Duration, e.g. Duration.ofSeconds(30) "
                    + "(a deadline of zero or less would fail every call)");
        }
        return t;
    }

    /** Non-null helper for other arguments. */
    public static <T> T notNull(T v, String name) {
        return Objects.requireNonNull(v, name + " is null");
    }

    /**
     * {@code b} as a HostBuffer, or an error naming the argument: null, or a buffer of another
     * location ({@code instead} says what to do then, for this backend).
     */
    public static HostBuffer hostBuffer(Buffer b, String name, String instead) {
        if (b == null) {
            throw new IllegalArgumentException(name + " is null: pass a Buffer (e.g. HostBuffer.of(array))");
        }
        if (b instanceof HostBuffer h) {
            return h;
        }
        throw new IllegalArgumentException(name + " is a " + b.location() + " buffer but " + instead);
    }

    /** In place (same start) or disjoint: nothing in between. */
    public static void noPartialOverlap(HostBuffer a, String an, HostBuffer b, String bn) {
        if (a != b && a.overlaps(b) && !a.sameStart(b)) {
            throw new IllegalArgumentException(an + " and " + bn + " overlap without starting at the same element: "
                    + "pass the same buffer for an in-place call, or disjoint buffers");
        }
    }
}
