package org.jccl.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jccl.bootstrap.Procs;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.host.HostWorlds;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The conformance kit on the host engine: shared memory, TCP and hierarchical, with ranks as
 * threads of this JVM and as processes. The full matrix runs once per transport; the other rank
 * counts and placements run the quick subset (every case, fewer types, operators and counts).
 */
class ConformanceTest {
    private static final long SEED = Kit.seed();
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    static Stream<Arguments> threadWorlds() {
        return Stream.of(
                Arguments.of("shm", HostWorlds.oneHost(1), "auto", false),
                Arguments.of("shm", HostWorlds.oneHost(2), "auto", false),
                Arguments.of("shm", HostWorlds.oneHost(3), "auto", true),
                Arguments.of("shm", HostWorlds.oneHost(4), "auto", false),
                Arguments.of("tcp", HostWorlds.oneHost(2), "tcp", false),
                Arguments.of("tcp", HostWorlds.oneHost(3), "tcp", true),
                Arguments.of("tcp", HostWorlds.oneHost(4), "tcp", false),
                Arguments.of("hier", new String[] {"a", "a", "b", "b"}, "auto", true),
                Arguments.of("hier", new String[] {"a", "b", "a", "b"}, "auto", false),
                Arguments.of("hier", new String[] {"a", "a", "a", "b"}, "auto", false));
    }

    @ParameterizedTest(name = "{0} threads on hosts {1} ({2}), full matrix {3}")
    @MethodSource("threadWorlds")
    void threadsAsRanks(String name, String[] hosts, String transport, boolean full) throws Exception {
        Traits traits = Traits.host(name, false).named(name + " " + hosts.length + " threads " + String.join("", hosts));
        List<Kit.Report> reports = HostWorlds.run(hosts, transport, TIMEOUT, Duration.ofMinutes(8),
                comm -> Kit.run(comm, Mem::host, traits, SEED, full, Kit.selection()));
        report(traits, reports);
    }

    static Stream<Arguments> checkWorlds() {
        return Stream.of(
                Arguments.of("shm", HostWorlds.oneHost(3), "auto"),
                Arguments.of("tcp", HostWorlds.oneHost(3), "tcp"),
                Arguments.of("hier", new String[] {"a", "a", "b", "b"}, "auto"),
                Arguments.of("hier", new String[] {"a", "b", "a", "b"}, "auto"));
    }

    /**
     * With {@code JCCL_CHECK=1} (its system property {@code jccl.check}) every disagreement fails in
     * the call, on shared memory (whose small rooted calls are eager without it), TCP and
     * hierarchical: the mismatch cases.
     */
    @ParameterizedTest(name = "{0} threads on hosts {1} ({2}) with JCCL_CHECK=1")
    @MethodSource("checkWorlds")
    void threadsAsRanksWithJcclCheck(String name, String[] hosts, String transport) throws Exception {
        Traits traits = Traits.host(name, true).named(name + " " + hosts.length + " threads " + String.join("", hosts)
                + " JCCL_CHECK=1");
        java.util.function.Predicate<String> sel = Kit.selection();
        String before = System.setProperty("jccl.check", "1");
        try {
            List<Kit.Report> reports = HostWorlds.run(hosts, transport, TIMEOUT, Duration.ofMinutes(4),
                    comm -> Kit.run(comm, Mem::host, traits, SEED, false, n -> n.startsWith("errors.mismatch") && sel.test(n)));
            report(traits, reports);
        } finally {
            if (before == null) {
                System.clearProperty("jccl.check");
            } else {
                System.setProperty("jccl.check", before);
            }
        }
    }

    private static void report(Traits traits, List<Kit.Report> reports) {
        List<String> failures = new ArrayList<>();
        for (Kit.Report r : reports) {
            failures.addAll(r.failures());
        }
        System.out.println(traits.name() + ": " + reports.get(0).ran());
        assertTrue(!reports.get(0).ran().isEmpty() || System.getProperty("jccl.kit.cases") != null,
                traits.name() + ": no case ran");
        assertNoFailures(traits.name(), failures);
    }

    static Stream<Arguments> processWorlds() {
        return Stream.of(
                Arguments.of("shm", new String[] {"a", "a", "a"}, "auto"),
                Arguments.of("tcp", new String[] {"a", "a"}, "tcp"),
                Arguments.of("hier", new String[] {"a", "a", "b", "b"}, "auto"));
    }

    /** Ranks as processes started with the JCCL_* variables, as a launcher would. */
    @ParameterizedTest(name = "{0} processes on hosts {1}")
    @MethodSource("processWorlds")
    void processesAsRanks(String name, String[] hosts, String transport) throws Exception {
        int n = hosts.length;
        String label = name + " " + n + " processes " + String.join("", hosts);
        String job = "kitp" + Long.toHexString(System.nanoTime());
        String token = "tok-" + job; // a job token, as a launcher sets one
        try (TcpStoreServer server = TcpStoreServer.start(new java.net.InetSocketAddress("127.0.0.1", 0), token)) {
            List<Procs.Proc> procs = new ArrayList<>();
            try {
                for (int r = 0; r < n; r++) {
                    Map<String, String> env = new HashMap<>();
                    env.put("JCCL_RANK", Integer.toString(r));
                    env.put("JCCL_WORLD_SIZE", Integer.toString(n));
                    env.put("JCCL_STORE", "127.0.0.1:" + server.port());
                    env.put("JCCL_STORE_SERVED", "1"); // the test serves the store, as a launcher would
                    env.put("JCCL_JOB_ID", job);
                    env.put("JCCL_TOKEN", token);
                    env.put("JCCL_TIMEOUT", TIMEOUT.toSeconds() + "s");
                    env.put("JCCL_HOST_ID", hosts[r]);
                    env.put("JCCL_TRANSPORT", transport);
                    env.put("JCCL_KIT_SEED", Long.toString(SEED));
                    // as the suite runs (pom.xml): no JIT warm-up at creation, no pinning of the rank threads
                    env.put("JCCL_WARMUP", "0");
                    env.put("JCCL_AFFINITY", "off");
                    String sel = System.getProperty("jccl.kit.cases");
                    if (sel != null) {
                        env.put("JCCL_KIT_CASES", sel);
                    }
                    procs.add(Procs.startC2(KitMain.class, List.of(label, "quick"), env));
                }
                List<String> failures = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    Procs.Proc p = procs.get(r);
                    if (!p.process().waitFor(8, java.util.concurrent.TimeUnit.MINUTES)) {
                        fail("rank " + r + " of " + label + " did not finish within 8 min (hang):\n" + p.output());
                    }
                    p.await(l -> l.startsWith("KIT-DONE"), 5_000);
                    String out = p.output();
                    assertTrue(out.contains("KIT-DONE"), "rank " + r + " of " + label + " ended without finishing the kit (exit "
                            + p.process().exitValue() + "):\n" + out);
                    failures.addAll(KitMain.failures(out));
                    if (r == 0) {
                        System.out.println(label + ": " + out.lines().filter(l -> l.startsWith("KIT-RAN ")).map(l -> l.substring(8)).toList());
                    }
                    assertEquals(0, p.process().exitValue(), "rank " + r + " exit code:\n" + out);
                }
                assertNoFailures(label, failures);
            } finally {
                for (Procs.Proc p : procs) {
                    p.process().destroyForcibly();
                }
            }
        }
        try (Stream<java.nio.file.Path> files = java.nio.file.Files.list(org.jccl.host.shm.ShmTransport.shmDirectory())) {
            List<java.nio.file.Path> left = files.filter(f -> f.getFileName().toString().startsWith("jccl-" + job)).toList();
            assertTrue(left.isEmpty(), label + ": shared memory files left behind: " + left);
        }
    }

    static void assertNoFailures(String world, List<String> failures) {
        if (!failures.isEmpty()) {
            StringBuilder b = new StringBuilder(world + ": " + failures.size() + " failure(s), seed " + SEED
                    + " (rerun with -Djccl.kit.seed=" + SEED + " -Djccl.kit.cases=<case>):\n");
            failures.stream().limit(40).forEach(f -> b.append("  ").append(f).append('\n'));
            fail(b.toString());
        }
    }
}
