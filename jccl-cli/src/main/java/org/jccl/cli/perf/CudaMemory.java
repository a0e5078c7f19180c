package org.jccl.cli.perf;

import java.lang.foreign.MemorySegment;
import org.jccl.Buffer;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.cuda.CudaDevice;
import org.jccl.cuda.DeviceBuffer;

/** Device buffers on one GPU, for the nccl backend; copies to and from the host go through the driver. */
public final class CudaMemory extends OwningMemory {
    private final CudaDevice device;

    /** Buffers on {@code device} (which the caller keeps open for as long as this memory). */
    public CudaMemory(CudaDevice device) {
        this.device = device;
    }

    @Override
    public Buffer allocate(DataType type, long count) {
        DeviceBuffer b = device.allocate(type, count);
        own(b, b::close);
        // cuMemAlloc does not zero: the runner expects zeroed buffers.
        b.clear();
        return b;
    }

    @Override
    public void upload(MemorySegment src, Buffer dst) {
        DeviceBuffer d = device(dst);
        d.copyFrom(HostBuffer.of(d.type(), src, d.count()));
    }

    @Override
    public void download(Buffer src, MemorySegment dst) {
        DeviceBuffer d = device(src);
        d.copyTo(HostBuffer.of(d.type(), dst, d.count()));
    }

    @Override
    public void clear(Buffer dst) {
        device(dst).clear();
    }

    @Override
    public String device() {
        return "cuda:" + device.ordinal() + " " + device.name();
    }

    private static DeviceBuffer device(Buffer b) {
        if (b instanceof DeviceBuffer d) {
            return d;
        }
        throw new IllegalArgumentException("buffer " + b + " is not a device buffer: CudaMemory handles device buffers only");
    }
}
