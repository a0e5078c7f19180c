package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * GPU code loaded into a device's context (cuModuleLoadData) from PTX text or a cubin, and its
 * kernels launched on a stream (cuLaunchKernel). The base for jccl's own kernels.
 */
public final class CudaModule implements AutoCloseable {
    private final CudaDevice device;
    private final long module;
    private final Map<String, Long> functions = new HashMap<>();
    private boolean closed;

    private CudaModule(CudaDevice device, long module) {
        this.device = device;
        this.module = module;
    }

    /** Loads PTX source text (JIT-compiled by the driver for this GPU). */
    public static CudaModule loadPtx(CudaDevice device, String ptx) {
        Objects.requireNonNull(ptx, "ptx");
        return load(device, (ptx + "\0").getBytes(StandardCharsets.US_ASCII));
    }

    /** Loads a module image: a cubin, a fatbin, or NUL-terminated PTX. */
    public static CudaModule load(CudaDevice device, byte[] image) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(image, "image");
        if (image.length == 0) {
            throw new IllegalArgumentException("image is empty: pass PTX text or a cubin");
        }
        device.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment img = a.allocate(image.length, 16);
            img.copyFrom(MemorySegment.ofArray(image));
            return new CudaModule(device, CudaDriver.moduleLoadData(img));
        }
    }

    /** The raw CUfunction of kernel {@code name} (an {@code extern "C"} name or a mangled one). */
    public synchronized long function(String name) {
        Objects.requireNonNull(name, "name");
        ensureOpen();
        Long f = functions.get(name);
        if (f == null) {
            device.makeCurrent();
            try (Arena a = Arena.ofConfined()) {
                f = CudaDriver.moduleGetFunction(module, a.allocateFrom(name));
            }
            functions.put(name, f);
        }
        return f;
    }

    /**
     * The value of the module's {@code int} global {@code name} (a {@code __device__ int} with C
     * linkage), or {@code absent} when the module has no global of that name.
     */
    public synchronized int globalInt(String name, int absent) {
        Objects.requireNonNull(name, "name");
        ensureOpen();
        device.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            long p = CudaDriver.moduleGetGlobal(module, a.allocateFrom(name));
            if (p == 0) {
                return absent;
            }
            MemorySegment v = a.allocate(JAVA_INT);
            CudaDriver.memcpyDtoH(v, p, 4);
            return v.get(JAVA_INT, 0);
        }
    }

    /**
     * Launches kernel {@code name} on a 1-D grid. Arguments map to the kernel's parameters in
     * order: a {@link DeviceBuffer} passes its pointer, Long/Double 8 bytes, Integer/Float 4,
     * Short 2, Byte 1.
     */
    public void launch(String name, int gridX, int blockX, int sharedBytes, CudaStream stream, Object... args) {
        if (gridX < 1 || blockX < 1 || blockX > 1024) {
            throw new IllegalArgumentException("grid " + gridX + " / block " + blockX
                    + ": need grid >= 1 and 1 <= block <= 1024");
        }
        Objects.requireNonNull(stream, "stream");
        long f = function(name);
        device.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment values = a.allocate(8L * Math.max(1, args.length), 8);
            MemorySegment params = a.allocate(ADDRESS, Math.max(1, args.length));
            for (int i = 0; i < args.length; i++) {
                MemorySegment slot = values.asSlice(8L * i, 8);
                Object v = args[i];
                switch (v) {
                    case DeviceBuffer b -> slot.set(JAVA_LONG, 0, b.pointer());
                    case Long l -> slot.set(JAVA_LONG, 0, l);
                    case Double d -> slot.set(JAVA_DOUBLE, 0, d);
                    case Integer n -> slot.set(JAVA_INT, 0, n);
                    case Float x -> slot.set(JAVA_FLOAT, 0, x);
                    case Short s -> slot.set(JAVA_SHORT, 0, s);
                    case Byte b -> slot.set(JAVA_BYTE, 0, b);
                    case null -> throw new IllegalArgumentException("argument " + i + " is null");
                    default -> throw new IllegalArgumentException("argument " + i + " is a " + v.getClass().getName()
                            + ": pass a DeviceBuffer, Long, Double, Integer, Float, Short or Byte");
                }
                params.setAtIndex(ADDRESS, i, slot);
            }
            CudaDriver.launchKernel(f, gridX, 1, 1, blockX, 1, 1, sharedBytes, stream.handle(), params);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("module is closed: load it again");
        }
    }

    /** Unloads the module. Idempotent. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            if (!device.isClosed()) {
                device.makeCurrent();
                CudaDriver.moduleUnload(module);
            }
        }
    }
}
