package org.jccl;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A typed view of host memory: a {@link MemorySegment} with a {@link DataType} and a count.
 *
 * <p>Built from Java arrays (heap segments, no copy), direct {@link ByteBuffer}s, or any segment
 * (native, mapped, heap). Values are stored in native byte order (little-endian on every platform
 * jccl supports), as NCCL and MPI expect.
 */
public final class HostBuffer implements Buffer {
    private final MemorySegment segment;
    private final DataType type;
    private final long count;
    /** The heap array under the segment, or null for native memory (cached: overlap checks allocate nothing). */
    private final Object heapBase;

    static {
        JitStability.loadSegmentKinds();
    }

    private HostBuffer(MemorySegment segment, DataType type, long count) {
        this.segment = segment;
        this.type = type;
        this.count = count;
        this.heapBase = segment.isNative() ? null : segment.heapBase().orElse(null);
    }

    /**
     * A buffer over {@code count} elements of {@code type} at the start of {@code segment}.
     *
     * @throws IllegalArgumentException when the segment is too small, the count negative, or an
     *                                  argument null
     */
    public static HostBuffer of(DataType type, MemorySegment segment, long count) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(segment, "segment");
        if (count < 0) {
            throw new IllegalArgumentException("count is " + count + ": give a count >= 0");
        }
        long need = Math.multiplyExact(count, (long) type.byteSize());
        if (segment.byteSize() < need) {
            throw new IllegalArgumentException("segment holds " + segment.byteSize() + " bytes but "
                    + count + " x " + type + " need " + need + ": pass a larger segment or a smaller count");
        }
        return new HostBuffer(segment.asSlice(0, need), type, count);
    }

    /** A buffer over the whole segment (its size must be a multiple of the element size). */
    public static HostBuffer of(DataType type, MemorySegment segment) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(segment, "segment");
        if (segment.byteSize() % type.byteSize() != 0) {
            throw new IllegalArgumentException("segment of " + segment.byteSize()
                    + " bytes is not a whole number of " + type + " elements (" + type.byteSize() + " bytes each)");
        }
        return of(type, segment, segment.byteSize() / type.byteSize());
    }

    /** FLOAT32 over a float array (no copy). */
    public static HostBuffer of(float[] data) {
        return of(DataType.FLOAT32, MemorySegment.ofArray(Objects.requireNonNull(data, "data")));
    }

    /** FLOAT64 over a double array (no copy). */
    public static HostBuffer of(double[] data) {
        return of(DataType.FLOAT64, MemorySegment.ofArray(Objects.requireNonNull(data, "data")));
    }

    /** INT32 over an int array (no copy). */
    public static HostBuffer of(int[] data) {
        return of(DataType.INT32, data);
    }

    /** INT64 over a long array (no copy). */
    public static HostBuffer of(long[] data) {
        return of(DataType.INT64, data);
    }

    /** INT32 or UINT32 over an int array (no copy). */
    public static HostBuffer of(DataType type, int[] data) {
        requireType(type, "int[]", DataType.INT32, DataType.UINT32);
        return of(type, MemorySegment.ofArray(Objects.requireNonNull(data, "data")));
    }

    /** INT64 or UINT64 over a long array (no copy). */
    public static HostBuffer of(DataType type, long[] data) {
        requireType(type, "long[]", DataType.INT64, DataType.UINT64);
        return of(type, MemorySegment.ofArray(Objects.requireNonNull(data, "data")));
    }

    /** FLOAT16 or BFLOAT16 over a short array holding the raw bits (no copy). */
    public static HostBuffer of(DataType type, short[] bits) {
        requireType(type, "short[]", DataType.FLOAT16, DataType.BFLOAT16);
        return of(type, MemorySegment.ofArray(Objects.requireNonNull(bits, "bits")));
    }

    /** INT8, UINT8, FLOAT8_E4M3 or FLOAT8_E5M2 over a byte array (no copy). */
    public static HostBuffer of(DataType type, byte[] data) {
        requireType(type, "byte[]", DataType.INT8, DataType.UINT8, DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2);
        return of(type, MemorySegment.ofArray(Objects.requireNonNull(data, "data")));
    }

    /**
     * Any type over the remaining bytes of a direct ByteBuffer (no copy). The buffer's byte
     * order is ignored: elements are in native order.
     */
    public static HostBuffer of(DataType type, ByteBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        if (!buffer.isDirect()) {
            throw new IllegalArgumentException("buffer is a heap ByteBuffer: use a direct one "
                    + "(ByteBuffer.allocateDirect) or pass its array()");
        }
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException("buffer is read-only: collectives write into buffers; pass a writable one");
        }
        return of(type, MemorySegment.ofBuffer(buffer));
    }

    /** A zeroed native buffer of {@code count} elements owned by {@code arena}. */
    public static HostBuffer allocate(DataType type, long count, Arena arena) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(arena, "arena");
        if (count < 0) {
            throw new IllegalArgumentException("count is " + count + ": give a count >= 0");
        }
        long bytes = Math.multiplyExact(count, (long) type.byteSize());
        return new HostBuffer(arena.allocate(Math.max(bytes, 1), 64).asSlice(0, bytes), type, count);
    }

    private static void requireType(DataType type, String what, DataType... allowed) {
        Objects.requireNonNull(type, "type");
        for (DataType a : allowed) {
            if (a == type) {
                return;
            }
        }
        throw new IllegalArgumentException("type " + type + " does not fit a " + what + ": use one of "
                + java.util.Arrays.toString(allowed));
    }

    /** The bytes of this buffer (exactly {@link #byteSize()} long). */
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public DataType type() {
        return type;
    }

    @Override
    public long count() {
        return count;
    }

    @Override
    public long byteSize() {
        return segment.byteSize();
    }

    @Override
    public Location location() {
        return Location.HOST;
    }

    @Override
    public HostBuffer slice(long offset, long count) {
        java.util.Objects.checkFromIndexSize(offset, count, this.count);
        int es = type.byteSize();
        return new HostBuffer(segment.asSlice(offset * es, count * es), type, count);
    }

    @Override
    public boolean overlaps(Buffer other) {
        if (!(other instanceof HostBuffer h) || segment.byteSize() == 0 || h.segment.byteSize() == 0
                || !sameMemory(h)) {
            return false;
        }
        long a = segment.address();
        long b = h.segment.address();
        return a < b + h.segment.byteSize() && b < a + segment.byteSize();
    }

    @Override
    public boolean sameStart(Buffer other) {
        if (other == this) {
            return true;
        }
        return other instanceof HostBuffer h && sameMemory(h) && segment.address() == h.segment.address();
    }

    /**
     * True when both segments address the same memory space: both native, or both over the same
     * heap array (then {@code address()} is the offset into it).
     */
    private boolean sameMemory(HostBuffer h) {
        if (segment.isNative() || h.segment.isNative()) {
            return segment.isNative() && h.segment.isNative();
        }
        return heapBase == h.heapBase;
    }

    @Override
    public String toString() {
        return "HostBuffer[" + type + " x " + count + "]";
    }
}
