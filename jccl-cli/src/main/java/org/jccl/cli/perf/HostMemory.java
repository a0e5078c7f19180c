package org.jccl.cli.perf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.IdentityHashMap;
import java.util.Map;
import org.jccl.Buffer;
import org.jccl.DataType;
import org.jccl.HostBuffer;

/**
 * Host buffers for the host backend: native memory, one shared arena per buffer (collectives may
 * touch the buffers from other threads, and a sweep frees each type's buffers before the next).
 */
public final class HostMemory implements PerfMemory {
    private final Map<Buffer, Arena> arenas = new IdentityHashMap<>();

    @Override
    public synchronized Buffer allocate(DataType type, long count) {
        Arena arena = Arena.ofShared();
        HostBuffer b = HostBuffer.allocate(type, count, arena);
        arenas.put(b, arena);
        return b;
    }

    @Override
    public synchronized void free(Buffer buffer) {
        Arena a = arenas.remove(buffer);
        if (a == null) {
            throw new IllegalArgumentException("buffer " + buffer + " was not allocated by this HostMemory or is freed already");
        }
        a.close();
    }

    @Override
    public void upload(MemorySegment src, Buffer dst) {
        MemorySegment.copy(src, 0, host(dst).segment(), 0, dst.byteSize());
    }

    @Override
    public void download(Buffer src, MemorySegment dst) {
        MemorySegment.copy(host(src).segment(), 0, dst, 0, src.byteSize());
    }

    @Override
    public void clear(Buffer dst) {
        host(dst).segment().fill((byte) 0);
    }

    @Override
    public String device() {
        return "cpu";
    }

    @Override
    public synchronized void close() {
        for (Arena a : arenas.values()) {
            a.close();
        }
        arenas.clear();
    }

    private static HostBuffer host(Buffer b) {
        if (b instanceof HostBuffer h) {
            return h;
        }
        throw new IllegalArgumentException("buffer " + b + " is not a host buffer: HostMemory handles host buffers only");
    }
}
