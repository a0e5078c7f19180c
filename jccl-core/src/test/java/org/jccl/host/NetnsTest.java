package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.jccl.testing.Require;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The engine across real network stacks: each pretend host is a Linux network namespace on a
 * bridge ({@link Netns}), each rank a JVM started inside its host's namespace, rank 0 serving the
 * store. 2 hosts x 2 ranks (shared memory inside, TCP between), 3 hosts x 1 rank (TCP), every
 * collective checked by {@link RankMain}; and a host cut off the switch mid-collective: every rank
 * must fail within the deadline. Skipped with the reason when not root or without iproute2; failed
 * instead when JCCL_REQUIRE names netns ({@link Require}).
 */
class NetnsTest {

    @BeforeAll
    static void needsNamespaces() {
        Require.require("netns", Netns.unavailable());
    }

    /** Starts rank r of {@code hostOf.length} in the namespace of host {@code hostOf[r]}. */
    static List<ProcessRanksTest.Rank> start(Netns net, int[] hostOf, String mode, Map<String, String> extraEnv)
            throws IOException {
        int n = hostOf.length;
        String java = ProcessHandle.current().info().command().orElse("java");
        String job = "ns" + ProcessHandle.current().pid() + "x" + ThreadLocalRandom.current().nextInt(1 << 20);
        int port = 20_000 + ThreadLocalRandom.current().nextInt(10_000);
        List<ProcessRanksTest.Rank> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            int h = hostOf[r];
            int localRank = 0, localSize = 0;
            for (int q = 0; q < n; q++) {
                if (hostOf[q] == h) {
                    if (q < r) {
                        localRank++;
                    }
                    localSize++;
                }
            }
            ProcessBuilder pb = new ProcessBuilder(net.inHost(h, List.of(java, "--add-modules", "jdk.incubator.vector",
                    "--enable-native-access=ALL-UNNAMED", "-Xshare:auto", "-cp", System.getProperty("java.class.path"),
                    RankMain.class.getName(), mode)));
            Map<String, String> env = ProcessRanksTest.rankEnv(pb, r, n, localRank, localSize,
                    Netns.address(hostOf[0]) + ":" + port, job, "netns-" + job);
            // namespaces share the hostname and the boot id: say which pretend host this is
            env.put("JCCL_HOST_ID", net.ns(h));
            env.putAll(extraEnv);
            ranks.add(ProcessRanksTest.launch(pb));
        }
        return ranks;
    }

    static void checkEverything(int hosts, int[] hostOf, Map<String, String> env) throws Exception {
        try (Netns net = Netns.create(hosts)) {
            List<ProcessRanksTest.Rank> ranks = start(net, hostOf, "check", env);
            try {
                ProcessRanksTest.assertAllOk(ranks, 150);
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
                for (ProcessRanksTest.Rank r : ranks) {
                    r.process().waitFor(10, TimeUnit.SECONDS);
                }
            }
            net.close();
            assertEquals(List.of(), net.remaining(), "namespaces left behind");
        }
    }

    @Test
    void twoHostsOfTwoRanksEveryCollective() throws Exception {
        checkEverything(2, new int[] {0, 0, 1, 1}, ProcessRanksTest.with(ProcessRanksTest.NO_WARMUP_NO_PINNING, "JCCL_TIMEOUT", "90s"));
    }

    @Test
    void threeHostsOfOneRankEveryCollective() throws Exception {
        // the interface chosen by name this time (the route to the store picks it otherwise)
        checkEverything(3, new int[] {0, 1, 2}, ProcessRanksTest.with(ProcessRanksTest.NO_WARMUP_NO_PINNING, "JCCL_TIMEOUT", "90s",
                "JCCL_SOCKET_IFNAME", "eth"));
    }

    @Test
    void cuttingAHostOffMidCollectiveFailsEveryRankWithinTheDeadline() throws Exception {
        try (Netns net = Netns.create(2)) {
            List<ProcessRanksTest.Rank> ranks = start(net, new int[] {0, 0, 1, 1}, "loop", Map.of("JCCL_TIMEOUT", "4s",
                    "JCCL_WARMUP", ProcessRanksTest.FAILURE_WARMUP));
            try {
                ProcessRanksTest.awaitReady(ranks);
                Thread.sleep(500); // all-reducing across the link now
                long t0 = System.nanoTime();
                net.cut(1);
                for (int i = 0; i < ranks.size(); i++) {
                    ProcessRanksTest.Rank r = ranks.get(i);
                    assertTrue(r.process().waitFor(30, TimeUnit.SECONDS), "rank " + i + " hung after the cut:\n" + r.output());
                    assertEquals(3, r.process().exitValue(), "rank " + i + ":\n" + r.output());
                    assertTrue(r.output().contains("FAILED"), r.output());
                }
                double secs = (System.nanoTime() - t0) / 1e9;
                // the deadline is 4 s; composing shared memory and TCP adds at most one more deadline
                assertTrue(secs < 12, "ranks took " + secs + " s to fail after the cut");
                System.out.println("every rank failed " + String.format("%.1f", secs) + " s after the cut; rank 0: "
                        + ranks.get(0).output().lines().filter(l -> l.startsWith("FAILED")).findFirst().orElse("?"));
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
                for (ProcessRanksTest.Rank r : ranks) {
                    r.process().waitFor(10, TimeUnit.SECONDS);
                }
            }
        }
    }
}
