package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import org.jccl.bootstrap.TimeToError;
import org.jccl.host.shm.ShmTransport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Real JVMs over real shared memory and a real store: every collective, and a rank killed with SIGKILL. */
class ProcessRanksTest {
    // Times to error documented in docs/RELIABILITY.md (upper ends), asserted per rank at <= 3x.
    /** A rank SIGKILLed mid all-reduce: the survivors fail naming it (under load). */
    static final double SIGKILL_SHM_SECS = 2.11;
    /** A rank SIGSTOPped: the others fail at their 3 s deadline (plus the documented slack, under load). */
    static final double SIGSTOP_DEADLINE_SECS = 3.0;
    static final double SIGSTOP_SECS = 5.1;
    /** The rank that hosts the store SIGKILLed (under load). */
    static final double STORE_HOST_SECS = 2.96;
    /** Shrink done after the failure was seen (under load). */
    static final double SHRINK_SECS = 2.16;


    /** A started rank and everything it printed. */
    record Rank(Process process, List<String> lines, CountDownLatch ready) {
        String output() {
            synchronized (lines) {
                return String.join("\n", lines);
            }
        }
    }

    /** A rank's TIME_TO_ERROR line (see {@link RankMain}): when it failed, when the failing call began, whom it blamed. */
    record Failure(long at, long callStart, String blames, String type) {
        /** Seconds from {@code t0} (a System.nanoTime of this machine) to the failure. */
        double secsAfter(long t0) {
            return (at - t0) / 1e9;
        }

        /** Seconds from the start of the failing call to the failure. */
        double callSecs() {
            return (at - callStart) / 1e9;
        }
    }

    private static final java.util.regex.Pattern TIME_TO_ERROR =
            java.util.regex.Pattern.compile("TIME_TO_ERROR at=(\\d+) callStart=(\\d+) blames=(\\S+) class=(\\S+)");

    /** The failure rank {@code rank} printed (its first TIME_TO_ERROR line); fails naming the rank when there is none. */
    static Failure failure(String output, int rank) {
        java.util.regex.Matcher m = TIME_TO_ERROR.matcher(output);
        assertTrue(m.find(), "rank " + rank + " printed no TIME_TO_ERROR line:\n" + output);
        return new Failure(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), m.group(3), m.group(4));
    }

    /**
     * The suite's settings (pom.xml) for ranks whose test is not about warm-up or pinning (the
     * every-collective checks): no JIT warm-up at creation, no pinning of the rank threads. The
     * failure tests keep the defaults, as a launched job has them, but for a 1 s warm-up bound
     * ({@link #FAILURE_WARMUP}).
     */
    static final Map<String, String> NO_WARMUP_NO_PINNING = Map.of("JCCL_WARMUP", "0", "JCCL_AFFINITY", "off");

    /**
     * The failure tests' warm-up bound: a warm-up runs, as in a launched job, but not for the
     * default 8 s bound, which 3-4 rank JVMs on 2 CPUs reach (about 4 s more per test).
     */
    static final String FAILURE_WARMUP = "1";

    static List<Rank> start(int n, int port, String token, String job, String mode, Map<String, String> extraEnv)
            throws IOException {
        return start(n, port, token, job, mode, extraEnv, r -> Map.of());
    }

    /** {@link #start}, with {@code rankEnv(r)} added to rank r's environment last. */
    static List<Rank> start(int n, int port, String token, String job, String mode, Map<String, String> extraEnv,
                            java.util.function.IntFunction<Map<String, String>> rankEnv) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<Rank> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ProcessBuilder pb = new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector",
                    "--enable-native-access=ALL-UNNAMED", "-Xshare:auto", "-XX:TieredStopAtLevel=4",
                    "-cp", System.getProperty("java.class.path"), RankMain.class.getName(), mode);
            Map<String, String> env = rankEnv(pb, r, n, r, n, "127.0.0.1:" + port, job, token);
            env.putAll(extraEnv);
            env.putAll(rankEnv.apply(r));
            ranks.add(launch(pb));
        }
        return ranks;
    }

    /** {@code env} and {@code kv} (key, value, ...). */
    static Map<String, String> with(Map<String, String> env, String... kv) {
        Map<String, String> m = new java.util.HashMap<>(env);
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    /**
     * Clears {@code pb}'s environment of what a launcher may have set (JCCL_*, OMPI_*, SLURM_*,
     * RANK, WORLD_SIZE, MASTER_*) and sets rank {@code r}'s JCCL_* variables; returns the environment.
     */
    static Map<String, String> rankEnv(ProcessBuilder pb, int r, int n, int localRank, int localSize, String store,
                                       String job, String token) {
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("JCCL_") || k.startsWith("OMPI_") || k.startsWith("SLURM_")
                || k.equals("RANK") || k.equals("WORLD_SIZE") || k.startsWith("MASTER_"));
        env.put("JCCL_RANK", Integer.toString(r));
        env.put("JCCL_WORLD_SIZE", Integer.toString(n));
        env.put("JCCL_LOCAL_RANK", Integer.toString(localRank));
        env.put("JCCL_LOCAL_WORLD_SIZE", Integer.toString(localSize));
        env.put("JCCL_STORE", store);
        env.put("JCCL_JOB_ID", job);
        env.put("JCCL_TOKEN", token);
        return env;
    }

    /** Starts {@code pb} with its output merged, collected line by line; the rank is ready once it printed "ready". */
    static Rank launch(ProcessBuilder pb) throws IOException {
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
        return new Rank(p, lines, ready);
    }

    /** Asserts that every rank printed "ready" within 90 s. */
    static void awaitReady(List<Rank> ranks) throws InterruptedException {
        for (Rank r : ranks) {
            assertTrue(r.ready().await(90, TimeUnit.SECONDS), "rank never got ready:\n" + r.output());
        }
    }

    /** Asserts that every rank exits within {@code secs}, with status 0, having printed "OK rank i". */
    static void assertAllOk(List<Rank> ranks, int secs) throws InterruptedException {
        for (Rank r : ranks) {
            assertTrue(r.process().waitFor(secs, TimeUnit.SECONDS), "rank hung:\n" + r.output());
        }
        for (int i = 0; i < ranks.size(); i++) {
            Rank r = ranks.get(i);
            assertEquals(0, r.process().exitValue(), "rank " + i + " failed:\n" + r.output());
            assertTrue(r.output().contains("OK rank " + i), r.output());
        }
    }

    /** Asserts that survivor {@code i} exits within {@code secs} with status {@code status}. */
    static void assertSurvivorExits(Rank r, int i, int secs, int status) throws InterruptedException {
        assertTrue(r.process().waitFor(secs, TimeUnit.SECONDS), "survivor " + i + " hung:\n" + r.output());
        assertEquals(status, r.process().exitValue(), r.output());
    }

    /**
     * Asserts that survivor {@code i} of the SIGKILLed rank {@code killed} fails (status 3 within
     * 30 s), its error naming that rank, blaming it, within 3x {@code documentedSecs} of {@code t0}.
     */
    static void assertSurvivorBlames(Rank r, int i, int killed, long t0, String scenario, double documentedSecs)
            throws InterruptedException {
        assertSurvivorExits(r, i, 30, 3);
        assertTrue(r.output().contains("rank " + killed), "error should name rank " + killed + ":\n" + r.output());
        Failure f = failure(r.output(), i);
        System.out.println(scenario + ": rank " + i + " failed " + f.secsAfter(t0) + " s after the kill, blaming "
                + f.blames() + ": " + r.output());
        assertEquals(Integer.toString(killed), f.blames(), "rank " + i + " blames the wrong rank:\n" + r.output());
        TimeToError.assertWithin(scenario, i, f.secsAfter(t0), documentedSecs);
    }

    /**
     * Two processes of which only rank 0 has a setting that changes how a 2-rank call moves its data:
     * every collective still matches the reference. With {@code JCCL_CHECK=1} on one rank alone, a
     * scatter's root without it posts its buffer's address while its receiver takes the checked
     * path (which must read it from there); with {@code JCCL_SHM_SINGLE_COPY_BYTES=off} on one rank,
     * that rank neither reads its peer's memory nor posts its own buffers for the peer to read.
     */
    @ParameterizedTest(name = "{0} on rank 0")
    @ValueSource(strings = {"JCCL_CHECK=1", "JCCL_SHM_SINGLE_COPY_BYTES=off"})
    void twoProcessesOfWhichOneHasASetting(String setting) throws Exception {
        String job = "pt" + ProcessHandle.current().pid() + "one" + setting.length();
        String token = "tok-one";
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), token)) {
            Map<String, String> rank0 = Map.of(setting.substring(0, setting.indexOf('=')),
                    setting.substring(setting.indexOf('=') + 1));
            List<Rank> ranks = start(2, server.port(), token, job, "check", with(NO_WARMUP_NO_PINNING, "JCCL_TIMEOUT", "120s"),
                    r -> r == 0 ? rank0 : Map.of());
            try {
                assertAllOk(ranks, 240);
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
        assertNoSegmentsLeft(job);
    }

    /** 4 processes: the conformance kit runs 3 (ConformanceTest#processesAsRanks). */
    @ParameterizedTest(name = "{0} processes")
    @ValueSource(ints = {4})
    void everyCollectiveAcrossProcesses(int n) throws Exception {
        String job = "pt" + ProcessHandle.current().pid() + "n" + n;
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "tok-" + n)) {
            List<Rank> ranks = start(n, server.port(), "tok-" + n, job, "check", with(NO_WARMUP_NO_PINNING, "JCCL_TIMEOUT", "120s"));
            try {
                assertAllOk(ranks, 240);
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
        assertNoSegmentsLeft(job);
    }

    @Test
    void survivorsOfASigkilledRankFailNamingIt() throws Exception {
        survivorsOfSigkilledRankOne("kill", "loop", "SIGKILL of rank 1 (shm)", ranks -> { });
    }

    /**
     * A rank SIGKILLed while the ranks exchange 8 MB messages around a ring (each read by the
     * receiver straight from the sender's buffer where the kernel allows it: the sender may die
     * mid-read): the survivors fail naming it, as in an all-reduce.
     */
    @Test
    void survivorsOfARankSigkilledDuringLargeSendsFailNamingIt() throws Exception {
        survivorsOfSigkilledRankOne("bigkill", "bigsendrecv", "SIGKILL of rank 1 during 8 MB sendRecv (shm)", ranks -> {
            if (crossProcessReadsAllowed()) {
                for (int i = 0; i < 3; i++) {
                    assertTrue(ranks.get(i).output().contains("SINGLE_COPY 1"),
                            "rank " + i + " received its first 8 MB by one copy:\n" + ranks.get(i).output());
                }
            }
        });
    }

    /**
     * Three ranks in RankMain {@code mode}; once all are ready (and {@code whenReady} checked them),
     * rank 1 is SIGKILLed: ranks 0 and 2 fail naming it within the documented time. A long deadline:
     * the survivors must notice the death itself, not time out.
     */
    private static void survivorsOfSigkilledRankOne(String jobPrefix, String mode, String scenario,
                                                    java.util.function.Consumer<List<Rank>> whenReady) throws Exception {
        String job = jobPrefix + ProcessHandle.current().pid();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), jobPrefix)) {
            List<Rank> ranks = start(3, server.port(), jobPrefix, job, mode, Map.of("JCCL_TIMEOUT", "120s",
                    "JCCL_WARMUP", FAILURE_WARMUP));
            try {
                awaitReady(ranks);
                whenReady.accept(ranks);
                Thread.sleep(300);
                long t0 = System.nanoTime();
                ranks.get(1).process().destroyForcibly(); // SIGKILL
                for (int i : new int[] {0, 2}) {
                    assertSurvivorBlames(ranks.get(i), i, 1, t0, scenario, SIGKILL_SHM_SECS);
                }
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
        assertNoSegmentsLeft(job);
    }

    /** Whether processes of one user may read each other here (process_vm_readv works; Yama's ptrace_scope at most 1). */
    static boolean crossProcessReadsAllowed() {
        return org.jccl.internal.CrossMemory.selfCheck() == null
                && org.jccl.internal.CrossMemory.ptraceScope(org.jccl.internal.CrossMemory.YAMA_SCOPE) <= 1;
    }

    /** Shared memory and TCP (one runtime, one agreement protocol): the same shrink after a SIGKILL. */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"shm", "tcp"})
    void survivorsShrinkAfterASigkillAndGoOnCorrectly(String transport) throws Exception {
        String job = "shrink" + transport + ProcessHandle.current().pid();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "s")) {
            List<Rank> ranks = start(4, server.port(), "s", job, "shrink", Map.of("JCCL_TIMEOUT", "60s",
                    "JCCL_TRANSPORT", transport.equals("tcp") ? "tcp" : "auto", "JCCL_WARMUP", FAILURE_WARMUP));
            try {
                awaitReady(ranks);
                Thread.sleep(300);
                ranks.get(2).process().destroyForcibly();
                int[] newRanks = {0, 1, -1, 2};
                for (int i : new int[] {0, 1, 3}) {
                    Rank r = ranks.get(i);
                    assertSurvivorExits(r, i, 60, 0);
                    assertTrue(r.output().contains("SHRUNK ok " + newRanks[i] + "/3"), r.output());
                    java.util.regex.Matcher m = java.util.regex.Pattern.compile("SHRUNK ok \\d+/3 in ([0-9.]+) s")
                            .matcher(r.output());
                    assertTrue(m.find(), r.output());
                    TimeToError.assertWithin("shrink after a SIGKILL (from the failure seen)", i,
                            Double.parseDouble(m.group(1)), SHRINK_SECS);
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
                    Map.of("JCCL_TIMEOUT", "3s", "JCCL_TRACE_DIR", traces.toString(), "JCCL_WARMUP", FAILURE_WARMUP));
            try {
                awaitReady(ranks);
                Thread.sleep(300);
                long pid = ranks.get(1).process().pid();
                long t0 = System.nanoTime();
                assertEquals(0, new ProcessBuilder("kill", "-STOP", Long.toString(pid)).start().waitFor());
                for (int i : new int[] {0, 2}) {
                    Rank r = ranks.get(i);
                    assertSurvivorExits(r, i, 30, 3);
                    assertTrue(r.output().contains("rank(s) [1]") || r.output().contains("rank 1"),
                            "error should name rank 1:\n" + r.output());
                    Failure f = failure(r.output(), i);
                    System.out.printf("SIGSTOP: rank %d failed %.3f s after the stop, %.3f s into its call (%s, blaming %s): %s%n",
                            i, f.secsAfter(t0), f.callSecs(), f.type(), f.blames(), r.output());
                    TimeToError.assertWithin("SIGSTOP of rank 1, JCCL_TIMEOUT=3s (from the stop)", i, f.secsAfter(t0),
                            SIGSTOP_SECS);
                    if (f.type().equals("CollectiveTimeoutException")) {
                        // its own deadline (a rank told by the other survivor fails with a PeerFailureException instead)
                        TimeToError.assertDeadline("SIGSTOP of rank 1, JCCL_TIMEOUT=3s (from the call's start)", i,
                                f.callSecs(), SIGSTOP_DEADLINE_SECS, SIGSTOP_SECS);
                    }
                }
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

    /**
     * A rank that reads a peer's buffer in place after the peer gave up on the call: rank 1 is
     * stopped (SIGSTOP) while it waits at the exchange of an all-gather of unregistered native
     * buffers (read with process_vm_readv) or of a reduce-scatter of registered ones (read mapped,
     * in the kernel); rank 0 reads rank 1's buffer,
     * waits for rank 1 until its 3 s deadline, fails, and writes over its send buffer, as a caller
     * reusing it would. Let go on (SIGCONT), rank 1 finds the exchange done and reads rank 0's buffer:
     * it must fail naming rank 0, not return what it read (before the check after each read it
     * returned the overwritten block as the result).
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"latereader", "latereader-rs"})
    void aReaderLetGoOnAfterItsPeerGaveUpFailsInsteadOfReturningWhatItRead(String mode) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(mode.endsWith("-rs") || org.jccl.internal.CrossMemory.selfCheck() == null,
                "process_vm_readv is not allowed here (the in-place read this test is about)");
        String job = "late" + mode.length() + ProcessHandle.current().pid();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "l")) {
            List<Rank> ranks = start(2, server.port(), "l", job, mode,
                    Map.of("JCCL_HEARTBEAT", "off", "JCCL_WARMUP", "0", "JCCL_AFFINITY", "off"),
                    r -> Map.of("JCCL_TIMEOUT", r == 0 ? "3s" : "60s"));
            try {
                awaitReady(ranks);
                Rank late = ranks.get(1);
                long deadline = System.nanoTime() + 30_000_000_000L;
                while (!late.output().contains("calling") && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                Thread.sleep(500); // in the all-gather's exchange wait by now
                long pid = late.process().pid();
                assertEquals(0, new ProcessBuilder("kill", "-STOP", Long.toString(pid)).start().waitFor());
                Rank first = ranks.get(0);
                while (!first.output().contains("POISONED") && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                assertTrue(first.output().contains("POISONED"), "rank 0 should fail at its deadline:\n" + first.output());
                assertEquals(0, new ProcessBuilder("kill", "-CONT", Long.toString(pid)).start().waitFor());
                assertTrue(late.process().waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "rank 1 still running:\n"
                        + late.output());
                assertFalse(late.output().contains("RETURNED"), "rank 1 returned from the all-gather after rank 0 gave "
                        + "up on it:\n" + late.output());
                assertTrue(late.output().contains("FAILED") && late.output().contains("rank 0"),
                        "rank 1 should fail naming rank 0:\n" + late.output());
                // (rank 0 closes its communicator after its pause: its registered buffers' files go with it)
                assertTrue(first.process().waitFor(30, java.util.concurrent.TimeUnit.SECONDS), first.output());
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
        List<Rank> ranks = start(3, port, "h", job, "loop", Map.of("JCCL_TIMEOUT", "60s", "JCCL_WARMUP", FAILURE_WARMUP));
        try {
            awaitReady(ranks);
            Thread.sleep(300);
            long t0 = System.nanoTime();
            ranks.get(0).process().destroyForcibly();
            for (int i : new int[] {1, 2}) {
                assertSurvivorBlames(ranks.get(i), i, 0, t0, "SIGKILL of rank 0, the store's host", STORE_HOST_SECS);
            }
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
