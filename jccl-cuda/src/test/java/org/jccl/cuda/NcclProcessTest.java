package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * One process per GPU: real JVMs started with the same java and class path ({@link RankMain}),
 * meeting through a directory store. Runs the full collective matrix in every rank, CUDA IPC
 * between processes, and the fault case (a rank SIGKILLed mid-job).
 */
class NcclProcessTest {
    private static final java.util.concurrent.atomic.AtomicInteger STORE_PORT = new java.util.concurrent.atomic.AtomicInteger();

    private static Process start(String mode, int rank, int size, Path dir) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"),
                RankMain.class.getName(), mode, Integer.toString(rank), Integer.toString(size), dir.toString()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(dir.resolve("rank" + rank + ".log").toFile());
        pb.environment().put("NCCL_NVLS_ENABLE", "0");
        if (mode.equals("check")) {
            pb.environment().put("JCCL_CHECK", "1");
        }
        if (mode.equals("shrink")) {
            pb.environment().put("JCCL_TRACE_DIR", dir.resolve("traces").toString());
        }
        if (STORE_PORT.get() != 0) {
            pb.environment().put("JCCL_TEST_STORE_PORT", Integer.toString(STORE_PORT.get()));
        }
        return pb.start();
    }

    private static String logs(Path dir, int size) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int r = 0; r < size; r++) {
            Path p = dir.resolve("rank" + r + ".log");
            if (Files.exists(p)) {
                String s = Files.readString(p);
                sb.append("---- rank ").append(r).append('\n').append(s.length() > 6000 ? s.substring(s.length() - 6000) : s);
            }
        }
        return sb.toString();
    }

    private static Path workDir(String name) throws IOException {
        Path base = Path.of(System.getProperty("jccl.test.dir", System.getProperty("java.io.tmpdir")));
        return Files.createTempDirectory(Files.createDirectories(base), name);
    }

    @Test
    void matrixWithOneProcessPerGpu() throws Exception {
        Gpu.assume(2);
        int size = CudaDevice.count();
        Path dir = workDir("jccl-matrix");
        List<Process> ps = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            ps.add(start("matrix", r, size, dir));
        }
        try {
            for (int r = 0; r < size; r++) {
                assertTrue(ps.get(r).waitFor(9, TimeUnit.MINUTES), "rank " + r + " did not finish\n" + logs(dir, size));
            }
            String all = logs(dir, size);
            System.out.println(all);
            for (int r = 0; r < size; r++) {
                assertEquals(0, ps.get(r).exitValue(), "rank " + r + " failed\n" + all);
            }
            Matcher m = Pattern.compile("CASES (\\d+) FAILURES 0").matcher(all);
            int ranksOk = 0;
            while (m.find()) {
                ranksOk++;
            }
            assertEquals(size, ranksOk, all);
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }

    @Test
    void killedPeerFailsPendingWorkByTheDeadlineAndTheSurvivorRecovers() throws Exception {
        Gpu.assume(2);
        Path dir = workDir("jccl-fault");
        Process p0 = start("fault", 0, 2, dir);
        Process p1 = start("fault", 1, 2, dir);
        try {
            long t0 = System.nanoTime();
            while (!(Files.exists(dir.resolve("ready-0")) && Files.exists(dir.resolve("ready-1")))) {
                assertTrue(System.nanoTime() - t0 < 120_000_000_000L, "ranks never got ready\n" + logs(dir, 2));
                assertTrue(p0.isAlive() && p1.isAlive(), "a rank died early\n" + logs(dir, 2));
                Thread.sleep(20);
            }
            p1.destroyForcibly(); // SIGKILL
            assertTrue(p1.waitFor(30, TimeUnit.SECONDS));
            Files.writeString(dir.resolve("killed"), "yes");
            assertTrue(p0.waitFor(3, TimeUnit.MINUTES), "survivor hung\n" + logs(dir, 2));
            String log = logs(dir, 2);
            System.out.println(log);
            assertEquals(0, p0.exitValue(), log);
            Matcher m = Pattern.compile("PENDING_FAILED after (\\d+) ms: (.*)").matcher(log);
            assertTrue(m.find(), log);
            long ms = Long.parseLong(m.group(1));
            assertTrue(ms < 8_000 + 10_000, "the pending all-reduce failed after " + ms + " ms; deadline 8 s\n" + log);
            assertTrue(m.group(2).contains("allReduce #2"), "the cause names op and sequence number: " + m.group(2));
            assertTrue(log.contains("LATER_CALL_REFUSED"), log);
            assertTrue(log.contains("RECOVERED new communicator, all-reduce gave 5.0"), log);
        } finally {
            p0.destroyForcibly();
            p1.destroyForcibly();
        }
    }

    @Test
    void jcclCheckFailsMismatchesOnEveryRankAndNamesTheMissingRank() throws Exception {
        Gpu.assume(2);
        int size = CudaDevice.count();
        Path dir = workDir("jccl-check");
        List<Process> ps = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            ps.add(start("check", r, size, dir));
        }
        try {
            for (int r = 0; r < size; r++) {
                assertTrue(ps.get(r).waitFor(3, TimeUnit.MINUTES), "rank " + r + " hung\n" + logs(dir, size));
            }
            String all = logs(dir, size);
            System.out.println(all);
            for (int r = 0; r < size; r++) {
                assertEquals(0, ps.get(r).exitValue(), "rank " + r + " failed\n" + all);
                assertTrue(all.contains("[" + r + "] MISMATCH_COUNT collective mismatch at collective #2 (JCCL_CHECK): "
                        + "rank 0 called allReduce(FLOAT32 x 1024, SUM); rank 1 called allReduce(FLOAT32 x 1000, SUM)"), all);
                assertTrue(all.contains("[" + r + "] MISMATCH_OP collective mismatch at collective #3 (JCCL_CHECK): "
                        + "rank 0 called broadcast(FLOAT32 x 1024, root 0); rank 1 called allReduce(FLOAT32 x 1024, MAX)"), all);
                assertTrue(all.contains("[" + r + "] AFTER_MISMATCH ok"), all);
            }
            Matcher m = Pattern.compile("MISSING \\[(\\d+)\\] after (\\d+) ms").matcher(all);
            int named = 0;
            while (m.find()) {
                named++;
                assertEquals(size - 1, Integer.parseInt(m.group(1)), all);
                assertTrue(Long.parseLong(m.group(2)) < 6_000 + 3_000, "named after " + m.group(2) + " ms, deadline 6 s");
            }
            assertEquals(size - 1, named, all);
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }

    @Test
    void survivorsShrinkExcludingTheKilledRankAndAllReduceCorrectly() throws Exception {
        shrinkAfterKill("shrink", 8_000 + 4_000);
        // JCCL_TRACE_DIR: every survivor dumped its flight recorder when the all-reduce failed.
        Path traces = lastDir.resolve("traces");
        String verdict = org.jccl.diag.Doctor.diagnose(traces);
        System.out.println("doctor: " + verdict);
        int size = CudaDevice.count();
        assertTrue(verdict.contains((size - 1) + " of " + size + " ranks dumped"), verdict);
        assertTrue(verdict.contains("no dump from rank(s) [" + (size - 1) + "]"), verdict);
        assertTrue(verdict.contains("allReduce"), verdict);
    }

    private Path lastDir;

    /** With heartbeats through a TCP store, the death is known within 2 heartbeats + 1 s, not at the deadline. */
    @Test
    void heartbeatsNameTheKilledRankWithinTwoIntervalsAndTheSurvivorsShrink() throws Exception {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            STORE_PORT.set(s.getLocalPort());
        }
        try {
            String all = shrinkAfterKill("shrink-hb", 2 * 1_000 + 1_000);
            assertTrue(all.contains("PeerFailureException"), all);
        } finally {
            STORE_PORT.set(0);
        }
    }

    /** abort() on one rank reaches the others through the store: they fail naming it, not complete. */
    @Test
    void abortOnOneRankFailsTheOthersWaitNamingIt() throws Exception {
        Gpu.assume(2);
        int size = CudaDevice.count();
        Path dir = workDir("jccl-abort");
        List<Process> ps = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            ps.add(start("abort", r, size, dir));
        }
        try {
            for (int r = 0; r < size; r++) {
                assertTrue(ps.get(r).waitFor(3, TimeUnit.MINUTES), "rank " + r + " hung\n" + logs(dir, size));
            }
            String all = logs(dir, size);
            System.out.println(all);
            for (int r = 0; r < size; r++) {
                assertEquals(0, ps.get(r).exitValue(), "rank " + r + " failed\n" + all);
            }
            Matcher m = Pattern.compile("ABORT_SEEN after (\\d+) ms").matcher(all);
            int seen = 0;
            while (m.find()) {
                seen++;
                // rank 1 aborts about 1 s after everyone is ready; the news travels in 50 ms store polls
                assertTrue(Long.parseLong(m.group(1)) < 1_000 + 2_000, "seen after " + m.group(1) + " ms\n" + all);
            }
            assertEquals(size - 1, seen, all);
            Matcher a = Pattern.compile("ABORT returned after (\\d+) ms").matcher(all);
            assertTrue(a.find() && Long.parseLong(a.group(1)) < 1_000, "abort() must return within 1 s\n" + all);
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }

    private String shrinkAfterKill(String mode, long maxFailMillis) throws Exception {
        Gpu.assume(2);
        int size = CudaDevice.count();
        Path dir = workDir("jccl-" + mode);
        lastDir = dir;
        List<Process> ps = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            ps.add(start(mode, r, size, dir));
        }
        try {
            long t0 = System.nanoTime();
            for (int r = 0; r < size; r++) {
                while (!Files.exists(dir.resolve("ready-" + r))) {
                    assertTrue(System.nanoTime() - t0 < 120_000_000_000L, "ranks never got ready\n" + logs(dir, size));
                    assertTrue(ps.get(r).isAlive(), "rank " + r + " died early\n" + logs(dir, size));
                    Thread.sleep(20);
                }
            }
            Process victim = ps.get(size - 1);
            victim.destroyForcibly(); // SIGKILL
            assertTrue(victim.waitFor(30, TimeUnit.SECONDS));
            Files.writeString(dir.resolve("killed"), "yes");
            for (int r = 0; r < size - 1; r++) {
                assertTrue(ps.get(r).waitFor(3, TimeUnit.MINUTES), "survivor " + r + " hung\n" + logs(dir, size));
            }
            String all = logs(dir, size);
            System.out.println(all);
            for (int r = 0; r < size - 1; r++) {
                assertEquals(0, ps.get(r).exitValue(), "survivor " + r + " failed\n" + all);
                assertTrue(all.contains("[" + r + "] SHRUNK to rank " + r + " of " + (size - 1)), all);
            }
            Matcher m = Pattern.compile("\\] FAILED after (\\d+) ms").matcher(all);
            int failed = 0;
            while (m.find()) {
                failed++;
                assertTrue(Long.parseLong(m.group(1)) < maxFailMillis, "failed after " + m.group(1) + " ms, at most "
                        + maxFailMillis + " ms allowed\n" + all);
            }
            assertEquals(size - 1, failed, all);
            return all;
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
    }
}
