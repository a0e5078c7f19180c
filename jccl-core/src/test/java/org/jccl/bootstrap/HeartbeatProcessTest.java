package org.jccl.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Heartbeats of real JVMs against a real store server: a rank killed with SIGKILL is declared dead
 * and every other rank hears of it within two intervals and a second; a rank stopped with SIGSTOP
 * is only silent, never dead, and heartbeats again after SIGCONT.
 */
class HeartbeatProcessTest {
    /** 200 ms keeps the test fast; {@code -Djccl.test.heartbeatMs=1000} measures the default interval. */
    static final int INTERVAL_MS = Integer.getInteger("jccl.test.heartbeatMs", 200);
    static final long BOUND_MS = 2L * INTERVAL_MS + 1000;

    @Test
    @Timeout(60)
    void sigkillIsADeathEveryoneHearsSigstopIsOnlySilence() throws Exception {
        String scope = "jccl/hbproc" + ProcessHandle.current().pid() + "/c1/";
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), null)) {
            List<Procs.Proc> ranks = new ArrayList<>();
            try {
                for (int r = 0; r < 4; r++) {
                    ranks.add(Procs.start(HeartbeatMain.class, List.of("127.0.0.1", Integer.toString(server.port()), scope,
                            Integer.toString(r), Integer.toString(INTERVAL_MS)), Map.of()));
                }
                for (Procs.Proc p : ranks) {
                    assertTrue(p.await("ready"::equals, 30_000) > 0, "rank never got ready:\n" + p.output());
                }
                Thread.sleep(3L * INTERVAL_MS + 100);

                // SIGKILL rank 1: ranks 0, 2 and 3 hear of it within 2 intervals + 1 s
                long t0 = System.nanoTime();
                ranks.get(1).process().destroyForcibly();
                for (int i : new int[] {0, 2, 3}) {
                    Procs.Proc p = ranks.get(i);
                    long at = p.await(l -> l.startsWith("DEAD 1 "), BOUND_MS + 2000);
                    assertTrue(at > 0, "rank " + i + " never heard of rank 1's death:\n" + p.output());
                    String line = p.find(l -> l.startsWith("DEAD 1 "));
                    long detected = Long.parseLong(line.split(" ")[2]); // the rank's System.nanoTime: the same clock
                    double ms = (detected - t0) / 1e6;
                    System.out.printf("heartbeat (%d ms): rank %d heard of the SIGKILL of rank 1 after %.0f ms (bound %d ms)%n",
                            INTERVAL_MS, i, ms, BOUND_MS);
                    assertTrue(ms < BOUND_MS, "rank " + i + " heard after " + ms + " ms:\n" + p.output());
                    assertTrue(line.contains("without a goodbye"), line);
                }
                assertEquals(List.of(1), List.copyOf(server.deadRanks(scope).keySet()));

                // SIGSTOP rank 2: silent, never dead
                Procs.Proc stopped = ranks.get(2);
                stopped.signal("STOP");
                long s0 = System.nanoTime();
                long silentAt = ranks.get(0).await(l -> silent(l).contains(2), 5_000 + 3L * INTERVAL_MS);
                assertTrue(silentAt > 0, "rank 0 never saw rank 2 silent:\n" + ranks.get(0).output());
                System.out.printf("heartbeat: rank 2 reported silent %.0f ms after SIGSTOP%n", (silentAt - s0) / 1e6);
                Thread.sleep(BOUND_MS); // well past the SIGKILL bound: still not dead
                assertEquals(List.of(1), List.copyOf(server.deadRanks(scope).keySet()));
                assertNull(ranks.get(0).find(l -> l.startsWith("DEAD 2 ")), ranks.get(0).output());
                assertNull(ranks.get(3).find(l -> l.startsWith("DEAD 2 ")), ranks.get(3).output());

                // SIGCONT: it heartbeats again (no longer silent), and it is still alive
                stopped.signal("CONT");
                long c0 = System.nanoTime();
                long backAt = ranks.get(0).await(l -> l.startsWith("SILENT ") && !silent(l).contains(2)
                        && arrivedAfter(ranks.get(0), l, silentAt), 5_000 + 3L * INTERVAL_MS);
                assertTrue(backAt > 0, "rank 2 never heartbeat again:\n" + ranks.get(0).output());
                System.out.printf("heartbeat: rank 2 heard again %.0f ms after SIGCONT%n", (backAt - c0) / 1e6);
                assertTrue(stopped.process().isAlive());
                assertEquals(List.of(1), List.copyOf(server.deadRanks(scope).keySet()));
            } finally {
                for (Procs.Proc p : ranks) {
                    p.signal0("CONT");
                    p.process().destroyForcibly();
                }
            }
        }
    }

    /** The ranks of a "SILENT [a, b] t" line (empty for other lines). */
    static List<Integer> silent(String line) {
        List<Integer> out = new ArrayList<>();
        if (line.startsWith("SILENT [")) {
            String in = line.substring(8, line.indexOf(']'));
            for (String x : in.split(",")) {
                if (!x.isBlank()) {
                    out.add(Integer.parseInt(x.trim()));
                }
            }
        }
        return out;
    }

    /** True when the first line equal to {@code line} arrived after {@code t}. */
    static boolean arrivedAfter(Procs.Proc p, String line, long t) {
        synchronized (p.lines()) {
            for (int i = 0; i < p.lines().size(); i++) {
                if (p.lines().get(i).equals(line) && p.arrivals().get(i) > t) {
                    return true;
                }
            }
            return false;
        }
    }
}
