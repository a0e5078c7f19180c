package org.jccl.cli.perf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.jccl.Buffer;
import org.jccl.DataType;
import org.jccl.HostBuffer;

/**
 * Host buffers for the host backend: native memory, one shared arena per buffer (collectives may
 * touch the buffers from other threads, and a sweep frees each type's buffers before the next).
 */
public final class HostMemory extends OwningMemory {
    @Override
    public Buffer allocate(DataType type, long count) {
        Arena arena = Arena.ofShared();
        return own(HostBuffer.allocate(type, count, arena), arena::close);
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

    private static HostBuffer host(Buffer b) {
        if (b instanceof HostBuffer h) {
            return h;
        }
        throw new IllegalArgumentException("buffer " + b + " is not a host buffer: HostMemory handles host buffers only");
    }
}
