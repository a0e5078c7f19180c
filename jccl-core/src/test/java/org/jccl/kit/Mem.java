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

    /**
     * Memory registered with {@code comm} ({@link org.jccl.Communicator#allocate}), on the ranks
     * where {@code registered} holds, ordinary host memory on the others (a mixed world: every
     * collective then takes the copy path). Registered memory lives until the communicator closes,
     * so this Mem hands out pieces of a few regions it keeps and reuses them after {@link #close()}:
     * pass the same instance to every case ({@code () -> mem}).
     */
    static Mem registered(org.jccl.Communicator comm, java.util.function.IntPredicate registered) {
        return new RegisteredMem(comm, registered.test(comm.rank()));
    }

    /** {@link Mem#registered}: a bump allocator over registered regions, reset by {@link #close()}. */
    final class RegisteredMem implements Mem {
        private static final long REGION = 8 << 20;
        private final org.jccl.Communicator comm;
        private final boolean register;
        private final java.util.List<MemorySegment> regions = new java.util.ArrayList<>();
        private HostMem plainNow = null;
        private int region;
        private long used;

        RegisteredMem(org.jccl.Communicator comm, boolean register) {
            this.comm = comm;
            this.register = register;
        }

        @Override
        public synchronized Buffer allocate(DataType type, long count) {
            if (!register) {
                if (plainNow == null) {
                    plainNow = new HostMem();
                }
                return plainNow.allocate(type, count);
            }
            long bytes = count * type.byteSize();
            long need = (bytes + 63) & ~63L;
            while (region < regions.size() && used + need > regions.get(region).byteSize()) {
                region++;
                used = 0;
            }
            if (region == regions.size()) {
                HostBuffer r = comm.allocate(DataType.UINT8, Math.max(REGION, need));
                regions.add(r.segment());
                used = 0;
            }
            MemorySegment s = regions.get(region).asSlice(used, bytes);
            used += need;
            s.fill((byte) 0);
            return HostBuffer.of(type, s, count);
        }

        @Override
        public void write(Buffer b, MemorySegment src) {
            HostMem.copyIn(b, src);
        }

        @Override
        public MemorySegment read(Buffer b) {
            return HostMem.bytes(b);
        }

        /** Frees nothing: the next case reuses the regions from the start. */
        @Override
        public synchronized void close() {
            region = 0;
            used = 0;
            if (plainNow != null) {
                plainNow.close();
                plainNow = null;
            }
        }
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
            copyIn(b, src);
        }

        @Override
        public MemorySegment read(Buffer b) {
            return bytes(b);
        }

        @Override
        public void close() {
            arena.close();
        }

        /** {@link #write} for any host buffer (registered memory too). */
        static void copyIn(Buffer b, MemorySegment src) {
            MemorySegment.copy(src, 0, ((HostBuffer) b).segment(), 0, b.byteSize());
        }

        /** {@link #read} for any host buffer. */
        static MemorySegment bytes(Buffer b) {
            return ((HostBuffer) b).segment();
        }
    }
}
