package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * NCCL symmetric memory, thread per GPU: collectives on registered windows against sums computed
 * on the host, what registration refuses before any native call, ranks that register different
 * sizes, a buffer closed while registered, and the communicator's close deregistering its windows.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SymmetricMemoryTest {
    private static final Duration T = Duration.ofSeconds(60);
    private static final int M = 8 << 20; // elements of the largest buffers (32 MiB of floats)
    private List<CudaDevice> devs;
    private List<NcclCommunicator> comms;
    private int n;

    @BeforeAll
    void init() {
        Gpu.assume(2);
        org.jccl.testing.Require.require("gpu", Nccl.symmetricMemoryUnavailableCause());
        devs = Gpu.openAll();
        comms = NcclCommunicator.initAll(devs, T);
        n = comms.size();
    }

    @AfterAll
    void shut() {
        Gpu.closeAll(comms, devs);
    }

    /** Rank r's element i: small integers, exact in float whatever the order of the sum. */
    private static float input(int r, int i) {
        return (r + 1) * 100 + i % 97;
    }

    private static float[] inputs(int r, int count) {
        float[] a = new float[count];
        for (int i = 0; i < count; i++) {
            a[i] = input(r, i);
        }
        return a;
    }

    /** With JCCL_NCCL_NONBLOCKING=1 registration is refused (see nonblockingCommunicatorsRefuseRegistration). */
    private static final boolean NONBLOCKING = "1".equals(System.getenv("JCCL_NCCL_NONBLOCKING"));

    private static void assumeBlocking() {
        org.junit.jupiter.api.Assumptions.assumeFalse(NONBLOCKING,
                "JCCL_NCCL_NONBLOCKING=1: symmetric windows need the blocking data communicator");
    }

    @Test
    void nonblockingCommunicatorsRefuseRegistration() {
        org.junit.jupiter.api.Assumptions.assumeTrue(NONBLOCKING, "runs with JCCL_NCCL_NONBLOCKING=1");
        NcclCommunicator c = comms.get(0);
        c.device().makeCurrent();
        long seq = c.sequenceNumber();
        try (DeviceBuffer b = c.device().allocateSymmetric(DataType.FLOAT32, 1024)) {
            InvalidUsageException e = assertThrows(InvalidUsageException.class, () -> c.register(b));
            assertTrue(e.getMessage().contains("JCCL_NCCL_NONBLOCKING"), e.getMessage());
        }
        assertEquals(seq, c.sequenceNumber(), "nothing reached NCCL");
    }

    @Test
    void collectivesOnWindowsGiveTheHostResult() throws Exception {
        assumeBlocking();
        Gpu.assertEachOk(comms, T, c -> {
            int r = c.rank();
            CudaDevice d = c.device();
            d.makeCurrent();
            try (DeviceBuffer s = d.allocateSymmetric(DataType.FLOAT32, M);
                 DeviceBuffer v = d.allocateSymmetric(DataType.FLOAT32, M)) {
                assertTrue(s.isSymmetric() && s.slice(5, 7).isSymmetric(), s.toString());
                try (SymmetricWindow ws = c.register(s); SymmetricWindow wv = c.register(v)) {
                    assertTrue(ws.isOpen() && wv.isOpen());
                    assertEquals(4L * M, ws.byteSize());
                    assertEquals(2, c.windows().size());
                    for (int k : new int[] {1, 4099, 4100, 1 << 16, 1 << 20, M / n}) {
                        // all-reduce, out of place and in place
                        s.slice(0, k).copyFrom(HostBuffer.of(inputs(r, k)));
                        c.allReduce(s.slice(0, k), v.slice(0, k), ReduceOp.SUM);
                        float[] sum = new float[k];
                        for (int p = 0; p < n; p++) {
                            for (int i = 0; i < k; i++) {
                                sum[i] += input(p, i);
                            }
                        }
                        assertArrayEquals(sum, Gpu.download(v.slice(0, k)), "all-reduce of " + k + " on rank " + r);
                        c.allReduce(s.slice(0, k), ReduceOp.SUM);
                        assertArrayEquals(sum, Gpu.download(s.slice(0, k)), "in-place all-reduce of " + k + " on rank " + r);
                        if (4L * k % 16 != 0) {
                            // per-rank sizes that are not a multiple of 16 bytes are refused on windows (NCCL
                            // 2.28.3's symmetric all-gather gave wrong data at 4099 floats per rank)
                            long seq = c.sequenceNumber();
                            int kk = k;
                            IllegalArgumentException ag = assertThrows(IllegalArgumentException.class,
                                    () -> c.allGather(s.slice(0, kk), v.slice(0, (long) kk * n)));
                            assertTrue(ag.getMessage().contains("multiple of 16 bytes"), ag.getMessage());
                            assertThrows(IllegalArgumentException.class,
                                    () -> c.reduceScatter(s.slice(0, (long) kk * n), v.slice(0, kk), ReduceOp.SUM));
                            assertEquals(seq, c.sequenceNumber(), "nothing reached NCCL");
                            continue;
                        }
                        // all-gather: rank p's k elements at p * k
                        s.slice(0, k).copyFrom(HostBuffer.of(inputs(r, k)));
                        c.allGather(s.slice(0, k), v.slice(0, (long) k * n));
                        float[] gathered = new float[k * n];
                        for (int p = 0; p < n; p++) {
                            System.arraycopy(inputs(p, k), 0, gathered, p * k, k);
                        }
                        assertArrayEquals(gathered, Gpu.download(v.slice(0, (long) k * n)), "all-gather of " + k);
                        // reduce-scatter: rank r gets slice r of the sum of everyone's k * n elements
                        s.slice(0, (long) k * n).copyFrom(HostBuffer.of(inputs(r, k * n)));
                        c.reduceScatter(s.slice(0, (long) k * n), v.slice(0, k), ReduceOp.SUM);
                        float[] part = new float[k];
                        for (int p = 0; p < n; p++) {
                            for (int i = 0; i < k; i++) {
                                part[i] += input(p, r * k + i);
                            }
                        }
                        assertArrayEquals(part, Gpu.download(v.slice(0, k)), "reduce-scatter of " + k + " on rank " + r);
                    }
                    // a window and an ordinary buffer together: NCCL takes its other kernels, same result
                    try (DeviceBuffer plain = d.allocate(DataType.FLOAT32, 4099)) {
                        s.slice(0, 4099).copyFrom(HostBuffer.of(inputs(r, 4099)));
                        c.allReduce(s.slice(0, 4099), plain, ReduceOp.MAX);
                        assertArrayEquals(inputs(n - 1, 4099), Gpu.download(plain));
                    }
                }
                assertEquals(0, c.windows().size(), "closing the windows deregistered them");
                // the memory is still the caller's: usable as ordinary device memory
                s.slice(0, 16).copyFrom(HostBuffer.of(inputs(r, 16)));
                c.allReduce(s.slice(0, 16), v.slice(0, 16), ReduceOp.MIN);
                assertArrayEquals(inputs(0, 16), Gpu.download(v.slice(0, 16)));
            }
            assertFalse(c.isAborted());
            return "ok";
        });
    }

    @Test
    void registrationRefusesBadArgumentsBeforeAnyNativeCall() {
        NcclCommunicator c = comms.get(0);
        CudaDevice d = c.device();
        d.makeCurrent();
        long seq = c.sequenceNumber();
        try (DeviceBuffer plain = d.allocate(DataType.FLOAT32, 1024);
             DeviceBuffer sym = d.allocateSymmetric(DataType.FLOAT32, 1024);
             DeviceBuffer empty = d.allocateSymmetric(DataType.FLOAT32, 0);
             DeviceBuffer closed = d.allocateSymmetric(DataType.FLOAT32, 1024);
             DeviceBuffer elsewhere = devs.get(1).allocateSymmetric(DataType.FLOAT32, 1024)) {
            assertFalse(plain.isSymmetric());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.register(plain));
            assertTrue(e.getMessage().contains("allocateSymmetric"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.register(sym.slice(0, 512)));
            assertTrue(e.getMessage().contains("slice"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.register(empty));
            assertTrue(e.getMessage().contains("0 bytes"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.register(elsewhere));
            assertTrue(e.getMessage().contains("GPU 1"), e.getMessage());
            closed.close();
            assertThrows(IllegalStateException.class, () -> c.register(closed));
            assertThrows(NullPointerException.class, () -> c.register(null));
            try (NcclGroup g = c.group()) {
                InvalidUsageException u = assertThrows(InvalidUsageException.class, () -> c.register(sym));
                assertTrue(u.getMessage().contains("NcclGroup"), u.getMessage());
            }
            assertEquals(seq, c.sequenceNumber(), "nothing reached NCCL");
            assertEquals(0, c.windows().size());
        }
    }

    @Test
    void ranksThatRegisterDifferentSizesAreAllRefusedAndTheCommunicatorGoesOn() throws Exception {
        Gpu.assertEachOk(comms, T, c -> {
            CudaDevice d = c.device();
            d.makeCurrent();
            try (DeviceBuffer b = d.allocateSymmetric(DataType.FLOAT32, 1024 + c.rank())) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.register(b));
                assertTrue(e.getMessage().contains("different sizes"), e.getMessage());
                assertEquals(0, c.windows().size());
                // nothing was registered anywhere and the communicator is healthy
                b.slice(0, 1024).copyFrom(HostBuffer.of(inputs(c.rank(), 1024)));
                c.allReduce(b.slice(0, 1024), ReduceOp.MAX);
                assertArrayEquals(inputs(n - 1, 1024), Gpu.download(b.slice(0, 1024)));
            }
            return "ok";
        });
    }

    @Test
    void aBufferClosedWhileRegisteredIsRefusedAndGoesBackWhenItsWindowCloses() throws Exception {
        assumeBlocking();
        long bytes = 256L << 20;
        Gpu.assertEachOk(comms, T, c -> {
            CudaDevice d = c.device();
            d.makeCurrent();
            DeviceBuffer b = d.allocateSymmetric(DataType.UINT8, bytes);
            SymmetricWindow w = c.register(b);
            long seq = c.sequenceNumber();
            b.close();
            assertFalse(b.isLive());
            IllegalArgumentException used = assertThrows(IllegalArgumentException.class, () -> c.allReduce(b, ReduceOp.SUM));
            assertTrue(used.getMessage().contains("closed"), used.getMessage());
            assertThrows(IllegalStateException.class, () -> c.allReduce(b.slice(0, 8), ReduceOp.SUM));
            assertEquals(seq, c.sequenceNumber(), "nothing reached NCCL");
            assertTrue(w.isOpen(), "the window outlives its buffer's close");
            try (DeviceBuffer one = d.allocate(DataType.INT32, 1)) {
                long before = d.freeMemory();
                w.close();
                assertFalse(w.isOpen());
                w.close(); // idempotent
                c.allReduce(one, ReduceOp.SUM); // every rank has closed its window: the peers' mappings are gone
                long after = d.freeMemory();
                assertTrue(after - before >= bytes * 9 / 10, "the memory went back at the window's close: free "
                        + before + " -> " + after);
            }
            return "ok";
        });
    }

    @Test
    void closingTheCommunicatorDeregistersItsWindows() throws Exception {
        assumeBlocking();
        List<NcclCommunicator> own = NcclCommunicator.initAll(devs, T);
        List<DeviceBuffer> bufs = new java.util.ArrayList<>();
        List<SymmetricWindow> wins = Gpu.onEach(own, T, c -> {
            c.device().makeCurrent();
            DeviceBuffer b = c.device().allocateSymmetric(DataType.FLOAT32, 4096);
            synchronized (bufs) {
                bufs.add(b);
            }
            return c.register(b);
        });
        try {
            for (SymmetricWindow w : wins) {
                assertTrue(w.isOpen());
                assertEquals(List.of(w), w.communicator().windows());
            }
        } finally {
            Gpu.closeAll(own, null);
        }
        for (SymmetricWindow w : wins) {
            assertFalse(w.isOpen(), w + " was deregistered by the communicator's close");
            w.close(); // a no-op now
            assertTrue(w.buffer().isLive(), "the buffer is still the caller's");
            w.buffer().copyFrom(HostBuffer.of(inputs(0, 4096)));
            assertArrayEquals(inputs(0, 4096), Gpu.download(w.buffer()));
            InvalidUsageException e = assertThrows(InvalidUsageException.class,
                    () -> w.communicator().register(w.buffer()));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
        bufs.forEach(DeviceBuffer::close);
    }
}
