package org.jccl.cuda;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jccl.Buffer;
import org.jccl.DataType;
import org.jccl.HostBuffer;

/**
 * A typed view of GPU memory: a device pointer on one {@link CudaDevice}, a {@link DataType} and
 * a count. Made by {@link CudaDevice#allocate} (owned: {@link #close()} frees it),
 * {@link CudaDevice#allocateSymmetric} (NCCL's allocator, for symmetric windows: see
 * {@link NcclCommunicator#register}) or by {@link #wrap} around memory another library allocated
 * (not owned: {@link #close()} frees nothing). Slices share the allocation.
 *
 * <p>A closed buffer, or a view of a freed allocation, throws {@link IllegalStateException} on
 * every use instead of handing a dangling pointer to the GPU.
 */
public final class DeviceBuffer implements Buffer, AutoCloseable {

    /** One cuMemAlloc'd, ncclMemAlloc'd or foreign range, shared by a buffer and its slices. */
    private static final class Allocation {
        final long base;
        final boolean owned;
        /** ncclMemAlloc'd (CudaDevice#allocateSymmetric): freed by ncclMemFree. */
        final boolean symmetric;
        /** Released by its owner: every use is refused (the memory itself may outlive it, see windows). */
        final AtomicBoolean freed = new AtomicBoolean();
        /** Symmetric windows over this allocation that are open; guarded by this. */
        int windows;
        /** Closed by its owner while windows were open: ncclMemFree when the last one closes; guarded by this. */
        boolean freeAtLastWindow;

        Allocation(long base, boolean owned, boolean symmetric) {
            this.base = base;
            this.owned = owned;
            this.symmetric = symmetric;
        }
    }

    private final CudaDevice device;
    private final Allocation allocation;
    private final long pointer;
    private final DataType type;
    private final long count;
    private final boolean root;
    private volatile boolean closed;

    private DeviceBuffer(CudaDevice device, Allocation allocation, long pointer, DataType type, long count,
                         boolean root) {
        this.device = device;
        this.allocation = allocation;
        this.pointer = pointer;
        this.type = type;
        this.count = count;
        this.root = root;
    }

    static DeviceBuffer owned(CudaDevice device, long ptr, DataType type, long count) {
        return new DeviceBuffer(device, new Allocation(ptr, true, false), ptr, type, count, true);
    }

    /** A buffer over {@code ptr} from ncclMemAlloc, which {@link #close()} gives back with ncclMemFree. */
    static DeviceBuffer symmetric(CudaDevice device, long ptr, DataType type, long count) {
        return new DeviceBuffer(device, new Allocation(ptr, true, true), ptr, type, count, true);
    }

    /**
     * Wraps device memory that another library allocated (JCuda, bytedeco, DJL, TornadoVM, PyTorch
     * through a pointer): jccl uses it but never frees it. The driver is asked where the pointer
     * lives, so a host pointer, a pointer of another GPU or a range too small for {@code count}
     * elements is rejected here rather than faulting later.
     *
     * @throws IllegalArgumentException when the pointer is not device memory of {@code device}
     *                                  holding at least {@code count} elements of {@code type}
     */
    public static DeviceBuffer wrap(CudaDevice device, long devicePointer, DataType type, long count) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(type, "type");
        device.ensureOpen();
        if (count < 0) {
            throw new IllegalArgumentException("count is " + count + ": give a count >= 0");
        }
        if (devicePointer == 0) {
            throw new IllegalArgumentException("devicePointer is 0 (NULL): pass the address of device memory");
        }
        if (devicePointer % type.byteSize() != 0) {
            throw new IllegalArgumentException("devicePointer 0x" + Long.toHexString(devicePointer)
                    + " is not aligned to " + type.byteSize() + " bytes, as " + type + " elements must be");
        }
        long bytes = Math.multiplyExact(count, (long) type.byteSize());
        device.makeCurrent();
        Long memType = CudaDriver.pointerAttribute(CudaDriver.PTR_MEMORY_TYPE, devicePointer, 4);
        Long ordinal = CudaDriver.pointerAttribute(CudaDriver.PTR_DEVICE_ORDINAL, devicePointer, 4);
        if (memType == null || ordinal == null) {
            throw new IllegalArgumentException("devicePointer 0x" + Long.toHexString(devicePointer)
                    + " is not memory CUDA knows: pass a pointer from cuMemAlloc/cudaMalloc (or a library using them)");
        }
        if (memType != CudaDriver.MEMORYTYPE_DEVICE) {
            throw new IllegalArgumentException("devicePointer 0x" + Long.toHexString(devicePointer)
                    + " is host memory (CUmemorytype " + memType + "): wrap device memory, or use a HostBuffer");
        }
        if (ordinal != device.ordinal()) {
            throw new IllegalArgumentException("devicePointer 0x" + Long.toHexString(devicePointer) + " lives on device "
                    + ordinal + ", not on device " + device.ordinal() + ": wrap it with CudaDevice.open(" + ordinal + ")");
        }
        Long start = CudaDriver.pointerAttribute(CudaDriver.PTR_RANGE_START, devicePointer, 8);
        Long size = CudaDriver.pointerAttribute(CudaDriver.PTR_RANGE_SIZE, devicePointer, 8);
        if (start != null && size != null && devicePointer + bytes > start + size) {
            throw new IllegalArgumentException("devicePointer 0x" + Long.toHexString(devicePointer) + " has "
                    + (start + size - devicePointer) + " bytes left in its allocation but " + count + " x " + type
                    + " need " + bytes + ": pass a smaller count");
        }
        return new DeviceBuffer(device, new Allocation(devicePointer, false, false), devicePointer, type, count, true);
    }

    /**
     * The device address of the first element.
     *
     * @throws IllegalStateException when this buffer was closed or its allocation freed
     */
    public long pointer() {
        checkLive();
        return pointer;
    }

    /** The device address without the liveness check (callers have checked). */
    long rawPointer() {
        return pointer;
    }

    /** The device this memory lives on. */
    public CudaDevice device() {
        return device;
    }

    /** False once closed or once the allocation it views was freed. */
    public boolean isLive() {
        return !closed && !allocation.freed.get();
    }

    /** Whether {@link #close()} frees the memory (false for wrapped pointers and slices). */
    public boolean ownsMemory() {
        return allocation.owned && root;
    }

    /**
     * Whether this memory came from {@link CudaDevice#allocateSymmetric} (NCCL's allocator), so that
     * {@link NcclCommunicator#register} can make a symmetric window of it; true for its slices too.
     */
    public boolean isSymmetric() {
        return allocation.symmetric;
    }

    /** Whether {@code other} views the same allocation as this buffer. */
    boolean sameAllocation(DeviceBuffer other) {
        return other.allocation == allocation;
    }

    /** A window over this (symmetric, root) buffer opens: refused once the buffer was closed. */
    void windowOpened() {
        synchronized (allocation) {
            checkLive();
            allocation.windows++;
        }
    }

    /** A window over this buffer closed: the memory goes back to NCCL if the buffer was closed meanwhile. */
    void windowClosed() {
        boolean free;
        synchronized (allocation) {
            allocation.windows--;
            free = allocation.windows == 0 && allocation.freeAtLastWindow;
            allocation.freeAtLastWindow = false;
        }
        if (free) {
            freeNative();
        }
    }

    private void freeNative() {
        if (device.isClosed()) {
            return; // the primary context went with the device; the driver reclaims its memory
        }
        device.makeCurrent();
        if (allocation.symmetric) {
            NcclSymmetric.memFree(allocation.base);
        } else {
            CudaDriver.memFree(allocation.base);
        }
    }

    void checkLive() {
        if (closed || allocation.freed.get()) {
            throw new IllegalStateException(this + " was closed or its memory freed: allocate a new buffer "
                    + "(CudaDevice.allocate) instead of using it");
        }
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
    public Location location() {
        return Location.DEVICE;
    }

    /**
     * Copies {@code src} (same type and count) into this buffer; returns when the copy is done
     * (so a collective on any stream may read it next).
     */
    public void copyFrom(HostBuffer src) {
        checkCopy(src, "src");
        device.makeCurrent();
        if (byteSize() > 0) {
            CudaDriver.memcpyHtoD(pointer, src.segment(), byteSize());
            device.awaitLegacyStream(); // a pageable copy may still be in flight on return
        }
    }

    /** Copies this buffer into {@code dst} (same type and count); returns when the copy is done. */
    public void copyTo(HostBuffer dst) {
        checkCopy(dst, "dst");
        device.makeCurrent();
        if (byteSize() > 0) {
            CudaDriver.memcpyDtoH(dst.segment(), pointer, byteSize());
        }
    }

    /** Copies another device buffer (same type and count, any device with P2P or via the driver). */
    public void copyFrom(DeviceBuffer src) {
        checkCopy(src, "src");
        src.checkLive();
        device.makeCurrent();
        if (byteSize() > 0) {
            CudaDriver.memcpyDtoD(pointer, src.pointer, byteSize());
            device.awaitLegacyStream(); // device-to-device copies are asynchronous to the host
        }
    }

    /** Sets every byte to zero; returns when done. */
    public void clear() {
        fill((byte) 0);
    }

    /** Sets every byte to {@code value}; returns when done. */
    public void fill(byte value) {
        checkLive();
        device.makeCurrent();
        if (byteSize() > 0) {
            CudaDriver.memsetD8(pointer, value, byteSize());
            device.awaitLegacyStream(); // memset is asynchronous to the host
        }
    }

    /** Checks a copy between this live buffer and {@code other}, of the same type and count. */
    private void checkCopy(Buffer other, String name) {
        Objects.requireNonNull(other, name);
        if (other.type() != type || other.count() != count) {
            throw new IllegalArgumentException(name + " is " + other.type() + " x " + other.count() + " but this buffer is "
                    + type + " x " + count + ": copies need the same type and count (slice one of them)");
        }
        checkLive();
    }

    @Override
    public DeviceBuffer slice(long offset, long count) {
        Objects.checkFromIndexSize(offset, count, this.count);
        checkLive();
        return new DeviceBuffer(device, allocation, pointer + offset * type.byteSize(), type, count, false);
    }

    /** A view of the same bytes as another type (the byte size must divide evenly). */
    public DeviceBuffer reinterpret(DataType newType) {
        Objects.requireNonNull(newType, "newType");
        checkLive();
        if (byteSize() % newType.byteSize() != 0) {
            throw new IllegalArgumentException(byteSize() + " bytes are not a whole number of " + newType + " elements");
        }
        return new DeviceBuffer(device, allocation, pointer, newType, byteSize() / newType.byteSize(), false);
    }

    @Override
    public boolean overlaps(Buffer other) {
        if (!(other instanceof DeviceBuffer d) || d.device.ordinal() != device.ordinal()) {
            return false;
        }
        if (byteSize() == 0 || d.byteSize() == 0) {
            return false;
        }
        return pointer < d.pointer + d.byteSize() && d.pointer < pointer + byteSize();
    }

    @Override
    public boolean sameStart(Buffer other) {
        return other instanceof DeviceBuffer d && d.device.ordinal() == device.ordinal() && d.pointer == pointer;
    }

    /**
     * Frees the memory when this buffer allocated it; a slice or a wrapped pointer frees nothing
     * (the view is just closed). Idempotent. Wait for collectives that use the buffer first.
     * A symmetric buffer that is still registered ({@link SymmetricWindow} open) is refused for every
     * use at once, and its memory goes back to NCCL when its last window closes.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (root && allocation.owned && allocation.freed.compareAndSet(false, true)) {
            synchronized (allocation) {
                if (allocation.windows > 0) {
                    allocation.freeAtLastWindow = true;
                    return;
                }
            }
            freeNative();
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer[" + type + " x " + count + " on GPU " + device.ordinal() + " at 0x" + Long.toHexString(pointer)
                + (allocation.owned ? "" : ", foreign") + (allocation.symmetric ? ", symmetric" : "") + "]";
    }
}
