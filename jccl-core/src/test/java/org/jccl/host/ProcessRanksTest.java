package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.host.shm.ShmTransport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Real JVMs over real shared memory and a real store: every collective, and a rank killed with SIGKILL. */
class ProcessRanksTest {

    /** A started rank and everything it printed. */
    record Rank(Process process, List<String> lines, CountDownLatch ready) {
        String output() {
            synchronized (lines) {
                return String.join("\n", lines);
            }
        }
    }

    static List<Rank> start(int n, int port, String token, String job, String mode, Map<String, String> extraEnv)
            throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<Rank> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ProcessBuilder pb = new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector",
                    "--enable-native-access=ALL-UNNAMED", "-Xshare:auto", "-XX:TieredStopAtLevel=4",
                    "-cp", System.getProperty("java.class.path"), RankMain.class.getName(), mode);
            Map<String, String> env = pb.environment();
            env.keySet().removeIf(k -> k.startsWith("JCCL_") || k.startsWith("OMPI_") || k.startsWith("SLURM_")
                    || k.equals("RANK") || k.equals("WORLD_SIZE"));
            env.put("JCCL_RANK", Integer.toString(r));
            env.put("JCCL_WORLD_SIZE", Integer.toString(n));
            env.put("JCCL_LOCAL_RANK", Integer.toString(r));
            env.put("JCCL_LOCAL_WORLD_SIZE", Integer.toString(n));
            env.put("JCCL_STORE", "127.0.0.1:" + port);
            env.put("JCCL_JOB_ID", job);
            env.put("JCCL_TOKEN", token);
            env.putAll(extraEnv);
            pb.redirectErrorStream(true);
            Process p = pb.start();
            List<String> lines = new ArrayList<>();
            CountDownLatch ready = new CountDownLatch(1);
            Thread.ofVirtual().start(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = in.readLine()) != null; ) {
                        synchronized (lines) {
                            lines.add(line);
                        }
                        if (line.equals("ready")) {
                            ready.countDown();
                        }
                    }
                } catch (IOException ignored) {
                    // process gone
                }
            });
            ranks.add(new Rank(p, lines, ready));
        }
        return ranks;
    }

    @ParameterizedTest(name = "{0} processes")
    @ValueSource(ints = {2, 3, 4})
    void everyCollectiveAcrossProcesses(int n) throws Exception {
        String job = "pt" + ProcessHandle.current().pid() + "n" + n;
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "tok-" + n)) {
            List<Rank> ranks = start(n, server.port(), "tok-" + n, job, "check", Map.of("JCCL_TIMEOUT", "120s"));
            try {
                for (Rank r : ranks) {
                    assertTrue(r.process().waitFor(240, TimeUnit.SECONDS), "rank hung:\n" + r.output());
                }
                for (int i = 0; i < n; i++) {
                    Rank r = ranks.get(i);
                    assertEquals(0, r.process().exitValue(), "rank " + i + " failed:\n" + r.output());
                    assertTrue(r.output().contains("OK rank " + i), r.output());
                }
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
        assertNoSegmentsLeft(job);
    }

    @Test
    void survivorsOfASigkilledRankFailNamingIt() throws Exception {
        String job = "kill" + ProcessHandle.current().pid();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "k")) {
            // A long deadline: the survivors must notice the death itself, not time out.
            List<Rank> ranks = start(3, server.port(), "k", job, "loop", Map.of("JCCL_TIMEOUT", "120s"));
            try {
                for (Rank r : ranks) {
                    assertTrue(r.ready().await(90, TimeUnit.SECONDS), "rank never got ready:\n" + r.output());
                }
                Thread.sleep(300);
                long t0 = System.nanoTime();
                ranks.get(1).process().destroyForcibly(); // SIGKILL
                for (int i : new int[] {0, 2}) {
                    Rank r = ranks.get(i);
                    assertTrue(r.process().waitFor(30, TimeUnit.SECONDS), "survivor " + i + " hung:\n" + r.output());
                    assertEquals(3, r.process().exitValue(), r.output());
                    assertTrue(r.output().contains("rank 1"), "error should name rank 1:\n" + r.output());
                }
                double secs = (System.nanoTime() - t0) / 1e9;
                assertTrue(secs < 30, "survivors took " + secs + " s");
                System.out.println("survivors failed " + secs + " s after SIGKILL: " + ranks.get(0).output());
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
        assertNoSegmentsLeft(job);
    }

    @Test
    void survivorsShrinkAfterASigkillAndGoOnCorrectly() throws Exception {
        String job = "shrink" + ProcessHandle.current().pid();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "s")) {
            List<Rank> ranks = start(4, server.port(), "s", job, "shrink", Map.of("JCCL_TIMEOUT", "60s"));
            try {
                for (Rank r : ranks) {
                    assertTrue(r.ready().await(90, TimeUnit.SECONDS), "rank never got ready:\n" + r.output());
                }
                Thread.sleep(300);
                ranks.get(2).process().destroyForcibly();
                int[] newRanks = {0, 1, -1, 2};
                for (int i : new int[] {0, 1, 3}) {
                    Rank r = ranks.get(i);
                    assertTrue(r.process().waitFor(60, TimeUnit.SECONDS), "survivor " + i + " hung:\n" + r.output());
                    assertEquals(0, r.process().exitValue(), r.output());
                    assertTrue(r.output().contains("SHRUNK ok " + newRanks[i] + "/3"), r.output());
                }
                System.out.println("shrink: " + ranks.get(0).output());
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
        assertNoSegmentsLeft(job);
    }

    @Test
    void aStoppedRankMakesTheOthersFailAtTheirDeadlineNamingIt(@org.junit.jupiter.api.io.TempDir Path traces) throws Exception {
        String job = "stop" + ProcessHandle.current().pid();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "t")) {
            List<Rank> ranks = start(3, server.port(), "t", job, "loop",
                    Map.of("JCCL_TIMEOUT", "3s", "JCCL_TRACE_DIR", traces.toString()));
            try {
                for (Rank r : ranks) {
                    assertTrue(r.ready().await(90, TimeUnit.SECONDS), "rank never got ready:\n" + r.output());
                }
                Thread.sleep(300);
                long pid = ranks.get(1).process().pid();
                assertEquals(0, new ProcessBuilder("kill", "-STOP", Long.toString(pid)).start().waitFor());
                long t0 = System.nanoTime();
                for (int i : new int[] {0, 2}) {
                    Rank r = ranks.get(i);
                    assertTrue(r.process().waitFor(30, TimeUnit.SECONDS), "survivor " + i + " hung:\n" + r.output());
                    assertEquals(3, r.process().exitValue(), r.output());
                    assertTrue(r.output().contains("rank(s) [1]") || r.output().contains("rank 1"),
                            "error should name rank 1:\n" + r.output());
                }
                double secs = (System.nanoTime() - t0) / 1e9;
                System.out.println("SIGSTOP: survivors failed " + secs + " s after the stop: " + ranks.get(0).output());
                String verdict = org.jccl.diag.Doctor.diagnose(traces);
                System.out.println("doctor: " + verdict);
                assertTrue(verdict.contains("no dump from rank(s) [1]"), verdict);
                assertTrue(verdict.contains("rank 0") && verdict.contains("allReduce(FLOAT32 x 65536, MAX)"), verdict);
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
        assertNoSegmentsLeft(job);
    }

    @Test
    void losingTheRankThatHostsTheStoreIsAClearErrorNotAHang() throws Exception {
        String job = "storehost" + ProcessHandle.current().pid();
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort(); // nothing listens there: rank 0 will host the store itself
        }
        List<Rank> ranks = start(3, port, "h", job, "loop", Map.of("JCCL_TIMEOUT", "60s"));
        try {
            for (Rank r : ranks) {
                assertTrue(r.ready().await(90, TimeUnit.SECONDS), "rank never got ready:\n" + r.output());
            }
            Thread.sleep(300);
            long t0 = System.nanoTime();
            ranks.get(0).process().destroyForcibly();
            for (int i : new int[] {1, 2}) {
                Rank r = ranks.get(i);
                assertTrue(r.process().waitFor(30, TimeUnit.SECONDS), "survivor " + i + " hung:\n" + r.output());
                assertEquals(3, r.process().exitValue(), r.output());
                assertTrue(r.output().contains("rank 0"), "error should name rank 0:\n" + r.output());
            }
            System.out.println("store host killed: survivors failed " + (System.nanoTime() - t0) / 1e9 + " s later");
        } finally {
            ranks.forEach(r -> r.process().destroyForcibly());
        }
        assertNoSegmentsLeft(job);
    }

    static void assertNoSegmentsLeft(String job) throws IOException {
        try (Stream<Path> files = Files.list(ShmTransport.shmDirectory())) {
            List<Path> left = files.filter(p -> p.getFileName().toString().startsWith("jccl-" + job)).toList();
            assertTrue(left.isEmpty(), "shared memory files left behind: " + left);
        }
    }

    @AfterAll
    static void nothingOfOursInDevShm() throws IOException {
        ShmTransport.removeStaleFiles();
    }
}
