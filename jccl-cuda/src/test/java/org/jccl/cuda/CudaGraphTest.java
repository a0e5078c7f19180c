package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Collectives captured into CUDA graphs and replayed, thread per GPU: results against sums
 * computed on the host with new inputs before every launch, launches back to back, captures of the
 * communicator's own stream through the plain Communicator API, what a capture refuses before any
 * native call, an invalidated capture, and a launch that only one rank makes (its deadline aborts
 * the communicator instead of hanging).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CudaGraphTest {
    private static final Duration T = Duration.ofSeconds(60);
    private static final int N = 4099; // not a multiple of a vector or a warp
    private List<CudaDevice> devs;
    private List<NcclCommunicator> comms;
    private int n;

    @BeforeAll
    void init() {
        Gpu.assume(2);
        devs = Gpu.openAll();
        comms = NcclCommunicator.initAll(devs, T);
        n = comms.size();
    }

    @AfterAll
    void shut() {
        Gpu.closeAll(comms, devs);
    }

    /** Rank r's input of launch k: small integers, exact in float whatever the order of the sum. */
    private static float input(int r, int k, int i) {
        return (r + 1) * 1000 + k * 7 + i % 13;
    }

    @Test
    void capturedAllReduceAndAllGatherReplayWithNewInputsEveryLaunch() throws Exception {
        Gpu.assertEachOk(comms, T, c -> {
            int r = c.rank();
            CudaDevice d = c.device();
            d.makeCurrent();
            try (CudaStream s = d.createStream();
                 DeviceBuffer x = d.allocate(DataType.FLOAT32, N);
                 DeviceBuffer y = d.allocate(DataType.FLOAT32, N);
                 DeviceBuffer g = d.allocate(DataType.FLOAT32, (long) N * n)) {
                long before = c.sequenceNumber();
                NcclWork[] captured = new NcclWork[2];
                try (CudaGraph graph = CudaGraph.capture(s, () -> {
                    captured[0] = c.allReduceAsync(x, y, ReduceOp.SUM, s);
                    captured[1] = c.allGatherAsync(x, g, s);
                })) {
                    for (NcclWork w : captured) {
                        assertTrue(w.isCaptured(), w.toString());
                        assertTrue(w.isDone(), w.toString());
                        w.await(); // complete once captured: returns at once
                        assertEquals(null, w.exception());
                        InvalidUsageException e = assertThrows(InvalidUsageException.class, w::event);
                        assertTrue(e.getMessage().contains("captured into a CUDA graph"), e.getMessage());
                    }
                    assertEquals(before + 2, c.sequenceNumber(), "both operations reached NCCL once, at capture");
                    assertEquals(2, graph.collectiveCount());
                    assertTrue(graph.nodeCount() > 0, graph.toString());
                    assertFalse(s.isCapturing());
                    for (int k = 0; k < 5; k++) {
                        float[] in = new float[N];
                        for (int i = 0; i < N; i++) {
                            in[i] = input(r, k, i);
                        }
                        x.copyFrom(HostBuffer.of(in));
                        graph.launch(s).await();
                        float[] sum = new float[N];
                        float[] gathered = new float[N * n];
                        for (int p = 0; p < n; p++) {
                            for (int i = 0; i < N; i++) {
                                sum[i] += input(p, k, i);
                                gathered[p * N + i] = input(p, k, i);
                            }
                        }
                        assertArrayEquals(sum, Gpu.download(y), "all-reduce of launch " + k + " on rank " + r);
                        assertArrayEquals(gathered, Gpu.download(g), "all-gather of launch " + k + " on rank " + r);
                    }
                    assertEquals(before + 2, c.sequenceNumber(), "launches make no NCCL call");
                }
                // The communicator is as healthy as before: an eager call on the same stream still works.
                x.copyFrom(HostBuffer.of(filled(N, r + 1)));
                c.allReduce(x, y, ReduceOp.SUM, s);
                assertArrayEquals(filled(N, n * (n + 1) / 2f), Gpu.download(y));
                assertFalse(c.isAborted());
            }
            return "ok";
        });
    }

    @Test
    void launchesBackToBackRunInOrder() throws Exception {
        Gpu.assertEachOk(comms, T, c -> {
            CudaDevice d = c.device();
            d.makeCurrent();
            try (CudaStream s = d.createStream(); DeviceBuffer y = d.allocate(DataType.FLOAT32, N)) {
                y.copyFrom(HostBuffer.of(filled(N, 1)));
                try (CudaGraph graph = CudaGraph.capture(s, () -> c.allReduceAsync(y, y, ReduceOp.SUM, s))) {
                    Work last = null;
                    for (int k = 0; k < 4; k++) {
                        last = graph.launch(s); // no host wait between launches
                    }
                    last.await();
                    assertTrue(last.isDone());
                }
                assertArrayEquals(filled(N, (float) Math.pow(n, 4)), Gpu.download(y), "each launch multiplies by " + n);
            }
            return "ok";
        });
    }

    @Test
    void theCommunicatorsOwnStreamCapturesThePlainCommunicatorApi() throws Exception {
        Gpu.assertEachOk(comms, T, c -> {
            int r = c.rank();
            CudaDevice d = c.device();
            d.makeCurrent();
            try (DeviceBuffer x = d.allocate(DataType.FLOAT32, N); DeviceBuffer y = d.allocate(DataType.FLOAT32, N)) {
                Work[] w = new Work[1];
                try (CudaGraph graph = CudaGraph.capture(c.stream(), () -> w[0] = c.allReduceAsync(x, y, ReduceOp.MAX))) {
                    assertTrue(((NcclWork) w[0]).isCaptured());
                    w[0].await();
                    for (int k = 0; k < 3; k++) {
                        x.copyFrom(HostBuffer.of(filled(N, r * 10 + k)));
                        graph.launch(c.stream()).await();
                        assertArrayEquals(filled(N, (n - 1) * 10 + k), Gpu.download(y), "launch " + k);
                    }
                }
                // Blocking calls on the own stream run eagerly again once the capture ended.
                x.copyFrom(HostBuffer.of(filled(N, r)));
                c.allReduce(x, y, ReduceOp.MIN);
                assertArrayEquals(filled(N, 0), Gpu.download(y));
            }
            return "ok";
        });
    }

    @Test
    void whatACaptureCannotHoldIsRefusedBeforeAnyNativeCall() {
        NcclCommunicator c = comms.get(0);
        CudaDevice d = c.device();
        d.makeCurrent();
        IllegalArgumentException legacy = assertThrows(IllegalArgumentException.class,
                () -> CudaGraph.beginCapture(CudaStream.wrap(0)));
        assertTrue(legacy.getMessage().contains("legacy default stream"), legacy.getMessage());
        try (CudaStream s = d.createStream();
             DeviceBuffer x = d.allocate(DataType.FLOAT32, 8L * n);
             DeviceBuffer y = d.allocate(DataType.FLOAT32, 8L * n)) {
            long seq = c.sequenceNumber();
            CudaGraph.Capture cap = CudaGraph.beginCapture(s);
            assertTrue(s.isCapturing());
            InvalidUsageException blocking = assertThrows(InvalidUsageException.class,
                    () -> c.allReduce(x, y, ReduceOp.SUM, s));
            assertTrue(blocking.getMessage().contains("allReduceAsync"), blocking.getMessage());
            InvalidUsageException sync = assertThrows(InvalidUsageException.class, () -> s.synchronize(T));
            assertTrue(sync.getMessage().contains("being captured"), sync.getMessage());
            assertThrows(InvalidUsageException.class, s::isIdle);
            InvalidUsageException a2a = assertThrows(InvalidUsageException.class, () -> c.allToAllAsync(x, x, s));
            assertTrue(a2a.getMessage().contains("separate send and recv"), a2a.getMessage());
            InvalidUsageException twice = assertThrows(InvalidUsageException.class, () -> CudaGraph.beginCapture(s));
            assertTrue(twice.getMessage().contains("already being captured"), twice.getMessage());
            assertEquals(seq, c.sequenceNumber(), "nothing reached NCCL");
            // None of the refusals touched the capture: it ends cleanly, empty.
            try (CudaGraph empty = cap.end()) {
                assertEquals(0, empty.collectiveCount());
                assertEquals(0, empty.nodeCount());
                assertTrue(empty.launch(s).await(T));
            }
            assertFalse(s.isCapturing());
            assertThrows(InvalidUsageException.class, cap::end);
            // A body that throws ends and discards its capture.
            IllegalStateException thrown = assertThrows(IllegalStateException.class,
                    () -> CudaGraph.capture(s, () -> {
                        throw new IllegalStateException("from the body");
                    }));
            assertEquals("from the body", thrown.getMessage());
            assertFalse(s.isCapturing());
            s.synchronize(T);
        }
    }

    @Test
    void aCaptureInvalidatedByAnUncapturableCallSaysSo() {
        NcclCommunicator c = comms.get(0);
        CudaDevice d = c.device();
        d.makeCurrent();
        try (CudaStream s = d.createStream(); DeviceBuffer x = d.allocate(DataType.FLOAT32, 64)) {
            long seq = c.sequenceNumber();
            CudaGraph.Capture cap = CudaGraph.beginCapture(s);
            // What another library might do: query the capturing stream (CUDA refuses it and
            // invalidates the capture).
            int r = CudaDriver.streamQuery(s.handle());
            assertTrue(r != CudaDriver.SUCCESS && r != CudaDriver.NOT_READY, "cuStreamQuery returned " + r);
            InvalidUsageException late = assertThrows(InvalidUsageException.class,
                    () -> c.allReduceAsync(x, x, ReduceOp.SUM, s));
            assertTrue(late.getMessage().contains("invalidated"), late.getMessage());
            assertEquals(seq, c.sequenceNumber(), "nothing reached NCCL");
            InvalidUsageException end = assertThrows(InvalidUsageException.class, cap::end);
            assertTrue(end.getMessage().contains("was invalidated"), end.getMessage());
            assertInstanceOf(CudaException.class, end.getCause());
            assertFalse(s.isCapturing());
            s.synchronize(T);
        }
    }

    @Test
    void aLaunchOnlyOneRankMakesFailsByTheDeadlineAndAbortsInsteadOfHanging() throws Exception {
        Duration shortT = Duration.ofSeconds(3);
        List<NcclCommunicator> own = NcclCommunicator.initAll(devs, shortT);
        try {
            List<CudaGraph> graphs = Gpu.onEach(own, T, c -> {
                c.device().makeCurrent();
                DeviceBuffer y = c.device().allocate(DataType.FLOAT32, N);
                return CudaGraph.capture(c.stream(), () -> c.allReduceAsync(y, y, ReduceOp.SUM));
            });
            NcclCommunicator c0 = own.get(0);
            c0.device().makeCurrent();
            long t0 = System.nanoTime();
            Work lonely = graphs.get(0).launch(c0.stream());
            CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class, lonely::await);
            double secs = (System.nanoTime() - t0) / 1e9;
            assertTrue(secs >= 2.9 && secs < 3 * shortT.toSeconds(), "failed after " + secs + " s");
            assertTrue(e.getMessage().contains("did every rank launch its graph"), e.getMessage());
            assertTrue(c0.isAborted(), "the deadline aborts the communicator, which stops its kernels");
            assertInstanceOf(JcclException.class, lonely.exception());
            InvalidUsageException again = assertThrows(InvalidUsageException.class,
                    () -> graphs.get(0).launch(c0.stream()));
            assertTrue(again.getMessage().contains("aborted"), again.getMessage());
            c0.stream().synchronize(T); // the aborted kernel really stopped
            for (int r = 0; r < graphs.size(); r++) {
                own.get(r).device().makeCurrent();
                graphs.get(r).close();
            }
        } finally {
            own.forEach(NcclCommunicator::abort);
            own.forEach(NcclCommunicator::close);
        }
    }

    private static float[] filled(int count, float v) {
        float[] a = new float[count];
        java.util.Arrays.fill(a, v);
        return a;
    }
}
