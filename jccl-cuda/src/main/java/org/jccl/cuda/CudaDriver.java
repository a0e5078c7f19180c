package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The CUDA driver API ({@code libcuda.so.1}) bound through the Foreign Function and Memory API.
 * Every handle is a {@code static final} downcall; this class is initialised (and the library
 * loaded) only when something first needs the GPU, so jccl-core never touches it. Versioned
 * symbols are bound by their exported names ({@code cuMemAlloc_v2}, ...), the legacy-default-stream
 * variants (not {@code _ptds}).
 *
 * <p>Handles take raw pointers ({@code CUdeviceptr}, {@code CUstream}, {@code CUevent},
 * {@code CUcontext}) as {@code long}: on x86-64 and AArch64 a pointer and a 64-bit integer travel
 * in the same registers, and no {@link MemorySegment} has to be made per call. Every non-success
 * result becomes a {@link CudaException} carrying cuGetErrorName and cuGetErrorString.
 */
final class CudaDriver {
    /** CUDA_SUCCESS. */
    static final int SUCCESS = 0;
    /** CUDA_ERROR_NOT_READY: an event or stream query that is still pending. */
    static final int NOT_READY = 600;
    /** CUDA_ERROR_NOT_FOUND (e.g. a module without the named symbol). */
    static final int NOT_FOUND = 500;
    /** CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED. */
    static final int PEER_ACCESS_ALREADY_ENABLED = 704;

    /** CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT. */
    static final int ATTR_MULTIPROCESSOR_COUNT = 16;
    /** CU_DEVICE_ATTRIBUTE_PCI_BUS_ID. */
    static final int ATTR_PCI_BUS_ID = 33;
    /** CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR. */
    static final int ATTR_CC_MAJOR = 75;
    /** CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR. */
    static final int ATTR_CC_MINOR = 76;
    /** CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED (reported only; jccl never creates multicast objects). */
    static final int ATTR_MULTICAST_SUPPORTED = 132;

    /** CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (int). */
    static final int PTR_DEVICE_ORDINAL = 9;
    /** CU_POINTER_ATTRIBUTE_RANGE_START_ADDR (CUdeviceptr). */
    static final int PTR_RANGE_START = 11;
    /** CU_POINTER_ATTRIBUTE_RANGE_SIZE (size_t). */
    static final int PTR_RANGE_SIZE = 12;
    /** CU_POINTER_ATTRIBUTE_MEMORY_TYPE (int; 2 = device). */
    static final int PTR_MEMORY_TYPE = 2;
    /** CU_MEMORYTYPE_DEVICE. */
    static final int MEMORYTYPE_DEVICE = 2;

    /** CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK. */
    static final int P2P_PERFORMANCE_RANK = 1;
    /** CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED. */
    static final int P2P_ACCESS_SUPPORTED = 2;
    /** CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED (all atomics over the link: NVLink). */
    static final int P2P_NATIVE_ATOMIC_SUPPORTED = 3;

    /** CUstreamCaptureStatus: not capturing, capturing, capture invalidated by an unsupported call. */
    static final int CAPTURE_NONE = 0, CAPTURE_ACTIVE = 1, CAPTURE_INVALIDATED = 2;
    /** CUstreamCaptureMode values. */
    static final int CAPTURE_MODE_GLOBAL = 0, CAPTURE_MODE_THREAD_LOCAL = 1, CAPTURE_MODE_RELAXED = 2;
    /** CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. */
    static final int STREAM_CAPTURE_INVALIDATED = 901;
    /** CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, the special stream handles besides 0. */
    static final long STREAM_LEGACY = 1, STREAM_PER_THREAD = 2;

    /** CU_STREAM_NON_BLOCKING. */
    static final int STREAM_NON_BLOCKING = 1;
    /** CU_EVENT_DISABLE_TIMING. */
    static final int EVENT_DISABLE_TIMING = 2;

    /** Size of a CUipcMemHandle. */
    static final int IPC_HANDLE_SIZE = 64;
    private static final MemoryLayout IPC_HANDLE = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(IPC_HANDLE_SIZE, JAVA_BYTE));

    private static final NativeBinder LIB = NativeBinder.open("libcuda.so.1", NativeBinder.candidates("JCCL_CUDA_LIBRARY",
            "libcuda.so.1", "/usr/lib/x86_64-linux-gnu", "/usr/lib", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"));

    private static final MethodHandle cuGetErrorName = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), "cuGetErrorName");
    private static final MethodHandle cuGetErrorString = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), "cuGetErrorString");
    private static final MethodHandle cuInit = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_INT), "cuInit");
    private static final MethodHandle cuDriverGetVersion = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS), "cuDriverGetVersion");
    private static final MethodHandle cuDeviceGetCount = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS), "cuDeviceGetCount");
    private static final MethodHandle cuDeviceGet = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuDeviceGet");
    private static final MethodHandle cuDeviceGetName = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceGetName");
    private static final MethodHandle cuDeviceGetAttribute = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceGetAttribute");
    private static final MethodHandle cuDeviceTotalMem = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuDeviceTotalMem_v2", "cuDeviceTotalMem");
    private static final MethodHandle cuDeviceGetUuid = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
    private static final MethodHandle cuDeviceGetPCIBusId = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceGetPCIBusId");
    private static final MethodHandle cuDevicePrimaryCtxRetain = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuDevicePrimaryCtxRetain");
    private static final MethodHandle cuDevicePrimaryCtxRelease = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_INT), "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
    // No critical (trivial) downcalls on the hot path: inside jccl's compiled launch code a critical
    // cuEventRecord cost more per call than a regular downcall, not less (docs/BENCHMARKS.md, NCCL
    // backend), and a critical call that blocks in the driver (a full launch queue) would hold
    // every other Java thread at the next safepoint.
    private static final MethodHandle cuCtxSetCurrent = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuCtxSetCurrent");
    private static final MethodHandle cuCtxGetCurrent = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS), "cuCtxGetCurrent");
    private static final MethodHandle cuCtxSynchronize = LIB.required(
            FunctionDescriptor.of(JAVA_INT), "cuCtxSynchronize");
    private static final MethodHandle cuCtxEnablePeerAccess = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT), "cuCtxEnablePeerAccess");
    private static final MethodHandle cuDeviceCanAccessPeer = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceCanAccessPeer");
    private static final MethodHandle cuDeviceGetP2PAttribute = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT), "cuDeviceGetP2PAttribute");
    private static final MethodHandle cuMemGetInfo = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuMemGetInfo_v2", "cuMemGetInfo");
    private static final MethodHandle cuMemAlloc = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), "cuMemAlloc_v2", "cuMemAlloc");
    private static final MethodHandle cuMemFree = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuMemFree_v2", "cuMemFree");
    private static final MethodHandle cuMemAllocHost = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), "cuMemAllocHost_v2", "cuMemAllocHost");
    private static final MethodHandle cuMemFreeHost = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuMemFreeHost");
    private static final MethodHandle cuMemcpyHtoD = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), "cuMemcpyHtoD_v2", "cuMemcpyHtoD");
    private static final MethodHandle cuMemcpyDtoH = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), "cuMemcpyDtoH_v2", "cuMemcpyDtoH");
    // Heap segments (Java arrays) can only be passed to critical downcalls that allow heap access;
    // the GC is held off for the duration of the copy.
    private static final MethodHandle cuMemcpyHtoDHeap = LIB.bindHeap(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG), "cuMemcpyHtoD_v2", "cuMemcpyHtoD");
    private static final MethodHandle cuMemcpyDtoHHeap = LIB.bindHeap(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), "cuMemcpyDtoH_v2", "cuMemcpyDtoH");
    private static final MethodHandle cuMemcpyDtoD = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), "cuMemcpyDtoD_v2", "cuMemcpyDtoD");
    private static final MethodHandle cuMemcpyHtoDAsync = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync");
    private static final MethodHandle cuMemcpyDtoHAsync = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync");
    private static final MethodHandle cuMemcpyDtoDAsync = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync");
    private static final MethodHandle cuMemcpyPeerAsync = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            "cuMemcpyPeerAsync");
    private static final MethodHandle cuMemsetD8 = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BYTE, JAVA_LONG), "cuMemsetD8_v2", "cuMemsetD8");
    private static final MethodHandle cuMemsetD8Async = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BYTE, JAVA_LONG, JAVA_LONG), "cuMemsetD8Async");
    private static final MethodHandle cuPointerGetAttribute = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG), "cuPointerGetAttribute");
    private static final MethodHandle cuStreamCreate = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuStreamCreate");
    private static final MethodHandle cuStreamDestroy = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuStreamDestroy_v2", "cuStreamDestroy");
    private static final MethodHandle cuStreamSynchronize = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuStreamSynchronize");
    private static final MethodHandle cuStreamQuery = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuStreamQuery");
    private static final MethodHandle cuStreamWaitEvent = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT), "cuStreamWaitEvent");
    private static final MethodHandle cuEventCreate = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuEventCreate");
    private static final MethodHandle cuEventDestroy = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuEventDestroy_v2", "cuEventDestroy");
    private static final MethodHandle cuEventRecord = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG), "cuEventRecord");
    private static final MethodHandle cuEventQuery = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuEventQuery");
    private static final MethodHandle cuEventSynchronize = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuEventSynchronize");
    private static final MethodHandle cuEventElapsedTime = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), "cuEventElapsedTime_v2", "cuEventElapsedTime");
    private static final MethodHandle cuIpcGetMemHandle = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), "cuIpcGetMemHandle");
    private static final MethodHandle cuIpcOpenMemHandle = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, IPC_HANDLE, JAVA_INT), "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle");
    private static final MethodHandle cuIpcCloseMemHandle = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuIpcCloseMemHandle");
    private static final MethodHandle cuModuleLoadData = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuModuleLoadData");
    private static final MethodHandle cuModuleGetFunction = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS), "cuModuleGetFunction");
    private static final MethodHandle cuModuleGetGlobal = LIB.required(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS), "cuModuleGetGlobal_v2");
    private static final MethodHandle cuModuleUnload = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuModuleUnload");
    private static final MethodHandle cuLaunchKernel = LIB.required(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                    JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS), "cuLaunchKernel");
    // A launch with attributes (CUDA 12.0+; programmatic dependent launch). Optional: without it, cuLaunchKernel.
    private static final MethodHandle cuLaunchKernelEx = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS), "cuLaunchKernelEx");

    // Stream capture and graphs (CUDA 11.4+). Optional: a driver without them keeps everything else.
    private static final MethodHandle cuStreamBeginCapture = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT), "cuStreamBeginCapture_v2");
    private static final MethodHandle cuStreamEndCapture = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS), "cuStreamEndCapture");
    private static final MethodHandle cuStreamIsCapturing = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS), "cuStreamIsCapturing");
    private static final MethodHandle cuThreadExchangeStreamCaptureMode = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, ADDRESS), "cuThreadExchangeStreamCaptureMode");
    private static final MethodHandle cuGraphInstantiateWithFlags = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), "cuGraphInstantiateWithFlags");
    private static final MethodHandle cuGraphLaunch = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG), "cuGraphLaunch");
    private static final MethodHandle cuGraphExecDestroy = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuGraphExecDestroy");
    private static final MethodHandle cuGraphDestroy = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), "cuGraphDestroy");
    private static final MethodHandle cuGraphGetNodes = LIB.optional(
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS), "cuGraphGetNodes");

    /** Null when usable, else why not (library missing, a symbol missing, or cuInit failed). */
    private static final String FAILURE;

    static {
        String f = LIB.failure();
        if (f == null) {
            try {
                check(invokeInt(cuInit, 0), "cuInit(0)");
            } catch (RuntimeException e) {
                f = e.getMessage();
            }
        }
        FAILURE = f;
    }

    private CudaDriver() {
    }

    private static int invokeInt(MethodHandle h, int a) {
        try {
            return (int) h.invokeExact(a);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Null when the driver is usable, else the reason. */
    static String failure() {
        return FAILURE;
    }

    /** The path or soname the driver was loaded from, or null. */
    static String loadedName() {
        return LIB.loadedName();
    }

    /** Throws a clear exception when the driver cannot be used. */
    static void requireAvailable() {
        if (FAILURE != null) {
            throw new org.jccl.JcclException("CUDA driver unavailable: " + FAILURE
                    + " (set JCCL_CUDA_LIBRARY to the path of libcuda.so.1 if it is installed elsewhere)");
        }
    }

    // ---- errors ----

    /** Throws a CudaException for a non-success result. */
    static void check(int result, String call) {
        if (result != SUCCESS) {
            throw error(result, call);
        }
    }

    /** A query's result (cuStreamQuery, cuEventQuery): true on SUCCESS, false on NOT_READY; else throws. */
    static boolean ready(int result, String call) {
        if (result == NOT_READY) {
            return false;
        }
        check(result, call);
        return true;
    }

    static CudaException error(int result, String call) {
        return new CudaException(call, result, errorName(result), errorString(result));
    }

    static String errorName(int result) {
        return errorText(cuGetErrorName, result);
    }

    static String errorString(int result) {
        return errorText(cuGetErrorString, result);
    }

    private static String errorText(MethodHandle h, int result) {
        try {
            MemorySegment out = Scratch.get();
            out.set(JAVA_LONG, 0, 0L);
            int r = (int) h.invokeExact(result, out);
            long p = out.get(JAVA_LONG, 0);
            if (r != SUCCESS || p == 0) {
                return "unknown CUresult " + result;
            }
            return MemorySegment.ofAddress(p).reinterpret(4096).getString(0);
        } catch (Throwable t) {
            return "CUresult " + result + " (no error text: " + t.getMessage() + ")";
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    // ---- devices and contexts ----

    static int driverVersion() {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDriverGetVersion.invokeExact(s), "cuDriverGetVersion");
            return s.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int deviceCount() {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDeviceGetCount.invokeExact(s), "cuDeviceGetCount");
            return s.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int device(int ordinal) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDeviceGet.invokeExact(s, ordinal), "cuDeviceGet(" + ordinal + ")");
            return s.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static String deviceName(int dev) {
        try {
            MemorySegment s = Scratch.get();
            s.fill((byte) 0);
            check((int) cuDeviceGetName.invokeExact(s, 256, dev), "cuDeviceGetName");
            return s.getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static String pciBusId(int dev) {
        try {
            MemorySegment s = Scratch.get();
            s.fill((byte) 0);
            check((int) cuDeviceGetPCIBusId.invokeExact(s, 64, dev), "cuDeviceGetPCIBusId");
            return s.getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int attribute(int attr, int dev) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDeviceGetAttribute.invokeExact(s, attr, dev), "cuDeviceGetAttribute(" + attr + ")");
            return s.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The attribute, or {@code fallback} when this driver does not know it. */
    static int attributeOr(int attr, int dev, int fallback) {
        try {
            MemorySegment s = Scratch.get();
            int r = (int) cuDeviceGetAttribute.invokeExact(s, attr, dev);
            return r == SUCCESS ? s.get(JAVA_INT, 0) : fallback;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long totalMem(int dev) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDeviceTotalMem.invokeExact(s, dev), "cuDeviceTotalMem");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static byte[] uuid(int dev) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDeviceGetUuid.invokeExact(s, dev), "cuDeviceGetUuid");
            return s.asSlice(0, 16).toArray(JAVA_BYTE);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long primaryCtxRetain(int dev) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDevicePrimaryCtxRetain.invokeExact(s, dev), "cuDevicePrimaryCtxRetain");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void primaryCtxRelease(int dev) {
        try {
            check((int) cuDevicePrimaryCtxRelease.invokeExact(dev), "cuDevicePrimaryCtxRelease");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void setCurrent(long ctx) {
        int r;
        try {
            r = (int) cuCtxSetCurrent.invokeExact(ctx);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r != SUCCESS) {
            throw error(r, "cuCtxSetCurrent");
        }
    }

    /** Whether {@code ctx} is this thread's current context (a read of the driver's thread state). */
    static boolean isCurrent(long ctx) {
        return isCurrent(ctx, Scratch.get());
    }

    /** As {@link #isCurrent(long)} with the caller's 8-byte scratch {@code s} (no thread-local lookup). */
    static boolean isCurrent(long ctx, MemorySegment s) {
        try {
            int r = (int) cuCtxGetCurrent.invokeExact(s);
            return r == SUCCESS && s.get(JAVA_LONG, 0) == ctx;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long getCurrent() {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuCtxGetCurrent.invokeExact(s), "cuCtxGetCurrent");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void ctxSynchronize() {
        try {
            check((int) cuCtxSynchronize.invokeExact(), "cuCtxSynchronize");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Enables access from the current context to {@code peerCtx}; already enabled is fine. */
    static void ctxEnablePeerAccess(long peerCtx) {
        try {
            int r = (int) cuCtxEnablePeerAccess.invokeExact(peerCtx, 0);
            if (r != SUCCESS && r != PEER_ACCESS_ALREADY_ENABLED) {
                throw error(r, "cuCtxEnablePeerAccess");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static boolean canAccessPeer(int dev, int peer) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDeviceCanAccessPeer.invokeExact(s, dev, peer), "cuDeviceCanAccessPeer");
            return s.get(JAVA_INT, 0) != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int p2pAttribute(int attr, int src, int dst) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuDeviceGetP2PAttribute.invokeExact(s, attr, src, dst), "cuDeviceGetP2PAttribute");
            return s.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- memory ----

    /** {free, total} bytes of the current context's device. */
    static long[] memGetInfo() {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuMemGetInfo.invokeExact(s, s.asSlice(8)), "cuMemGetInfo");
            return new long[] {s.get(JAVA_LONG, 0), s.get(JAVA_LONG, 8)};
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long memAlloc(long bytes) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuMemAlloc.invokeExact(s, bytes), "cuMemAlloc(" + bytes + " bytes)");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memFree(long ptr) {
        try {
            check((int) cuMemFree.invokeExact(ptr), "cuMemFree");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long memAllocHost(long bytes) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuMemAllocHost.invokeExact(s, bytes), "cuMemAllocHost(" + bytes + " bytes)");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memFreeHost(long p) {
        try {
            check((int) cuMemFreeHost.invokeExact(p), "cuMemFreeHost");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Synchronous host-to-device copy from any segment (native, or heap via a critical call). */
    static void memcpyHtoD(long dst, MemorySegment src, long bytes) {
        try {
            int r = src.isNative()
                    ? (int) cuMemcpyHtoD.invokeExact(dst, src.address(), bytes)
                    : (int) cuMemcpyHtoDHeap.invokeExact(dst, src, bytes);
            check(r, "cuMemcpyHtoD");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Synchronous device-to-host copy into any segment. */
    static void memcpyDtoH(MemorySegment dst, long src, long bytes) {
        try {
            int r = dst.isNative()
                    ? (int) cuMemcpyDtoH.invokeExact(dst.address(), src, bytes)
                    : (int) cuMemcpyDtoHHeap.invokeExact(dst, src, bytes);
            check(r, "cuMemcpyDtoH");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memcpyDtoD(long dst, long src, long bytes) {
        try {
            check((int) cuMemcpyDtoD.invokeExact(dst, src, bytes), "cuMemcpyDtoD");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memcpyHtoDAsync(long dst, long srcAddress, long bytes, long stream) {
        try {
            check((int) cuMemcpyHtoDAsync.invokeExact(dst, srcAddress, bytes, stream), "cuMemcpyHtoDAsync");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memcpyDtoHAsync(long dstAddress, long src, long bytes, long stream) {
        try {
            check((int) cuMemcpyDtoHAsync.invokeExact(dstAddress, src, bytes, stream), "cuMemcpyDtoHAsync");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memcpyDtoDAsync(long dst, long src, long bytes, long stream) {
        try {
            check((int) cuMemcpyDtoDAsync.invokeExact(dst, src, bytes, stream), "cuMemcpyDtoDAsync");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memcpyPeerAsync(long dst, long dstCtx, long src, long srcCtx, long bytes, long stream) {
        try {
            check((int) cuMemcpyPeerAsync.invokeExact(dst, dstCtx, src, srcCtx, bytes, stream), "cuMemcpyPeerAsync");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memsetD8(long dst, byte value, long count) {
        try {
            check((int) cuMemsetD8.invokeExact(dst, value, count), "cuMemsetD8");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memsetD8Async(long dst, byte value, long count, long stream) {
        try {
            check((int) cuMemsetD8Async.invokeExact(dst, value, count, stream), "cuMemsetD8Async");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** A pointer attribute of {@code width} bytes (4 or 8), or null when the driver refuses it. */
    static Long pointerAttribute(int attr, long ptr, int width) {
        try {
            MemorySegment s = Scratch.get();
            s.set(JAVA_LONG, 0, 0L);
            int r = (int) cuPointerGetAttribute.invokeExact(s, attr, ptr);
            if (r != SUCCESS) {
                return null;
            }
            return width == 4 ? (long) s.get(JAVA_INT, 0) : s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- streams and events ----

    static long streamCreate(int flags) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuStreamCreate.invokeExact(s, flags), "cuStreamCreate");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void streamDestroy(long stream) {
        try {
            check((int) cuStreamDestroy.invokeExact(stream), "cuStreamDestroy");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void streamSynchronize(long stream) {
        try {
            check((int) cuStreamSynchronize.invokeExact(stream), "cuStreamSynchronize");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The raw result: SUCCESS when idle, NOT_READY when work is pending, else an error. */
    static int streamQuery(long stream) {
        try {
            return (int) cuStreamQuery.invokeExact(stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void streamWaitEvent(long stream, long event) {
        try {
            check((int) cuStreamWaitEvent.invokeExact(stream, event, 0), "cuStreamWaitEvent");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long eventCreate(int flags) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuEventCreate.invokeExact(s, flags), "cuEventCreate");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void eventDestroy(long event) {
        try {
            check((int) cuEventDestroy.invokeExact(event), "cuEventDestroy");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void eventRecord(long event, long stream) {
        int r;
        try {
            r = (int) cuEventRecord.invokeExact(event, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r != SUCCESS) {
            throw error(r, "cuEventRecord");
        }
    }

    /** The raw result: SUCCESS when complete, NOT_READY when pending, else an error. */
    static int eventQuery(long event) {
        try {
            return (int) cuEventQuery.invokeExact(event);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void eventSynchronize(long event) {
        try {
            check((int) cuEventSynchronize.invokeExact(event), "cuEventSynchronize");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static float eventElapsedMillis(long start, long end) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuEventElapsedTime.invokeExact(s, start, end), "cuEventElapsedTime");
            return s.get(JAVA_FLOAT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- stream capture and graphs ----

    /** Why graphs cannot be used with this driver, or null. */
    static String graphsUnavailable() {
        if (FAILURE != null) {
            return FAILURE;
        }
        return cuStreamBeginCapture == null || cuStreamEndCapture == null || cuStreamIsCapturing == null
                || cuGraphInstantiateWithFlags == null || cuGraphLaunch == null || cuGraphExecDestroy == null
                || cuGraphDestroy == null || cuThreadExchangeStreamCaptureMode == null
                ? "the CUDA driver " + loadedName() + " lacks stream capture (CUDA 11.4 or newer has it)" : null;
    }

    static void streamBeginCapture(long stream, int mode) {
        try {
            check((int) cuStreamBeginCapture.invokeExact(stream, mode), "cuStreamBeginCapture");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Ends the capture; returns the raw result and writes the CUgraph (0 when none) to {@code out[0]}. */
    static int streamEndCapture(long stream, long[] out) {
        try {
            MemorySegment s = Scratch.get();
            s.set(JAVA_LONG, 0, 0L);
            int r = (int) cuStreamEndCapture.invokeExact(stream, s);
            out[0] = s.get(JAVA_LONG, 0);
            return r;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * CUstreamCaptureStatus of {@code stream}; capture-safe (it never invalidates a capture). The
     * legacy stream cannot be captured, so it is answered without a call.
     */
    static int captureStatus(long stream) {
        if (stream == 0 || stream == STREAM_LEGACY || cuStreamIsCapturing == null) {
            return CAPTURE_NONE;
        }
        try {
            MemorySegment s = Scratch.get();
            check((int) cuStreamIsCapturing.invokeExact(stream, s), "cuStreamIsCapturing");
            return s.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Sets this thread's capture interaction mode; returns the previous one. */
    static int exchangeCaptureMode(int mode) {
        try {
            MemorySegment s = Scratch.get();
            s.set(JAVA_INT, 0, mode);
            check((int) cuThreadExchangeStreamCaptureMode.invokeExact(s), "cuThreadExchangeStreamCaptureMode");
            return s.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Runs {@code body} with this thread's capture mode relaxed, so an allocation it makes neither
     * fails nor invalidates a capture open on this thread (as NCCL does for its own allocations).
     */
    static <T> T relaxedCapture(java.util.function.Supplier<T> body) {
        if (cuThreadExchangeStreamCaptureMode == null) {
            return body.get();
        }
        int previous = exchangeCaptureMode(CAPTURE_MODE_RELAXED);
        try {
            return body.get();
        } finally {
            exchangeCaptureMode(previous);
        }
    }

    /**
     * Relaxes this thread's capture mode for good (a jccl-owned thread, e.g. the watchdog): its
     * event queries then never fail or invalidate another thread's {@code GLOBAL}-mode capture.
     * Does nothing on a driver without stream capture.
     */
    static void relaxCaptureModeOfThisThread() {
        if (cuThreadExchangeStreamCaptureMode != null && FAILURE == null) {
            exchangeCaptureMode(CAPTURE_MODE_RELAXED);
        }
    }

    static long graphInstantiate(long graph) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuGraphInstantiateWithFlags.invokeExact(s, graph, 0L), "cuGraphInstantiate");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void graphLaunch(long exec, long stream) {
        try {
            check((int) cuGraphLaunch.invokeExact(exec, stream), "cuGraphLaunch");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void graphExecDestroy(long exec) {
        try {
            check((int) cuGraphExecDestroy.invokeExact(exec), "cuGraphExecDestroy");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void graphDestroy(long graph) {
        try {
            check((int) cuGraphDestroy.invokeExact(graph), "cuGraphDestroy");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The number of nodes of {@code graph}, or -1 when the driver cannot tell. */
    static long graphNodeCount(long graph) {
        if (cuGraphGetNodes == null) {
            return -1;
        }
        try {
            MemorySegment s = Scratch.get();
            s.set(JAVA_LONG, 0, 0L);
            check((int) cuGraphGetNodes.invokeExact(graph, 0L, s), "cuGraphGetNodes");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- IPC ----

    static byte[] ipcGetMemHandle(long ptr) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuIpcGetMemHandle.invokeExact(s, ptr), "cuIpcGetMemHandle");
            return s.asSlice(0, IPC_HANDLE_SIZE).toArray(JAVA_BYTE);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long ipcOpenMemHandle(byte[] handle) {
        if (handle.length != IPC_HANDLE_SIZE) {
            throw new IllegalArgumentException("handle has " + handle.length + " bytes: a CUipcMemHandle has "
                    + IPC_HANDLE_SIZE);
        }
        try {
            MemorySegment s = Scratch.get();
            MemorySegment h = s.asSlice(64, IPC_HANDLE_SIZE);
            h.copyFrom(MemorySegment.ofArray(handle));
            // flags 1: CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
            check((int) cuIpcOpenMemHandle.invokeExact(s, h, 1), "cuIpcOpenMemHandle");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void ipcCloseMemHandle(long ptr) {
        try {
            check((int) cuIpcCloseMemHandle.invokeExact(ptr), "cuIpcCloseMemHandle");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- modules and kernels ----

    /** Loads a PTX (NUL-terminated text) or cubin image into the current context. */
    static long moduleLoadData(MemorySegment image) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuModuleLoadData.invokeExact(s, image), "cuModuleLoadData");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long moduleGetFunction(long module, MemorySegment name) {
        try {
            MemorySegment s = Scratch.get();
            check((int) cuModuleGetFunction.invokeExact(s, module, name), "cuModuleGetFunction");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The device address of global {@code name} of {@code module}, or 0 when the module has none of that name. */
    static long moduleGetGlobal(long module, MemorySegment name) {
        try {
            MemorySegment s = Scratch.get();
            int r = (int) cuModuleGetGlobal.invokeExact(s, s.asSlice(8), module, name);
            if (r == NOT_FOUND) {
                return 0;
            }
            check(r, "cuModuleGetGlobal");
            return s.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void moduleUnload(long module) {
        try {
            check((int) cuModuleUnload.invokeExact(module), "cuModuleUnload");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedBytes,
                             long stream, MemorySegment params) {
        try {
            check((int) cuLaunchKernel.invokeExact(function, gx, gy, gz, bx, by, bz, sharedBytes, stream, params,
                    MemorySegment.NULL), "cuLaunchKernel");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether the driver has cuLaunchKernelEx (CUDA 12.0+). */
    static boolean hasLaunchKernelEx() {
        return cuLaunchKernelEx != null;
    }

    /** cuLaunchKernelEx: {@code config} is laid out as {@link LaunchConfigDescriptor} says. */
    static void launchKernelEx(MemorySegment config, long function, MemorySegment params) {
        try {
            check((int) cuLaunchKernelEx.invokeExact(config, function, params, MemorySegment.NULL), "cuLaunchKernelEx");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
