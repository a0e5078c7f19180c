package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The CUDA driver binding on one GPU: device, memory, copies, foreign pointers, streams, events, kernels. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CudaBasicsTest {
    private CudaDevice gpu;

    @BeforeAll
    void open() {
        Gpu.assume(1);
        gpu = CudaDevice.open(0);
    }

    @AfterAll
    void close() {
        if (gpu != null) {
            gpu.close();
        }
    }

    @Test
    void deviceProperties() {
        assertFalse(gpu.name().isBlank());
        assertTrue(gpu.totalMemory() > (1L << 30), "a GPU with more than 1 GiB");
        assertTrue(gpu.freeMemory() > 0 && gpu.freeMemory() <= gpu.totalMemory());
        assertTrue(gpu.computeCapabilityMajor() >= 7, "sm_70+ expected, got " + gpu.computeCapabilityMajor());
        assertTrue(gpu.multiprocessorCount() > 0);
        assertTrue(gpu.pciBusId().contains(":"), gpu.pciBusId());
        assertEquals(16, gpu.uuid().length);
        assertEquals("nccl", gpu.backend());
        assertTrue(Cuda.driverVersion() >= 12000, "driver " + Cuda.driverVersion());
        assertThrows(IllegalArgumentException.class, () -> CudaDevice.open(CudaDevice.count()));
        assertThrows(IllegalArgumentException.class, () -> CudaDevice.open(-1));
    }

    @Test
    void copiesRoundTripFromHeapAndNativeMemory() {
        float[] src = new float[1001];
        for (int i = 0; i < src.length; i++) {
            src[i] = i * 0.5f - 7;
        }
        try (DeviceBuffer d = gpu.allocate(DataType.FLOAT32, src.length); Arena a = Arena.ofConfined()) {
            d.copyFrom(HostBuffer.of(src));
            float[] back = new float[src.length];
            d.copyTo(HostBuffer.of(back));
            assertArrayEquals(src, back);
            HostBuffer nat = HostBuffer.allocate(DataType.FLOAT32, src.length, a);
            d.copyTo(nat);
            for (int i = 0; i < src.length; i++) {
                assertEquals(src[i], nat.segment().getAtIndex(ValueLayout.JAVA_FLOAT, i));
            }
            // A slice copies only its part.
            float[] part = new float[10];
            d.slice(100, 10).copyTo(HostBuffer.of(part));
            for (int i = 0; i < 10; i++) {
                assertEquals(src[100 + i], part[i]);
            }
            d.slice(0, 3).clear();
            d.copyTo(HostBuffer.of(back));
            assertEquals(0f, back[0]);
            assertEquals(0f, back[2]);
            assertEquals(src[3], back[3]);
            try (DeviceBuffer d2 = gpu.allocate(DataType.FLOAT32, src.length)) {
                d2.copyFrom(d);
                float[] back2 = new float[src.length];
                d2.copyTo(HostBuffer.of(back2));
                assertArrayEquals(back, back2);
            }
            assertThrows(IllegalArgumentException.class, () -> d.copyFrom(HostBuffer.of(new float[3])));
            assertThrows(IllegalArgumentException.class, () -> d.copyFrom(HostBuffer.of(new int[1001])));
        }
    }

    @Test
    void overlapAndSameStart() {
        try (DeviceBuffer d = gpu.allocate(DataType.INT32, 100)) {
            assertTrue(d.overlaps(d.slice(10, 5)));
            assertFalse(d.slice(0, 10).overlaps(d.slice(10, 10)));
            assertTrue(d.sameStart(d.slice(0, 3)));
            assertFalse(d.sameStart(d.slice(1, 3)));
            assertFalse(d.overlaps(HostBuffer.of(new int[100])));
            assertEquals(400, d.byteSize());
            assertEquals(DataType.UINT8, d.reinterpret(DataType.UINT8).type());
            assertEquals(400, d.reinterpret(DataType.UINT8).count());
        }
    }

    @Test
    void useAfterFreeThrowsInsteadOfFaulting() {
        DeviceBuffer d = gpu.allocate(DataType.FLOAT64, 64);
        DeviceBuffer view = d.slice(8, 8);
        assertTrue(d.ownsMemory());
        assertFalse(view.ownsMemory());
        d.close();
        assertDoesNotThrow(d::close, "close is idempotent");
        assertFalse(d.isLive());
        assertFalse(view.isLive(), "a slice of a freed allocation is dead too");
        assertThrows(IllegalStateException.class, d::pointer);
        assertThrows(IllegalStateException.class, view::pointer);
        assertThrows(IllegalStateException.class, () -> d.copyFrom(HostBuffer.of(new double[64])));
        assertThrows(IllegalStateException.class, () -> view.copyTo(HostBuffer.of(new double[8])));
        assertThrows(IllegalStateException.class, () -> d.slice(0, 1));
    }

    @Test
    void wrappedForeignPointerIsUsedButNeverFreed() {
        gpu.makeCurrent();
        long raw = CudaDriver.memAlloc(4096); // as another library (JCuda, PyTorch) would
        try {
            DeviceBuffer w = DeviceBuffer.wrap(gpu, raw, DataType.INT32, 1024);
            assertFalse(w.ownsMemory());
            int[] src = new int[1024];
            for (int i = 0; i < src.length; i++) {
                src[i] = i * 3;
            }
            w.copyFrom(HostBuffer.of(src));
            w.close();
            assertThrows(IllegalStateException.class, w::pointer);
            // The memory is still allocated: read it back through the raw pointer.
            int[] back = new int[1024];
            gpu.makeCurrent();
            CudaDriver.memcpyDtoH(java.lang.foreign.MemorySegment.ofArray(back), raw, 4096);
            assertArrayEquals(src, back);
            // Too many elements for the allocation, a host pointer, NULL, misalignment: all refused.
            var e = assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.wrap(gpu, raw, DataType.INT32, 2048));
            assertTrue(e.getMessage().contains("bytes left"), e.getMessage());
            try (Arena a = Arena.ofConfined()) {
                long host = a.allocate(4096).address();
                assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.wrap(gpu, host, DataType.INT32, 16));
            }
            assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.wrap(gpu, 0, DataType.INT32, 16));
            assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.wrap(gpu, raw + 2, DataType.INT32, 16));
            // A slice in the middle of the allocation is fine.
            DeviceBuffer mid = DeviceBuffer.wrap(gpu, raw + 1024, DataType.INT32, 768);
            int[] part = new int[768];
            mid.copyTo(HostBuffer.of(part));
            assertEquals(src[256], part[0]);
        } finally {
            gpu.makeCurrent();
            CudaDriver.memFree(raw); // would fail with an error had wrap's close freed it
        }
    }

    @Test
    void streamsAndEvents() {
        try (CudaStream s = gpu.createStream(); CudaEvent e = gpu.createEvent();
             DeviceBuffer d = gpu.allocate(DataType.UINT8, 1 << 20)) {
            gpu.makeCurrent();
            CudaDriver.memsetD8Async(d.pointer(), (byte) 7, d.byteSize(), s.handle());
            s.record(e);
            assertTrue(e.await(Duration.ofSeconds(10)));
            assertTrue(e.isComplete());
            s.synchronize(Duration.ofSeconds(10));
            assertTrue(s.isIdle());
            byte[] back = new byte[1 << 20];
            d.copyTo(HostBuffer.of(DataType.UINT8, back));
            assertEquals(7, back[12345]);
            CudaStream wrapped = CudaStream.wrap(s.handle());
            assertEquals(s.handle(), wrapped.handle());
            wrapped.close(); // does not destroy the caller's stream
            assertTrue(s.isIdle());
        }
        try (CudaEvent a = gpu.createTimingEvent(); CudaEvent b = gpu.createTimingEvent(); CudaStream s = gpu.createStream()) {
            a.record(s);
            b.record(s);
            assertTrue(b.await(Duration.ofSeconds(10)));
            assertTrue(b.elapsedMillisSince(a) >= 0);
        }
        gpu.synchronize(Duration.ofSeconds(30));
    }

    @Test
    void ptxKernelLoadsAndRuns() throws IOException {
        String ptx;
        try (InputStream in = getClass().getResourceAsStream("/axpb.ptx")) {
            ptx = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        }
        int n = 1000;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = i;
        }
        try (CudaModule m = CudaModule.loadPtx(gpu, ptx); DeviceBuffer d = gpu.allocate(DataType.FLOAT32, n);
             CudaStream s = gpu.createStream()) {
            d.copyFrom(HostBuffer.of(x));
            m.launch("axpb", (n + 255) / 256, 256, 0, s, d, 2.0f, 1.0f, n);
            s.synchronize(Duration.ofSeconds(10));
            float[] y = new float[n];
            d.copyTo(HostBuffer.of(y));
            for (int i = 0; i < n; i++) {
                assertEquals(2f * i + 1f, y[i]);
            }
            assertThrows(CudaException.class, () -> m.function("no_such_kernel"));
        }
    }

    @Test
    void capabilitiesReportThisGpu() {
        NcclCapabilities c = NcclCapabilities.of(gpu);
        assertEquals(Nccl.versionString(), c.ncclVersion());
        assertEquals(gpu.ordinal(), c.device());
        assertEquals(CudaDevice.count() - 1, c.peers().size());
        assertEquals(gpu.computeCapabilityMajor() >= 9 && Nccl.version() >= 22400, c.fp8());
        assertEquals(Nccl.version() >= 22800, c.nativeAllToAll());
        if ("0".equals(System.getenv("NCCL_NVLS_ENABLE"))) {
            assertFalse(c.nvlsAllowed());
        }
        System.out.println("capabilities: " + c);
    }
}
