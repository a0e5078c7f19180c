package org.jccl.kit;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.jccl.Buffer;
import org.jccl.DataType;
import org.jccl.HostBuffer;

/**
 * Where a case's buffers live. The kit fills and reads them only through this interface, so the
 * same case runs on host memory and on a GPU. Buffers live until {@link #close()}.
 */
public interface Mem extends AutoCloseable {

    /** A buffer of {@code count} elements of {@code type}, zero-filled. */
    Buffer allocate(DataType type, long count);

    /** Copies {@code src} (host bytes, at least b.byteSize()) into {@code b}. */
    void write(Buffer b, MemorySegment src);

    /** The bytes of {@code b} as host memory (a copy for device memory; read it, don't keep it). */
    MemorySegment read(Buffer b);

    /** Frees every buffer this Mem allocated. */
    @Override
    void close();

    /** Host memory from a shared arena (accessible by jccl's worker threads, for async calls). */
    static Mem host() {
        return new HostMem();
    }

    /** {@link Mem#host()}. */
    final class HostMem implements Mem {
        private final Arena arena = Arena.ofShared();

        @Override
        public Buffer allocate(DataType type, long count) {
            return HostBuffer.allocate(type, count, arena);
        }

        @Override
        public void write(Buffer b, MemorySegment src) {
            MemorySegment.copy(src, 0, ((HostBuffer) b).segment(), 0, b.byteSize());
        }

        @Override
        public MemorySegment read(Buffer b) {
            return ((HostBuffer) b).segment();
        }

        @Override
        public void close() {
            arena.close();
        }
    }
}
