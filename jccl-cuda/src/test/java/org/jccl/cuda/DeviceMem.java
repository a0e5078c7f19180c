package org.jccl.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.jccl.Buffer;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.kit.Mem;

/**
 * The conformance kit's buffers in GPU memory: {@link DeviceBuffer}s of one {@link CudaDevice}
 * (zero-filled on allocation), written by a host-to-device copy and read back by a
 * device-to-host copy into host memory that lives until {@link #close()}. Slices of a buffer
 * (DeviceBuffer.slice) work for both.
 */
final class DeviceMem implements Mem {
    private final CudaDevice device;
    private final Arena host = Arena.ofShared();
    private final List<DeviceBuffer> owned = new ArrayList<>();

    DeviceMem(CudaDevice device) {
        this.device = device;
    }

    @Override
    public Buffer allocate(DataType type, long count) {
        DeviceBuffer b = device.allocate(type, count);
        synchronized (owned) {
            owned.add(b);
        }
        b.clear();
        return b;
    }

    @Override
    public void write(Buffer b, MemorySegment src) {
        DeviceBuffer d = (DeviceBuffer) b;
        d.copyFrom(HostBuffer.of(d.type(), src, d.count()));
    }

    @Override
    public MemorySegment read(Buffer b) {
        DeviceBuffer d = (DeviceBuffer) b;
        MemorySegment out;
        synchronized (host) {
            out = host.allocate(Math.max(1, d.byteSize()), 8).asSlice(0, d.byteSize());
        }
        d.copyTo(HostBuffer.of(d.type(), out, d.count()));
        return out;
    }

    @Override
    public void close() {
        synchronized (owned) {
            for (DeviceBuffer b : owned) {
                b.close();
            }
            owned.clear();
        }
        host.close();
    }
}
