package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.ReduceOp;
import org.jccl.bootstrap.TcpStoreServer;
import org.junit.jupiter.api.Test;

/**
 * Worlds of thread ranks (one process, a thread per GPU, {@link Jccl#init} through a store, as the
 * conformance kit's thread worlds) created and closed back to back on the same GPUs, alternating 2
 * GPUs and every GPU. Each rank runs a small all-reduce (jccl's kernels), a large one (NCCL) and a
 * split's all-reduce, checks them, and closes; the next world starts while the last one's NCCL
 * teardowns still run on their threads. The JVM died twice in NCCL's teardown at the kit's switch
 * from its 2-GPU to its 4-GPU thread world (docs/RELIABILITY.md): this test repeats that switch.
 */
class NcclWorldsTest {
    private static final int WORLDS = 12;
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @Test
    void worldsOfTwoAndOfAllGpusOneAfterAnother() throws Exception {
        Gpu.assume(2);
        int all = CudaDevice.count();
        for (int w = 0; w < WORLDS; w++) {
            int g = w % 2 == 0 ? 2 : all;
            List<CudaDevice> devs = new ArrayList<>();
            ExecutorService pool = Executors.newFixedThreadPool(g);
            try (TcpStoreServer server = TcpStoreServer.start(new java.net.InetSocketAddress("127.0.0.1", 0), null)) {
                for (int r = 0; r < g; r++) {
                    devs.add(CudaDevice.open(r));
                }
                String job = "worlds" + w + "x" + Long.toHexString(System.nanoTime());
                List<Future<String>> fs = new ArrayList<>();
                for (int r = 0; r < g; r++) {
                    int rank = r;
                    int size = g;
                    CudaDevice dev = devs.get(r);
                    fs.add(pool.submit(() -> {
                        try (Communicator comm = Jccl.init(Gpu.threadRank(rank, size, dev, server.port(), job, TIMEOUT))) {
                            for (int count : new int[] {1000, 1 << 20}) {
                                String r1 = sumOfRanks(comm, dev, count, rank, size);
                                if (!r1.equals("ok")) {
                                    return r1;
                                }
                            }
                            try (Communicator half = comm.split(rank % 2, rank)) {
                                return sumOfRanks(half, dev, 4099, half.rank(), half.size());
                            }
                        }
                    }));
                }
                for (int r = 0; r < g; r++) {
                    assertEquals("ok", fs.get(r).get(120, TimeUnit.SECONDS), "world " + w + " (" + g + " GPUs), rank " + r);
                }
            } finally {
                pool.shutdownNow();
                devs.forEach(CudaDevice::close);
            }
        }
    }

    /** An in-place float all-reduce of rank + 1 + i % 7 on every rank, checked; "ok" or what differs. */
    private static String sumOfRanks(Communicator comm, CudaDevice dev, int count, int rank, int size) {
        float[] x = new float[count];
        for (int i = 0; i < count; i++) {
            x[i] = rank + 1 + i % 7;
        }
        try (DeviceBuffer b = dev.allocate(DataType.FLOAT32, count)) {
            b.copyFrom(HostBuffer.of(x));
            comm.allReduce(b, ReduceOp.SUM);
            float[] got = Gpu.download(b);
            for (int i = 0; i < count; i++) {
                float want = size * (size + 1) / 2f + size * (i % 7);
                if (got[i] != want) {
                    return "element " + i + " of " + count + " on " + size + " ranks: got " + got[i] + ", want " + want;
                }
            }
            return "ok";
        }
    }
}
