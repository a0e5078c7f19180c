package org.jccl.cli.perf;

import java.lang.foreign.MemorySegment;
import org.jccl.Buffer;
import org.jccl.DataType;

/**
 * Where {@code jccl perf} puts the buffers it hands to collectives: host memory for the host
 * backend ({@link HostMemory}), device memory for GPU backends. The runner fills and checks
 * buffers through host staging segments, so it never needs to know where the bytes live.
 */
public interface PerfMemory extends AutoCloseable {

    /** A zeroed buffer of {@code count} elements of {@code type}, valid until {@link #close()}. */
    Buffer allocate(DataType type, long count);

    /** Frees a buffer of {@link #allocate} now rather than at {@link #close()}. */
    void free(Buffer buffer);

    /** Copies {@code dst.byteSize()} bytes from the start of the host segment {@code src} into {@code dst}. */
    void upload(MemorySegment src, Buffer dst);

    /** Copies {@code src.byteSize()} bytes of {@code src} to the start of the host segment {@code dst}. */
    void download(Buffer src, MemorySegment dst);

    /** Sets every byte of {@code dst} to zero. */
    void clear(Buffer dst);

    /** What the buffers live on, for the header: "cpu", or a GPU's name and ordinal. */
    String device();

    /** Frees every buffer this memory allocated. */
    @Override
    void close();
}
