package org.jccl;

/**
 * A typed view of memory that a collective reads or writes: a data type, an element count and
 * where the bytes are. {@link HostBuffer} holds host memory; GPU backends add device buffers
 * behind the same interface, so one {@link Communicator} API serves every backend and counts and
 * types cannot disagree.
 */
public interface Buffer {

    /** Where a buffer's bytes live. */
    enum Location {
        /** Host (CPU) memory. */
        HOST,
        /** GPU memory. */
        DEVICE
    }

    /** Element type. */
    DataType type();

    /** Number of elements. */
    long count();

    /** Size in bytes ({@code count * type.byteSize()}). */
    default long byteSize() {
        return count() * type().byteSize();
    }

    /** Where the bytes are. */
    Location location();

    /**
     * A view of {@code count} elements starting at element {@code offset}, sharing memory.
     *
     * @throws IndexOutOfBoundsException when the range does not fit this buffer
     */
    Buffer slice(long offset, long count);

    /** True when this buffer and {@code other} share at least one byte. */
    boolean overlaps(Buffer other);

    /** True when both views start at the same byte (an in-place call). */
    boolean sameStart(Buffer other);
}
