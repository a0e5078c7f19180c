package org.jccl.cuda;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.Device;
import org.jccl.InvalidUsageException;
import org.jccl.Options;

/**
 * One CUDA GPU, opened through its primary context (the context the CUDA runtime, PyTorch and
 * NCCL share). Every jccl call that touches the device makes this context current on the calling
 * thread first, so any thread may use it.
 *
 * <pre>{@code
 * try (CudaDevice gpu = CudaDevice.open(0);
 *      DeviceBuffer x = gpu.allocate(DataType.FLOAT32, 1024)) {
 *     x.copyFrom(HostBuffer.of(new float[1024]));
 * }
 * }</pre>
 */
public final class CudaDevice implements Device, AutoCloseable {
    private static final ExecutorService SYNC = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "jccl-cuda-sync");
        t.setDaemon(true);
        return t;
    });

    private final int ordinal;
    private final int handle;
    private final long context;
    private final String name;
    private final int ccMajor;
    private final int ccMinor;
    private final AtomicBoolean closed = new AtomicBoolean();

    private CudaDevice(int ordinal, int handle, long context) {
        this.ordinal = ordinal;
        this.handle = handle;
        this.context = context;
        this.name = CudaDriver.deviceName(handle);
        this.ccMajor = CudaDriver.attribute(CudaDriver.ATTR_CC_MAJOR, handle);
        this.ccMinor = CudaDriver.attribute(CudaDriver.ATTR_CC_MINOR, handle);
    }

    /**
     * Opens GPU {@code ordinal} and retains its primary context (released by {@link #close()}).
     *
     * @throws IllegalArgumentException when the ordinal is not in {@code [0, count())}
     * @throws org.jccl.JcclException    when no CUDA driver is usable
     */
    public static CudaDevice open(int ordinal) {
        CudaDriver.requireAvailable();
        int n = CudaDriver.deviceCount();
        if (ordinal < 0 || ordinal >= n) {
            throw new IllegalArgumentException("ordinal is " + ordinal + " but this process sees " + n
                    + " CUDA device(s): pass 0.." + (n - 1) + " (check CUDA_VISIBLE_DEVICES)");
        }
        int dev = CudaDriver.device(ordinal);
        long ctx = CudaDriver.primaryCtxRetain(dev);
        try {
            CudaDriver.setCurrent(ctx);
            return new CudaDevice(ordinal, dev, ctx);
        } catch (RuntimeException e) {
            CudaDriver.primaryCtxRelease(dev);
            throw e;
        }
    }

    /** The number of CUDA devices visible to this process; 0 without a usable driver. */
    public static int count() {
        return Cuda.deviceCount();
    }

    @Override
    public int ordinal() {
        return ordinal;
    }

    /** "nccl": GPU communicators run on the NCCL backend. */
    @Override
    public String backend() {
        return "nccl";
    }

    /** The device name, e.g. "NVIDIA H100 80GB HBM3". */
    public String name() {
        return name;
    }

    /** Total device memory in bytes. */
    public long totalMemory() {
        return CudaDriver.totalMem(handle);
    }

    /** Free device memory in bytes, as the driver sees it now. */
    public long freeMemory() {
        makeCurrent();
        return CudaDriver.memGetInfo()[0];
    }

    /** Compute capability major version (9 on Hopper). */
    public int computeCapabilityMajor() {
        return ccMajor;
    }

    /** Compute capability minor version. */
    public int computeCapabilityMinor() {
        return ccMinor;
    }

    /** Number of streaming multiprocessors. */
    public int multiprocessorCount() {
        return CudaDriver.attribute(CudaDriver.ATTR_MULTIPROCESSOR_COUNT, handle);
    }

    /** PCI bus id, e.g. "0000:18:00.0". */
    public String pciBusId() {
        return CudaDriver.pciBusId(handle);
    }

    /** The 16-byte device UUID. */
    public byte[] uuid() {
        return CudaDriver.uuid(handle);
    }

    /** Whether the device supports NVLink SHARP multicast (reported only; jccl never uses it). */
    public boolean multicastSupported() {
        return CudaDriver.attributeOr(CudaDriver.ATTR_MULTICAST_SUPPORTED, handle, 0) != 0;
    }

    /** Whether this device can read and write {@code peer}'s memory directly (NVLink or PCIe P2P). */
    public boolean canAccessPeer(CudaDevice peer) {
        Objects.requireNonNull(peer, "peer");
        return peer.ordinal != ordinal && CudaDriver.canAccessPeer(handle, peer.handle);
    }

    /** Whether the link to {@code peer} carries every atomic natively (true for NVLink). */
    public boolean nativeAtomicsWith(CudaDevice peer) {
        return canAccessPeer(peer)
                && CudaDriver.p2pAttribute(CudaDriver.P2P_NATIVE_ATOMIC_SUPPORTED, handle, peer.handle) != 0;
    }

    /** Relative performance rank of the link to {@code peer} (lower is faster), or -1 without P2P. */
    public int linkPerformanceRank(CudaDevice peer) {
        return canAccessPeer(peer) ? CudaDriver.p2pAttribute(CudaDriver.P2P_PERFORMANCE_RANK, handle, peer.handle) : -1;
    }

    /** Lets kernels on this device access {@code peer}'s memory (idempotent). */
    public void enablePeerAccess(CudaDevice peer) {
        if (!canAccessPeer(peer)) {
            throw new IllegalArgumentException("device " + ordinal + " cannot access device " + peer.ordinal
                    + " directly (no NVLink/PCIe P2P): copy through the host instead");
        }
        makeCurrent();
        CudaDriver.ctxEnablePeerAccess(peer.context);
    }

    /**
     * Allocates {@code count} elements of {@code type} in device memory (uninitialised). Freed by
     * {@link DeviceBuffer#close()}.
     */
    public DeviceBuffer allocate(DataType type, long count) {
        Objects.requireNonNull(type, "type");
        if (count < 0) {
            throw new IllegalArgumentException("count is " + count + ": give a count >= 0");
        }
        long bytes = Math.multiplyExact(count, (long) type.byteSize());
        makeCurrent();
        // cuMemAlloc refuses 0 bytes; a 0-element buffer still gets a valid (unused) address.
        long ptr = CudaDriver.memAlloc(Math.max(bytes, 1));
        return DeviceBuffer.owned(this, ptr, type, count);
    }

    /**
     * Allocates {@code count} elements of {@code type} with NCCL's allocator ({@code ncclMemAlloc}:
     * CUDA virtual memory that NCCL can map into its peers), uninitialised, for symmetric windows:
     * {@link NcclCommunicator#register} it on every rank, and NCCL's symmetric kernels can run on it.
     * Usable like any {@link DeviceBuffer}; {@link DeviceBuffer#close()} gives it back with
     * {@code ncclMemFree}. Allocations are rounded up to NCCL's granularity (2 MiB or more on Hopper):
     * allocate a few large buffers and slice them.
     *
     * @throws InvalidUsageException    when symmetric memory is unavailable (the message says why:
     *                                  {@link Nccl#symmetricMemoryUnavailableCause()})
     * @throws IllegalArgumentException when {@code count} is negative
     */
    public DeviceBuffer allocateSymmetric(DataType type, long count) {
        Objects.requireNonNull(type, "type");
        if (count < 0) {
            throw new IllegalArgumentException("count is " + count + ": give a count >= 0");
        }
        String why = Nccl.symmetricMemoryUnavailableCause();
        if (why != null) {
            throw new InvalidUsageException("allocateSymmetric: NCCL symmetric memory is not available: " + why
                    + "; allocate(type, count) gives ordinary device memory, which every collective takes too");
        }
        long bytes = Math.multiplyExact(count, (long) type.byteSize());
        makeCurrent();
        long ptr = NcclSymmetric.memAlloc(Math.max(bytes, 1));
        return DeviceBuffer.symmetric(this, ptr, type, count);
    }

    /** A new stream of this device (non-blocking with respect to the legacy default stream). */
    public CudaStream createStream() {
        makeCurrent();
        return CudaStream.owned(this, CudaDriver.streamCreate(CudaDriver.STREAM_NON_BLOCKING));
    }

    /** A new event of this device (timing disabled, the cheapest kind). */
    public CudaEvent createEvent() {
        return CudaEvent.create(this, false);
    }

    /** A new event of this device that can measure elapsed time. */
    public CudaEvent createTimingEvent() {
        return CudaEvent.create(this, true);
    }

    /** Waits for all work on this device, at most the default deadline ({@link Options#DEFAULT_TIMEOUT}). */
    public void synchronize() {
        synchronize(Options.DEFAULT_TIMEOUT);
    }

    /**
     * Waits for all work on this device. cuCtxSynchronize has no deadline, so it runs on a helper
     * thread and this call gives up after {@code timeout}.
     *
     * @throws CollectiveTimeoutException when the device is still busy after {@code timeout}
     */
    public void synchronize(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        ensureOpen();
        Future<?> f = SYNC.submit(() -> {
            CudaDriver.setCurrent(context);
            CudaDriver.ctxSynchronize();
        });
        try {
            f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new CollectiveTimeoutException("device " + ordinal + " still had work after " + timeout
                    + " (a collective waiting for a peer?)", java.util.List.of());
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new org.jccl.JcclException("interrupted while synchronizing device " + ordinal);
        }
    }

    /** Makes this device's primary context current on the calling thread (for interop with other CUDA code). */
    public void makeCurrent() {
        ensureOpen();
        // Reading the current context costs less than setting it, and it is nearly always ours already.
        if (!CudaDriver.isCurrent(context)) {
            CudaDriver.setCurrent(context);
        }
    }

    /** As {@link #makeCurrent()}, reading the current context into {@code scratch} (8 bytes the caller owns). */
    void makeCurrent(java.lang.foreign.MemorySegment scratch) {
        ensureOpen();
        if (!CudaDriver.isCurrent(context, scratch)) {
            CudaDriver.setCurrent(context);
        }
    }

    /**
     * Waits until the work queued so far on the legacy default stream has finished. The driver's
     * "synchronous" host-to-device copy from pageable memory, device-to-device copy and memset may
     * return before the GPU is done, and jccl's streams do not wait for the legacy stream, so
     * DeviceBuffer's copies call this before they return. Polls an event (with the default
     * deadline) rather than blocking in the driver.
     */
    void awaitLegacyStream() {
        long ev = CudaDriver.eventCreate(CudaDriver.EVENT_DISABLE_TIMING);
        try {
            CudaDriver.eventRecord(ev, 0L);
            long deadline = System.nanoTime() + Options.DEFAULT_TIMEOUT.toNanos();
            org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
            while (true) {
                int r = CudaDriver.eventQuery(ev);
                if (r == CudaDriver.SUCCESS) {
                    return;
                }
                if (r != CudaDriver.NOT_READY) {
                    throw CudaDriver.error(r, "cuEventQuery");
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new CollectiveTimeoutException("a copy on device " + ordinal + " did not finish within "
                            + Options.DEFAULT_TIMEOUT, java.util.List.of());
                }
                b.idle();
            }
        } finally {
            CudaDriver.eventDestroy(ev);
        }
    }

    /** The raw CUcontext (primary context) handle. */
    public long contextHandle() {
        return context;
    }

    /** The raw CUdevice handle. */
    int handle() {
        return handle;
    }

    /** Whether FP8 collectives can run on this device with the loaded NCCL (sm_90+ and NCCL 2.24+). */
    public boolean supportsFp8() {
        return ccMajor >= 9 && Nccl.version() >= 22400;
    }

    void ensureOpen() {
        if (closed.get()) {
            throw new InvalidUsageException("CudaDevice " + ordinal + " is closed: open it again with CudaDevice.open("
                    + ordinal + ")");
        }
    }

    boolean isClosed() {
        return closed.get();
    }

    /** Releases the primary context retained by {@link #open(int)}. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            CudaDriver.primaryCtxRelease(handle);
        }
    }

    @Override
    public String toString() {
        return "CudaDevice[" + ordinal + ": " + name + ", sm_" + ccMajor + ccMinor + "]";
    }

    /**
     * How a thread waits for the GPU without blocking in the driver (so every wait keeps its
     * deadline): spin for the first 50 us, which covers a small collective, then yield up to 2 ms,
     * then sleep in 50 us steps so a long wait costs no CPU. One per wait: {@code idle()} between
     * polls.
     */
    static org.jccl.spi.TimedIdleStrategy gpuWait() {
        return new org.jccl.spi.TimedIdleStrategy(50_000, 2_000_000, 50_000);
    }
}
