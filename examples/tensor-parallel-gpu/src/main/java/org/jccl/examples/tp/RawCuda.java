package org.jccl.examples.tp;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * Five functions of the CUDA driver called directly, standing in for "another library" (JCuda,
 * bytedeco, a PyTorch tensor's {@code data_ptr()} and {@code cuda_stream}): the example allocates
 * device memory and a stream here, outside jccl, and hands them to jccl with
 * {@code DeviceBuffer.wrap} and {@code CudaStream.wrap}. Loaded on first use, so a machine
 * without {@code libcuda.so.1} never touches it.
 */
final class RawCuda {
    private RawCuda() {
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup CUDA = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
    private static final MethodHandle MEM_ALLOC = fn("cuMemAlloc_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle MEM_FREE = fn("cuMemFree_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    private static final MethodHandle STREAM_CREATE = fn("cuStreamCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle STREAM_DESTROY = fn("cuStreamDestroy_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS));

    private static MethodHandle fn(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(CUDA.find(name).orElseThrow(() ->
                new UnsatisfiedLinkError("libcuda.so.1 has no " + name)), d);
    }

    /** cuMemAlloc in the calling thread's current context: a device pointer of {@code bytes}. */
    static long memAlloc(long bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            check((int) MEM_ALLOC.invokeExact(out, bytes), "cuMemAlloc");
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** cuMemFree. */
    static void memFree(long pointer) {
        try {
            check((int) MEM_FREE.invokeExact(pointer), "cuMemFree");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** cuStreamCreate (CU_STREAM_NON_BLOCKING) in the current context: the raw CUstream. */
    static long streamCreate() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check((int) STREAM_CREATE.invokeExact(out, 1), "cuStreamCreate");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** cuStreamDestroy. */
    static void streamDestroy(long stream) {
        try {
            check((int) STREAM_DESTROY.invokeExact(MemorySegment.ofAddress(stream)), "cuStreamDestroy");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static void check(int result, String what) {
        if (result != 0) {
            throw new IllegalStateException(what + " failed: CUresult " + result);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException e) {
            return e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
