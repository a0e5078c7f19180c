package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.bootstrap.TimeToError;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * Real JVMs with a job token: every collective over TCP only ({@code JCCL_TRANSPORT=tcp}, 3 and 4
 * processes) and a SIGKILLed rank over TCP. Two pretend hosts of two ranks each ({@code
 * JCCL_HOST_ID}: shared memory inside, TCP between the leaders) run the conformance kit in
 * ConformanceTest#processesAsRanks (hier).
 */
class TcpProcessRanksTest {
    /** A rank SIGKILLed mid all-reduce over TCP: docs/RELIABILITY.md's time to error (upper end, under load), asserted at <= 3x. */
    static final double SIGKILL_TCP_SECS = 1.23;

    static void runCheck(int n, Map<String, String> env, java.util.function.IntFunction<Map<String, String>> perRank)
            throws Exception {
        String job = "tcp" + ProcessHandle.current().pid() + "n" + n + "t" + (System.nanoTime() % 100000);
        String token = "tok-" + job;
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), token)) {
            List<ProcessRanksTest.Rank> ranks = startEach(n, server.port(), token, job, "check", env, perRank);
            try {
                for (ProcessRanksTest.Rank r : ranks) {
                    assertTrue(r.process().waitFor(240, TimeUnit.SECONDS), "rank hung:\n" + r.output());
                }
                for (int i = 0; i < n; i++) {
                    ProcessRanksTest.Rank r = ranks.get(i);
                    assertEquals(0, r.process().exitValue(), "rank " + i + " failed:\n" + r.output());
                    assertTrue(r.output().contains("OK rank " + i), r.output());
                }
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
        ProcessRanksTest.assertNoSegmentsLeft(job);
    }

    /** Starts the ranks one by one so that each can get its own environment on top of {@code env}. */
    static List<ProcessRanksTest.Rank> startEach(int n, int port, String token, String job, String mode, Map<String, String> env,
                                                 java.util.function.IntFunction<Map<String, String>> perRank) throws Exception {
        List<ProcessRanksTest.Rank> all = new java.util.ArrayList<>();
        for (int r = 0; r < n; r++) {
            Map<String, String> e = new java.util.HashMap<>(env);
            e.putAll(perRank.apply(r));
            e.put("JCCL_RANK", Integer.toString(r));
            // start() numbers its ranks from 0: start one and rename it through the environment
            all.add(ProcessRanksTest.start(1, port, token, job, mode, withRank(e, r, n)).get(0));
        }
        return all;
    }

    private static Map<String, String> withRank(Map<String, String> e, int r, int n) {
        Map<String, String> m = new java.util.HashMap<>(e);
        m.put("JCCL_RANK", Integer.toString(r));
        m.put("JCCL_WORLD_SIZE", Integer.toString(n));
        m.putIfAbsent("JCCL_LOCAL_RANK", Integer.toString(r));
        m.putIfAbsent("JCCL_LOCAL_WORLD_SIZE", Integer.toString(n));
        return m;
    }

    /** 4 processes: the conformance kit runs 2 (ConformanceTest#processesAsRanks, tcp) and 3 threads over TCP. */
    @ParameterizedTest(name = "{0} processes over TCP")
    @ValueSource(ints = {4})
    void everyCollectiveOverTcpOnly(int n) throws Exception {
        runCheck(n, ProcessRanksTest.with(ProcessRanksTest.NO_WARMUP_NO_PINNING, "JCCL_TIMEOUT", "120s", "JCCL_TRANSPORT", "tcp"),
                r -> Map.of());
    }

    @Test
    void survivorsOfASigkilledRankFailNamingItOverTcp() throws Exception {
        String job = "tkill" + ProcessHandle.current().pid();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "k")) {
            // A long deadline: the survivors must notice the closed connections, not time out.
            List<ProcessRanksTest.Rank> ranks = ProcessRanksTest.start(3, server.port(), "k", job, "loop",
                    Map.of("JCCL_TIMEOUT", "120s", "JCCL_TRANSPORT", "tcp", "JCCL_WARMUP", ProcessRanksTest.FAILURE_WARMUP));
            try {
                for (ProcessRanksTest.Rank r : ranks) {
                    assertTrue(r.ready().await(90, TimeUnit.SECONDS), "rank never got ready:\n" + r.output());
                }
                Thread.sleep(300);
                long t0 = System.nanoTime();
                ranks.get(1).process().destroyForcibly(); // SIGKILL
                for (int i : new int[] {0, 2}) {
                    ProcessRanksTest.Rank r = ranks.get(i);
                    assertTrue(r.process().waitFor(30, TimeUnit.SECONDS), "survivor " + i + " hung:\n" + r.output());
                    assertEquals(3, r.process().exitValue(), r.output());
                    ProcessRanksTest.Failure f = ProcessRanksTest.failure(r.output(), i);
                    System.out.println("SIGKILL (tcp): rank " + i + " failed " + f.secsAfter(t0) + " s after the kill, blaming "
                            + f.blames() + ": " + r.output());
                    // issue #21: a survivor that failed first relays the culprit; the other must not blame it
                    assertEquals("1", f.blames(), "rank " + i + " blames the wrong rank (must be the killed rank 1):\n"
                            + r.output());
                    TimeToError.assertWithin("SIGKILL of rank 1 (tcp)", i, f.secsAfter(t0), SIGKILL_TCP_SECS);
                    assertTrue(r.output().contains("rank 1"), "error should name rank 1:\n" + r.output());
                }
            } finally {
                ranks.forEach(r -> r.process().destroyForcibly());
            }
        }
    }
}
