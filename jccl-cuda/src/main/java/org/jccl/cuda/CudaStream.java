package org.jccl.cuda;

import java.time.Duration;
import java.util.Objects;
import org.jccl.CollectiveTimeoutException;
import org.jccl.InvalidUsageException;

/**
 * A CUDA stream: jccl's own ({@link CudaDevice#createStream()}, destroyed by {@link #close()}) or
 * a caller's raw {@code CUstream}/{@code cudaStream_t} ({@link #wrap(long)}, never destroyed by
 * jccl). Collectives accept a stream so they order with the caller's compute work.
 */
public final class CudaStream extends CudaHandle implements AutoCloseable {
    private CudaStream(CudaDevice device, long handle, boolean owned) {
        super(device, handle, owned);
    }

    static CudaStream owned(CudaDevice device, long handle) {
        return new CudaStream(device, handle, true);
    }

    /**
     * Wraps a stream another library created (PyTorch's {@code torch.cuda.current_stream().cuda_stream},
     * JCuda, ...). 0 is the legacy default stream. jccl never destroys a wrapped stream.
     */
    public static CudaStream wrap(long rawCuStream) {
        return new CudaStream(null, rawCuStream, false);
    }

    /** The raw CUstream handle. */
    public long handle() {
        return openHandle("stream", ": create a new one");
    }

    /** Makes work queued on this stream after this call wait until {@code event} completes (no host wait). */
    public void waitFor(CudaEvent event) {
        Objects.requireNonNull(event, "event");
        if (device != null) {
            device.makeCurrent();
        }
        CudaDriver.streamWaitEvent(handle(), event.handle());
    }

    /** Records {@code event} on this stream: it completes when the work queued so far is done. */
    public void record(CudaEvent event) {
        Objects.requireNonNull(event, "event");
        event.record(this);
    }

    /**
     * True when every operation queued on this stream has finished.
     *
     * @throws InvalidUsageException while the stream is being captured into a {@link CudaGraph}
     *                               (a query would invalidate the capture)
     */
    public boolean isIdle() {
        if (device != null) {
            device.makeCurrent();
        }
        long h = handle();
        refuseWhileCapturing(h, "queried");
        return CudaDriver.ready(CudaDriver.streamQuery(h), "cuStreamQuery");
    }

    /** Whether this stream is being captured into a CUDA graph now (by jccl or another library). */
    public boolean isCapturing() {
        if (device != null) {
            device.makeCurrent();
        }
        return CudaDriver.captureStatus(handle()) != CudaDriver.CAPTURE_NONE;
    }

    private void refuseWhileCapturing(long h, String what) {
        if (CudaDriver.captureStatus(h) != CudaDriver.CAPTURE_NONE) {
            throw new InvalidUsageException(this + " is being captured into a CUDA graph and cannot be " + what
                    + ": nothing on it runs until the graph is launched; end the capture and await the launch's work");
        }
    }

    /**
     * Waits until the stream is idle, polling (never blocking in the driver) so the deadline holds.
     *
     * @throws CollectiveTimeoutException when work is still queued after {@code timeout}
     * @throws InvalidUsageException      while the stream is being captured into a {@link CudaGraph}
     */
    public void synchronize(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (device != null) {
            device.makeCurrent();
        }
        refuseWhileCapturing(handle(), "synchronized");
        long deadline = System.nanoTime() + timeout.toNanos();
        org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
        while (!isIdle()) {
            if (System.nanoTime() - deadline > 0) {
                throw new CollectiveTimeoutException("stream " + hex() + " still busy after "
                        + timeout, java.util.List.of());
            }
            b.idle();
        }
    }

    /** Destroys a stream jccl created (pending work still completes); does nothing for a wrapped one. Idempotent. */
    @Override
    public void close() {
        if (markClosed() && owned && !device.isClosed()) {
            device.makeCurrent();
            CudaDriver.streamDestroy(handle);
        }
    }

    @Override
    public String toString() {
        return "CudaStream[" + hex() + (owned ? "" : ", wrapped") + "]";
    }
}
