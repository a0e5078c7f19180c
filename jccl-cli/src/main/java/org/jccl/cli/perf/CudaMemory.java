package org.jccl.cli.perf;

import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import org.jccl.Buffer;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.cuda.CudaDevice;
import org.jccl.cuda.DeviceBuffer;

/** Device buffers on one GPU, for the nccl backend; copies to and from the host go through the driver. */
public final class CudaMemory implements PerfMemory {
    private final CudaDevice device;
    private final Set<DeviceBuffer> live = Collections.newSetFromMap(new IdentityHashMap<>());

    /** Buffers on {@code device} (which the caller keeps open for as long as this memory). */
    public CudaMemory(CudaDevice device) {
        this.device = device;
    }

    @Override
    public synchronized Buffer allocate(DataType type, long count) {
        DeviceBuffer b = device.allocate(type, count);
        live.add(b);
        // cuMemAlloc does not zero: the runner expects zeroed buffers.
        b.clear();
        return b;
    }

    @Override
    public synchronized void free(Buffer buffer) {
        if (!(buffer instanceof DeviceBuffer d) || !live.remove(d)) {
            throw new IllegalArgumentException("buffer " + buffer + " was not allocated by this CudaMemory or is freed already");
        }
        d.close();
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

    @Override
    public synchronized void close() {
        for (DeviceBuffer b : live) {
            b.close();
        }
        live.clear();
    }

    private static DeviceBuffer device(Buffer b) {
        if (b instanceof DeviceBuffer d) {
            return d;
        }
        throw new IllegalArgumentException("buffer " + b + " is not a device buffer: CudaMemory handles device buffers only");
    }
}
