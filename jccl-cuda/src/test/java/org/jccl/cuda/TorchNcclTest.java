package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.bootstrap.TorchStore;
import org.jccl.host.kernel.LowPrecision;
import org.jccl.kit.Kit;
import org.jccl.kit.Traits;
import org.jccl.testing.PythonTorch;
import org.jccl.testing.Require;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Mixed PyTorch/jccl NCCL jobs ({@link TorchNccl}): Python ranks run {@code torch.distributed}'s
 * NCCL process group, Java ranks join its communicator through torch's own TCPStore, and both run
 * the same all-reduces and broadcasts on GPU memory, each side checking every element. Needs GPUs,
 * NCCL and a torch 2.x with CUDA ({@code JCCL_TEST_PYTHON} names its interpreter); skipped with
 * the reason otherwise ({@code JCCL_REQUIRE=torch-cuda} makes that a failure).
 */
class TorchNcclTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** Prime: no NCCL chunking divides it; i * 10 stays exact in FLOAT32. */
    private static final int N = 1_000_003;

    /**
     * The Python side: rank {@code argv[3]} on GPU {@code argv[3]}, which also hosts the store when
     * it is rank 0 (else a Java process hosts it: jccl's TorchStoreServer).
     */
    private static final String PYTHON_RANK = """
            import sys, datetime, torch, torch.distributed as dist
            host, port, rank, world, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
            t = datetime.timedelta(seconds=120)
            store = dist.TCPStore(host, port, world, rank == 0, t, wait_for_workers=False)
            print("READY", flush=True)
            dev = torch.device("cuda", rank)
            torch.cuda.set_device(dev)
            print("INIT", flush=True)
            dist.init_process_group("nccl", store=store, rank=rank, world_size=world, device_id=dev, timeout=t)
            print("JOINED", flush=True)
            i = torch.arange(n, dtype=torch.float32, device=dev)
            total = world * (world + 1) // 2
            # 1: all-reduce, rank r contributing (r + 1) * i
            x = i * (rank + 1)
            dist.all_reduce(x)
            ok1 = torch.equal(x, i * total)
            # 2: the trainer (rank 0) broadcasts its weights
            w = (torch.remainder(i, 1000) * 0.25 - 100) if rank == 0 else torch.zeros(n, dtype=torch.float32, device=dev)
            dist.broadcast(w, src=0)
            ok2 = torch.equal(w, torch.remainder(i, 1000) * 0.25 - 100)
            # 3: bf16 all-reduce of small integers (exact)
            b = torch.full((n,), rank + 1, dtype=torch.bfloat16, device=dev)
            dist.all_reduce(b)
            ok3 = bool((b == total).all())
            # 4: the last rank broadcasts
            z = (torch.remainder(i, 777) - 300) if rank == world - 1 else torch.zeros(n, dtype=torch.float32, device=dev)
            dist.broadcast(z, src=world - 1)
            ok4 = torch.equal(z, torch.remainder(i, 777) - 300)
            torch.cuda.synchronize()
            print(f"RESULT rank {rank} allreduce={ok1} broadcast={ok2} bf16={ok3} lastroot={ok4}", flush=True)
            dist.destroy_process_group()
            """;

    /**
     * {@code first} names the side with rank 0 (which makes the unique id and broadcasts first):
     * {@code python} (the trainer; its TCPStore hosts the store) or {@code java} (jccl's
     * TorchStoreServer hosts it, and torch's clients connect to it).
     */
    @ParameterizedTest(name = "{0} Python + {1} Java ranks, {2} ranks first")
    @CsvSource({"1, 1, python", "1, 1, java", "2, 2, python"})
    void pythonAndJavaRanksRunTheSameCollectives(int pythonRanks, int javaRanks, String first, @TempDir Path dir)
            throws Exception {
        int world = pythonRanks + javaRanks;
        Gpu.assume(world);
        Require.require("torch-cuda", PythonTorch.cudaUnavailable(world));
        System.out.println("torch " + PythonTorch.version() + " (" + PythonTorch.PYTHON + "), NCCL " + Nccl.versionString()
                + " from " + Nccl.libraryPath());
        boolean pythonFirst = first.equals("python");
        int pyBase = pythonFirst ? 0 : javaRanks;
        int javaBase = pythonFirst ? pythonRanks : 0;
        int port = PythonTorch.freePort();
        List<PythonTorch.Script> py = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(javaRanks);
        org.jccl.bootstrap.TorchStoreServer server = pythonFirst ? null
                : org.jccl.bootstrap.TorchStoreServer.start(new java.net.InetSocketAddress("127.0.0.1", port));
        try {
            for (int r = pyBase; r < pyBase + pythonRanks; r++) {
                py.add(PythonTorch.Script.start(dir, "rank" + r + ".py", PYTHON_RANK, "127.0.0.1", Integer.toString(port),
                        Integer.toString(r), Integer.toString(world), Integer.toString(N)));
                if (r == 0) {
                    py.get(0).awaitLine("READY"); // rank 0's store is up
                }
            }
            List<Future<String>> java = new ArrayList<>();
            for (int r = javaBase; r < javaBase + javaRanks; r++) {
                int rank = r;
                java.add(pool.submit(() -> javaRank(port, rank, world)));
            }
            for (Future<String> f : java) {
                String got;
                try {
                    got = f.get(300, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    StringBuilder out = new StringBuilder();
                    for (int i = 0; i < py.size(); i++) {
                        out.append("python rank ").append(pyBase + i).append(":\n").append(py.get(i).drain());
                    }
                    throw new AssertionError("a Java rank failed: " + e.getCause() + "\n" + out, e.getCause());
                }
                System.out.println(got);
                assertEquals("ok", got.substring(got.lastIndexOf(' ') + 1), got);
            }
            for (int i = 0; i < pythonRanks; i++) {
                String out = py.get(i).finish();
                System.out.print("python " + out);
                assertTrue(out.contains("RESULT rank " + (pyBase + i) + " allreduce=True broadcast=True bf16=True lastroot=True"),
                        out);
            }
        } finally {
            pool.shutdownNow();
            for (PythonTorch.Script s : py) {
                s.close();
            }
            if (server != null) {
                server.close();
            }
        }
    }

    /** One Java rank: joins through torch's store, runs the Python side's four collectives, checks each. */
    private static String javaRank(int port, int rank, int world) {
        try (TorchStore store = TorchStore.connect("127.0.0.1", port, null, TIMEOUT);
             CudaDevice gpu = CudaDevice.open(rank)) {
            store.countAsWorker();
            List<String> bad = new ArrayList<>();
            NcclCommunicator joined;
            try {
                joined = TorchNccl.joinDefaultGroup(gpu, store, rank, world, TIMEOUT);
            } catch (org.jccl.CollectiveTimeoutException e) {
                throw new AssertionError(e.getMessage() + "; the store holds " + store.listKeys(), e);
            }
            try (NcclCommunicator comm = joined;
                 DeviceBuffer x = gpu.allocate(DataType.FLOAT32, N);
                 DeviceBuffer b = gpu.allocate(DataType.BFLOAT16, N)) {
                int total = world * (world + 1) / 2;
                float[] h = new float[N];
                for (int i = 0; i < N; i++) {
                    h[i] = (float) i * (rank + 1);
                }
                x.copyFrom(HostBuffer.of(h));
                comm.allReduce(x, ReduceOp.SUM);
                x.copyTo(HostBuffer.of(h));
                check(bad, "allReduce", h, i -> (float) i * total);

                for (int i = 0; i < N; i++) {
                    h[i] = rank == 0 ? (i % 1000) * 0.25f - 100 : 0;
                }
                x.copyFrom(HostBuffer.of(h));
                comm.broadcast(x, 0);
                x.copyTo(HostBuffer.of(h));
                check(bad, "broadcast from rank 0", h, i -> (i % 1000) * 0.25f - 100);

                short[] bits = new short[N];
                java.util.Arrays.fill(bits, LowPrecision.floatToBf16(rank + 1));
                b.copyFrom(HostBuffer.of(DataType.BFLOAT16, bits));
                comm.allReduce(b, ReduceOp.SUM);
                b.copyTo(HostBuffer.of(DataType.BFLOAT16, bits));
                float[] bf = new float[N];
                for (int i = 0; i < N; i++) {
                    bf[i] = LowPrecision.bf16ToFloat(bits[i]);
                }
                check(bad, "bf16 allReduce", bf, i -> total);

                for (int i = 0; i < N; i++) {
                    h[i] = rank == world - 1 ? (i % 777) - 300 : 0;
                }
                x.copyFrom(HostBuffer.of(h));
                comm.broadcast(x, world - 1);
                x.copyTo(HostBuffer.of(h));
                check(bad, "broadcast from the last rank", h, i -> (i % 777) - 300);
            }
            return "java rank " + rank + " of " + world + ": " + (bad.isEmpty() ? "ok" : String.join("; ", bad) + " FAILED");
        }
    }

    private static void check(List<String> bad, String what, float[] got, java.util.function.IntToDoubleFunction want) {
        for (int i = 0; i < got.length; i++) {
            if (got[i] != (float) want.applyAsDouble(i)) {
                bad.add(what + ": element " + i + " is " + got[i] + ", want " + (float) want.applyAsDouble(i));
                return;
            }
        }
    }

    /**
     * The conformance kit (quick subset) on an NCCL communicator formed the torch way: two Java
     * ranks meet through torch's own TCPStore (a Python process hosts it) under the default group's
     * key. Such a communicator has no jccl store (in a mixed job the other ranks are Python ones),
     * so a timeout cannot name the missing rank ({@link Traits#withoutStore()}).
     */
    @Test
    void conformanceKitOnACommunicatorFormedThroughTorchsStore(@TempDir Path dir) throws Exception {
        Gpu.assume(2);
        Require.require("torch", PythonTorch.unavailable());
        int port = PythonTorch.freePort();
        long seed = Kit.seed();
        try (PythonTorch.Script server = PythonTorch.startTorchServer(dir, port, 2)) {
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                List<Future<Kit.Report>> fs = new ArrayList<>();
                for (int r = 0; r < 2; r++) {
                    int rank = r;
                    fs.add(pool.submit(() -> {
                        try (TorchStore store = TorchStore.connect("127.0.0.1", port, null, TIMEOUT);
                             CudaDevice gpu = CudaDevice.open(rank);
                             NcclCommunicator comm = TorchNccl.joinDefaultGroup(gpu, store, rank, 2, TIMEOUT)) {
                            return Kit.run(comm, () -> new DeviceMem(gpu), Traits.nccl(gpu.supportsFp8(), false)
                                    .withoutStore().named("nccl via torch's store"), seed, false, Kit.selection());
                        }
                    }));
                }
                List<String> failures = new ArrayList<>();
                for (Future<Kit.Report> f : fs) {
                    Kit.Report rep = f.get(300, TimeUnit.SECONDS);
                    failures.addAll(rep.failures());
                    assertTrue(!rep.ran().isEmpty() || System.getProperty("jccl.kit.cases") != null, "no case ran");
                }
                System.out.println("nccl via torch's store: kit seed " + seed + ", " + fs.get(0).get().ran().size() + " cases");
                if (!failures.isEmpty()) {
                    fail(failures.size() + " failure(s), seed " + seed + ":\n  " + String.join("\n  ",
                            failures.subList(0, Math.min(40, failures.size()))));
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }

    /** Bad arguments fail before any store traffic or native call, naming the argument. */
    @Test
    void badArgumentsAreRefusedBeforeAnyTraffic() throws Exception {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TorchNccl.join(null, null, "", 0, 1, TIMEOUT));
        assertTrue(e.getMessage().startsWith("key is empty"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> TorchNccl.join(null, null, "k", 2, 2, TIMEOUT));
        assertTrue(e.getMessage().startsWith("rank 2 of size 2"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> TorchNccl.join(null, null, "k", 0, 2, Duration.ZERO));
        assertTrue(e.getMessage().startsWith("timeout is PT0S"), e.getMessage());
        NullPointerException npe = assertThrows(NullPointerException.class, () -> TorchNccl.join(null, null, "k", 0, 2, TIMEOUT));
        assertTrue(npe.getMessage().startsWith("store"), npe.getMessage());
        // a torch 1.x store: refused before any key is read or set
        try (org.jccl.bootstrap.TorchStoreServer server = org.jccl.bootstrap.TorchStoreServer.start(
                new java.net.InetSocketAddress("127.0.0.1", 0));
             TorchStore old = TorchStore.connect("127.0.0.1", server.port(),
                     org.jccl.bootstrap.TorchStoreProtocol.Generation.TORCH_1, TIMEOUT)) {
            e = assertThrows(IllegalArgumentException.class, () -> TorchNccl.joinDefaultGroup(null, old, 1, 2, TIMEOUT));
            assertTrue(e.getMessage().contains("torch 1.x"), e.getMessage());
            assertEquals(0, old.numKeys(), "nothing was written");
        }
    }
}
