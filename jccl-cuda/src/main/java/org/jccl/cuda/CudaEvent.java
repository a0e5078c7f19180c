package org.jccl.cuda;

import java.time.Duration;
import java.util.Objects;

/**
 * A CUDA event: a marker recorded on a stream that completes when the work before it is done. A
 * collective's {@link NcclWork#event()} lets a compute stream wait for the collective without the
 * host waiting ({@link CudaStream#waitFor}).
 */
public final class CudaEvent extends CudaHandle implements AutoCloseable {
    private CudaEvent(CudaDevice device, long handle, boolean owned) {
        super(device, handle, owned);
    }

    static CudaEvent create(CudaDevice device, boolean timing) {
        Objects.requireNonNull(device, "device");
        device.makeCurrent();
        long h = CudaDriver.eventCreate(timing ? 0 : CudaDriver.EVENT_DISABLE_TIMING);
        return new CudaEvent(device, h, true);
    }

    /** An event owned by a communicator's pool: {@link #close()} leaves it to the pool. */
    static CudaEvent pooled(CudaDevice device) {
        device.makeCurrent();
        return new CudaEvent(device, CudaDriver.eventCreate(CudaDriver.EVENT_DISABLE_TIMING), false);
    }

    /** The raw CUevent handle. */
    public long handle() {
        return openHandle("event", "");
    }

    /** Records this event on {@code stream}. */
    public void record(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        device.makeCurrent();
        CudaDriver.eventRecord(handle(), stream.handle());
    }

    void recordRaw(long stream) {
        CudaDriver.eventRecord(handle, stream);
    }

    /** True once the work recorded before this event has finished (also for a never-recorded event). */
    public boolean isComplete() {
        device.makeCurrent();
        return queryRaw();
    }

    boolean queryRaw() {
        return CudaDriver.ready(CudaDriver.eventQuery(handle), "cuEventQuery");
    }

    /**
     * Waits until the event completes or {@code timeout} passes, polling (never blocking in the driver).
     *
     * @return true when complete, false on timeout
     */
    public boolean await(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        device.makeCurrent();
        org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
        while (!queryRaw()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            b.idle();
        }
        return true;
    }

    /** Milliseconds between {@code start} and this event (both created with {@link CudaDevice#createTimingEvent()}). */
    public float elapsedMillisSince(CudaEvent start) {
        device.makeCurrent();
        return CudaDriver.eventElapsedMillis(start.handle(), handle());
    }

    /** Destroys an event the caller created; a communicator's pooled event stays with its pool. Idempotent. */
    @Override
    public void close() {
        if (!owned || !markClosed()) {
            return;
        }
        if (!device.isClosed()) {
            device.makeCurrent();
            CudaDriver.eventDestroy(handle);
        }
    }

    /** Destroys a pooled event (the pool's own teardown). */
    void destroyPooled() {
        if (markClosed()) {
            CudaDriver.eventDestroy(handle);
        }
    }

    @Override
    public String toString() {
        return "CudaEvent[" + hex() + "]";
    }
}
