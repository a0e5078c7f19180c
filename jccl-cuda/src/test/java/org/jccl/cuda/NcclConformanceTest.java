package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jccl.Communicator;
import org.jccl.Jccl;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.kit.Kit;
import org.jccl.kit.Traits;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The conformance kit (org.jccl.kit, jccl-core's test jar) on the NCCL backend, buffers in GPU
 * memory ({@link DeviceMem}), with {@code Traits.nccl} (what NCCL does not promise is excluded
 * there, with the reason). Two worlds: one process driving the GPUs (a thread per GPU, each rank
 * {@code Jccl.init} with its CudaDevice and a shared TCP store) and a process per GPU ({@link
 * NcclKitMain}); 2 and 4 GPUs. A process world also runs the mismatch cases with {@code
 * JCCL_CHECK=1}, where jccl detects collective mismatches in the call. Skipped, with the
 * reason, without CUDA, NCCL or enough GPUs.
 *
 * <p>Reproduce: {@code -Djccl.kit.seed=<seed> -Djccl.kit.cases=<regex>} (passed to process ranks).
 */
class NcclConformanceTest {
    private static final long SEED = Kit.seed();
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** A world that runs longer than this hangs: it fails with what each rank started last. */
    private static final long LIMIT_SECONDS = Long.getLong("jccl.kit.ncclLimitSeconds", 240);

    @ParameterizedTest(name = "{0} GPUs, a thread per GPU, {1}")
    @CsvSource({"2, full", "4, quick"})
    void threadsAsRanks(int gpus, String matrix) throws Exception {
        Gpu.assume(gpus);
        boolean full = matrix.equals("full");
        String label = "nccl " + gpus + " threads " + matrix;
        List<CudaDevice> devs = new ArrayList<>();
        ConcurrentHashMap<Integer, String> started = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(gpus);
        try (TcpStoreServer server = TcpStoreServer.start(new java.net.InetSocketAddress("127.0.0.1", 0), null)) {
            for (int r = 0; r < gpus; r++) {
                devs.add(CudaDevice.open(r));
            }
            String job = "kitt" + Long.toHexString(System.nanoTime());
            List<Future<Kit.Report>> fs = new ArrayList<>();
            for (int r = 0; r < gpus; r++) {
                int rank = r;
                CudaDevice dev = devs.get(r);
                fs.add(pool.submit(() -> {
                    try (Communicator comm = Jccl.init(Gpu.threadRank(rank, gpus, dev, server.port(), job, TIMEOUT))) {
                        assertEquals("nccl", comm.backend());
                        Traits traits = Traits.nccl(dev.supportsFp8(), false).named(label);
                        java.util.function.Predicate<String> select = Kit.selection();
                        return Kit.run(comm, () -> new DeviceMem(dev), traits, SEED, full, n -> {
                            boolean run = select.test(n);
                            if (run) {
                                started.put(rank, n);
                            }
                            return run;
                        });
                    }
                }));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LIMIT_SECONDS);
            List<String> failures = new ArrayList<>();
            for (int r = 0; r < gpus; r++) {
                Kit.Report rep;
                try {
                    rep = fs.get(r).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    fail(label + ": rank " + r + " did not finish within " + LIMIT_SECONDS + " s (a hang); case each rank "
                            + "started last: " + started + "\n" + jcclStacks());
                    return;
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new AssertionError(label + ": rank " + r + " failed outside the kit (forming the communicator?)",
                            e.getCause());
                }
                failures.addAll(rep.failures());
                if (r == 0) {
                    System.out.println(label + ": " + rep.ran());
                }
            }
            assertNoFailures(label, failures);
        } finally {
            pool.shutdownNow();
            devs.forEach(CudaDevice::close);
        }
    }

    @ParameterizedTest(name = "{0} GPUs, a process per GPU, {1}")
    @CsvSource({"2, quick, ''", "4, full, ''", "2, quick, check"})
    void processesAsRanks(int gpus, String matrix, String check) throws Exception {
        Gpu.assume(gpus);
        boolean jcclCheck = check.equals("check");
        String label = "nccl " + gpus + " processes " + matrix + (jcclCheck ? " JCCL_CHECK=1" : "");
        // JCCL_CHECK compares collectives only: that run covers the mismatch cases, send/recv sizes aside (Traits.nccl)
        String cases = jcclCheck ? "^errors\\.mismatch\\.(?!sendRecvSize)" : System.getProperty("jccl.kit.cases");
        Path dir = Files.createTempDirectory(Files.createDirectories(Path.of(System.getProperty("jccl.test.dir",
                System.getProperty("java.io.tmpdir")))), "jccl-kit");
        List<Process> ps = new ArrayList<>();
        try (TcpStoreServer server = TcpStoreServer.start(new java.net.InetSocketAddress("127.0.0.1", 0), null)) {
            String job = "kitp" + Long.toHexString(System.nanoTime());
            for (int r = 0; r < gpus; r++) {
                String java = ProcessHandle.current().info().command().orElse("java");
                List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "--add-modules",
                        "jdk.incubator.vector", "-cp", absoluteClassPath(), NcclKitMain.class.getName(),
                        Integer.toString(r), Integer.toString(gpus), Integer.toString(server.port()), job, label, matrix));
                if (jcclCheck) {
                    cmd.add("check");
                }
                ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                        .redirectOutput(dir.resolve("rank" + r + ".log").toFile()).directory(dir.toFile());
                pb.environment().keySet().removeIf(k -> k.startsWith("JCCL_"));
                pb.environment().put("NCCL_NVLS_ENABLE", "0");
                pb.environment().put("JCCL_KIT_SEED", Long.toString(SEED));
                if (cases != null && !cases.isBlank()) {
                    pb.environment().put("JCCL_KIT_CASES", cases);
                }
                if (jcclCheck) {
                    pb.environment().put("JCCL_CHECK", "1");
                }
                ps.add(pb.start());
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LIMIT_SECONDS);
            for (int r = 0; r < gpus; r++) {
                if (!ps.get(r).waitFor(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    dumpThreads(ps);
                    ps.forEach(Process::destroyForcibly);
                    fail(label + ": rank " + r + " did not finish within " + LIMIT_SECONDS + " s (a hang; killed):\n"
                            + Gpu.rankLogs(dir, gpus));
                }
            }
            String all = Gpu.rankLogs(dir, gpus);
            List<String> failures = org.jccl.kit.KitMain.failures(all);
            int done = org.jccl.kit.KitMain.done(all);
            assertNoFailures(label, failures);
            assertEquals(gpus, done, label + ": " + done + " of " + gpus + " ranks finished the kit:\n" + all);
            for (int r = 0; r < gpus; r++) {
                assertEquals(0, ps.get(r).exitValue(), label + ": rank " + r + " exit code:\n" + all);
            }
            assertTrue(all.contains("KIT-RAN "), label + ": no case ran:\n" + all);
            System.out.println(label + ": every rank passed");
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }

    /** A hang's evidence: the stacks of this JVM's threads that are in jccl, jccl frames and the one on top. */
    private static String jcclStacks() {
        StringBuilder b = new StringBuilder("threads in jccl:\n");
        Thread.getAllStackTraces().forEach((t, st) -> {
            if (java.util.Arrays.stream(st).anyMatch(f -> f.getClassName().startsWith("org.jccl"))) {
                b.append("  \"").append(t.getName()).append("\" ").append(t.getState()).append('\n');
                for (int i = 0; i < st.length; i++) {
                    if (i == 0 || st[i].getClassName().startsWith("org.jccl.cuda") || st[i].getClassName().startsWith("org.jccl.kit")) {
                        b.append("      at ").append(st[i]).append('\n');
                    }
                }
            }
        });
        return b.toString();
    }

    /** SIGQUIT to the ranks still running: each JVM prints its threads' stacks into its log (see {@link Gpu#rankLogs}). */
    private static void dumpThreads(List<Process> ps) throws InterruptedException {
        for (Process p : ps) {
            if (p.isAlive()) {
                try {
                    new ProcessBuilder("kill", "-QUIT", Long.toString(p.pid())).start().waitFor(5, TimeUnit.SECONDS);
                } catch (IOException e) {
                    // no kill(1): the logs say what they say
                }
            }
        }
        Thread.sleep(2000);
    }

    private static void assertNoFailures(String world, List<String> failures) {
        if (!failures.isEmpty()) {
            StringBuilder b = new StringBuilder(world + ": " + failures.size() + " failure(s), seed " + SEED
                    + " (rerun with -Djccl.kit.seed=" + SEED + " -Djccl.kit.cases=<case>):\n");
            failures.stream().limit(40).forEach(f -> b.append("  ").append(f).append('\n'));
            fail(b.toString());
        }
    }

    /** This JVM's class path with absolute entries: the ranks run in a directory of their own. */
    private static String absoluteClassPath() {
        StringBuilder b = new StringBuilder();
        for (String e : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            if (!e.isEmpty()) {
                b.append(b.isEmpty() ? "" : java.io.File.pathSeparator).append(Path.of(e).toAbsolutePath());
            }
        }
        return b.toString();
    }
}
