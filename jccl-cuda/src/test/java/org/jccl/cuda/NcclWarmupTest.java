package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.internal.Settings;
import org.junit.jupiter.api.Test;

/**
 * The JIT warm-up of NCCL communicators at creation ({@link NcclWarmup}, JCCL_WARMUP) on 2 GPUs of
 * one process: initAll, create from threads (with JCCL_CHECK=1) and split warm every rank for the
 * same number of blocks, the caller's first collectives are right and numbered from #1 (sequence
 * numbers, the flight recorder, the kernels' launch count), 0 turns it off, a tiny bound runs one
 * block on every rank, and a rank that never comes fails the others' warm-up at once instead of at
 * the deadline. The suite runs with JCCL_WARMUP=0 (pom.xml, run-gpu.sh); these tests turn it on
 * per communicator. The pure parts are in {@link NcclWarmupPlanTest}.
 */
class NcclWarmupTest {
    private static final Duration T = Duration.ofSeconds(60);
    private static final Duration LIMIT = Duration.ofSeconds(180);

    private static List<CudaDevice> twoGpus() {
        Gpu.assume(2);
        return new ArrayList<>(List.of(CudaDevice.open(0), CudaDevice.open(1)));
    }

    private static List<NcclCommunicator> initAll(List<CudaDevice> devs, String warmup) {
        return Settings.with(Map.of("JCCL_WARMUP", warmup), () -> NcclCommunicator.initAll(devs, T));
    }

    private static float[] filled(int count, float v) {
        float[] x = new float[count];
        java.util.Arrays.fill(x, v);
        return x;
    }

    /**
     * The caller's first collectives on a new communicator: a small all-reduce (jccl's kernels where
     * attached), one above a slot (NCCL) and a broadcast. "ok", or what went wrong.
     */
    static String firstCalls(NcclCommunicator c) {
        int n = c.size();
        int r = c.rank();
        if (c.sequenceNumber() != 0) {
            return "rank " + r + ": sequence number " + c.sequenceNumber() + " at creation, expected 0";
        }
        int big = (int) (CustomAllReduce.SLOT_BYTES / 4 + 1000);
        try (DeviceBuffer a = c.device().allocate(DataType.FLOAT32, 7);
             DeviceBuffer l = c.device().allocate(DataType.FLOAT32, big);
             DeviceBuffer b = c.device().allocate(DataType.FLOAT32, 5)) {
            float sum = n * (n + 1) / 2f;
            a.copyFrom(HostBuffer.of(filled(7, r + 1)));
            c.allReduce(a, ReduceOp.SUM);
            for (float v : Gpu.download(a)) {
                if (v != sum) {
                    return "rank " + r + ": the first allReduce gave " + v + ", expected " + sum;
                }
            }
            l.copyFrom(HostBuffer.of(filled(big, r + 1)));
            c.allReduce(l, ReduceOp.SUM);
            float[] got = Gpu.download(l);
            if (got[0] != sum || got[big - 1] != sum) {
                return "rank " + r + ": the large allReduce gave " + got[0] + ".." + got[big - 1] + ", expected " + sum;
            }
            b.copyFrom(HostBuffer.of(filled(5, r)));
            c.broadcast(b, n - 1);
            if (Gpu.download(b)[4] != n - 1) {
                return "rank " + r + ": broadcast gave " + Gpu.download(b)[4];
            }
            if (c.sequenceNumber() != 3) {
                return "rank " + r + ": sequence number " + c.sequenceNumber() + " after 3 calls";
            }
            CustomAllReduce k = c.car;
            if (k != null && k.launches != 1) {
                return "rank " + r + ": jccl's kernels counted " + k.launches + " launches, expected the caller's 1";
            }
            if (c.recorder.isRecording()) {
                Path dir = Files.createTempDirectory("jccl-nccl-warmup");
                List<String> ops = Files.readAllLines(c.dumpFlightRecord(dir)).stream()
                        .filter(s -> s.startsWith("{\"seq\":")).toList();
                if (ops.size() != 3 || !ops.get(0).startsWith("{\"seq\":1,\"op\":\"allReduce\"")
                        || !ops.get(1).startsWith("{\"seq\":2,\"op\":\"allReduce\"")
                        || !ops.get(2).startsWith("{\"seq\":3,\"op\":\"broadcast\"")) {
                    return "rank " + r + ": the flight record holds " + ops;
                }
            }
            return "ok";
        } catch (java.io.IOException e) {
            return "rank " + r + ": " + e;
        }
    }

    @Test
    void initAllWarmsEveryGpuForTheSameBlocksAndTheCallersFirstCollectiveIsNumberOne() throws Exception {
        List<CudaDevice> devs = twoGpus();
        List<NcclCommunicator> comms = null;
        try {
            int runs = NcclWarmup.RUNS.get();
            long free = devs.get(0).freeMemory();
            long t0 = System.nanoTime();
            comms = initAll(devs, "0.5");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("NcclWarmupTest: initAll of 2 GPUs with JCCL_WARMUP=0.5: " + ms + " ms, "
                    + comms.get(0).warmupBlocks + " blocks, " + (free - devs.get(0).freeMemory()) / (1 << 20)
                    + " MiB of GPU 0 taken, kernels " + (comms.get(0).car != null ? "on" : "off"));
            assertEquals(runs + 2, NcclWarmup.RUNS.get(), "each GPU's communicator warmed up once");
            assertTrue(comms.get(0).warmupBlocks > 0, "no block ran");
            assertEquals(comms.get(0).warmupBlocks, comms.get(1).warmupBlocks, "the ranks ran different numbers of blocks");
            Gpu.assertEachOk(comms, LIMIT, NcclWarmupTest::firstCalls);
        } finally {
            Gpu.closeAll(comms, devs);
        }
    }

    @Test
    void zeroRunsNone() throws Exception {
        List<CudaDevice> devs = twoGpus();
        List<NcclCommunicator> comms = null;
        try {
            int runs = NcclWarmup.RUNS.get();
            long free = devs.get(0).freeMemory();
            long t0 = System.nanoTime();
            comms = initAll(devs, "0");
            System.out.println("NcclWarmupTest: initAll of 2 GPUs with JCCL_WARMUP=0: " + (System.nanoTime() - t0) / 1_000_000
                    + " ms, " + (free - devs.get(0).freeMemory()) / (1 << 20) + " MiB of GPU 0 taken");
            assertEquals(runs, NcclWarmup.RUNS.get());
            assertEquals(0, comms.get(0).warmupBlocks);
            assertEquals(0, comms.get(1).warmupBlocks);
            Gpu.assertEachOk(comms, LIMIT, NcclWarmupTest::firstCalls);
        } finally {
            Gpu.closeAll(comms, devs);
        }
    }

    @Test
    void createFromThreadsWarmsEveryRankAndJcclCheckCountsTheCallersCollectivesFromOne() throws Exception {
        List<CudaDevice> devs = twoGpus();
        int n = devs.size();
        byte[] uid = Nccl.newUniqueId();
        MemoryStore store = new MemoryStore();
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<String>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int r = i;
                fs.add(pool.submit(() -> {
                    try (NcclCommunicator c = Settings.with(Map.of("JCCL_WARMUP", "0.5", "JCCL_CHECK", "1"),
                            () -> NcclCommunicator.create(devs.get(r), r, n, uid, T, store))) {
                        if (c.check == null) {
                            return "rank " + r + ": JCCL_CHECK is off";
                        }
                        if (c.warmupBlocks <= 0) {
                            return "rank " + r + ": no warm-up block ran";
                        }
                        String first = firstCalls(c);
                        return first.equals("ok") ? "ok " + c.warmupBlocks : first;
                    }
                }));
            }
            List<String> out = new ArrayList<>();
            for (Future<String> f : fs) {
                out.add(f.get(LIMIT.toSeconds(), TimeUnit.SECONDS));
            }
            assertTrue(out.get(0).startsWith("ok "), out.toString());
            assertEquals(out.get(0), out.get(1), "both ranks ok, after the same number of blocks");
        } finally {
            pool.shutdownNow();
            Gpu.closeAll(null, devs);
        }
    }

    @Test
    void aSplitChildWarmsUpOnItsRanksAndCountsFromOne() throws Exception {
        List<CudaDevice> devs = twoGpus();
        List<NcclCommunicator> comms = null;
        try {
            comms = initAll(devs, "0.5");
            List<String> out = Gpu.onEach(comms, LIMIT, c -> {
                try (NcclCommunicator child = c.split(0, c.rank())) {
                    String first = firstCalls(child);
                    return first.equals("ok") ? "ok " + child.warmupBlocks : first;
                }
            });
            System.out.println("NcclWarmupTest: a split child's warm-up: " + out);
            assertTrue(out.get(0).startsWith("ok ") && !out.get(0).equals("ok 0"), out.toString());
            assertEquals(out.get(0), out.get(1), "both ranks ok, after the same number of blocks");
        } finally {
            Gpu.closeAll(comms, devs);
        }
    }

    @Test
    void aTinyBoundRunsOneBlockOnEveryRank() throws Exception {
        List<CudaDevice> devs = twoGpus();
        List<NcclCommunicator> comms = null;
        try {
            comms = initAll(devs, "0");
            assertEquals(List.of(1, 1), Gpu.onEach(comms, LIMIT, c -> NcclWarmup.run(c, 1e-6)));
            Gpu.assertEachOk(comms, LIMIT, NcclWarmupTest::firstCalls);
        } finally {
            Gpu.closeAll(comms, devs);
        }
    }

    @Test
    void aRankThatNeverComesFailsTheOthersAtOnceNotAtTheDeadline() {
        List<CudaDevice> devs = twoGpus();
        List<NcclCommunicator> comms = null;
        try {
            comms = initAll(devs, "0");
            List<NcclCommunicator> cs = comms;
            cs.get(1).abort(); // rank 1 never makes the warm-up's collectives
            long t0 = System.nanoTime();
            JcclException e = assertThrows(JcclException.class, () -> NcclWarmup.atCreationAll(cs, 5));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertNotNull(e.getMessage());
            assertTrue(e.getMessage().startsWith("the JIT warm-up at the creation of rank 1 of 2"), e.getMessage());
            assertTrue(ms < 10_000, "failed after " + ms + " ms, the deadline is " + T);
            assertTrue(cs.get(0).isAborted(), "rank 0 waited for rank 1: it is aborted too");
        } finally {
            Gpu.closeAll(comms, devs);
        }
    }
}
