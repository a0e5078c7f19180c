package org.jccl.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Heartbeats of real JVMs against a real store server: a rank killed with SIGKILL is declared dead
 * and every other rank hears of it; a rank stopped with SIGSTOP is only silent, never dead, and
 * heartbeats again after SIGCONT. Each time (death heard, silence reported, heard again) is
 * asserted on every rank at most 3x what docs/RELIABILITY.md documents.
 */
class HeartbeatProcessTest {
    /** 200 ms keeps the test fast; {@code -Djccl.test.heartbeatMs=1000} measures the default interval. */
    static final int INTERVAL_MS = Integer.getInteger("jccl.test.heartbeatMs", 200);
    static final long BOUND_MS = 2L * INTERVAL_MS + 1000;
    // docs/RELIABILITY.md's times (upper ends; at 200 ms under load) at 200 ms and at 1 s, asserted per rank at <= 3x
    /** SIGKILL: every other rank hears of the death. */
    static final double DEAD_SECS = documented(1.32, 0.934);
    /** SIGSTOP: reported silent. */
    static final double SILENT_SECS = documented(0.899, 2.93);
    /** SIGCONT: heard again. */
    static final double BACK_SECS = documented(0.304, 0.99);

    /** The documented figure for the interval of this run (200 ms or 1 s: the two the document gives). */
    static double documented(double at200ms, double at1s) {
        return switch (INTERVAL_MS) {
            case 200 -> at200ms;
            case 1000 -> at1s;
            default -> throw new IllegalArgumentException("docs/RELIABILITY.md documents heartbeats of 200 ms and 1 s, not "
                    + INTERVAL_MS + " ms");
        };
    }

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
                    System.out.printf("heartbeat (%d ms): rank %d heard of the SIGKILL of rank 1 after %.0f ms%n",
                            INTERVAL_MS, i, ms);
                    assertTrue(line.contains("without a goodbye"), line);
                    TimeToError.assertWithin("heartbeat " + INTERVAL_MS + " ms: SIGKILL of rank 1 heard", i, ms / 1e3, DEAD_SECS);
                }
                assertEquals(List.of(1), List.copyOf(server.deadRanks(scope).keySet()));

                // SIGSTOP rank 2: silent, never dead
                Procs.Proc stopped = ranks.get(2);
                // under load a heartbeat can come late: start from a state where ranks 0 and 3 hear rank 2
                for (int i : new int[] {0, 3}) {
                    Procs.Proc p = ranks.get(i);
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (lastSilent(p).contains(2) && System.nanoTime() < end) {
                        Thread.sleep(10);
                    }
                    assertTrue(!lastSilent(p).contains(2), "rank " + i + " does not hear rank 2 before the stop:\n" + p.output());
                }
                long s0 = System.nanoTime();
                stopped.signal("STOP");
                long[] silentAt = new long[4]; // per rank: its System.nanoTime when it reported rank 2 silent
                for (int i : new int[] {0, 3}) {
                    Procs.Proc p = ranks.get(i);
                    assertTrue(p.await(l -> silent(l).contains(2) && stamp(l) > s0, 5_000 + 3L * INTERVAL_MS) > 0,
                            "rank " + i + " never saw rank 2 silent:\n" + p.output());
                    silentAt[i] = stamp(p.find(l -> silent(l).contains(2) && stamp(l) > s0));
                    System.out.printf("heartbeat: rank %d reported rank 2 silent %.0f ms after SIGSTOP%n", i,
                            (silentAt[i] - s0) / 1e6);
                    TimeToError.assertWithin("heartbeat " + INTERVAL_MS + " ms: SIGSTOP of rank 2 reported silent", i,
                            (silentAt[i] - s0) / 1e9, SILENT_SECS);
                }
                Thread.sleep(BOUND_MS); // well past the SIGKILL bound: still not dead
                assertEquals(List.of(1), List.copyOf(server.deadRanks(scope).keySet()));
                assertNull(ranks.get(0).find(l -> l.startsWith("DEAD 2 ")), ranks.get(0).output());
                assertNull(ranks.get(3).find(l -> l.startsWith("DEAD 2 ")), ranks.get(3).output());

                // SIGCONT: it heartbeats again (no longer silent), and it is still alive
                long c0 = System.nanoTime();
                stopped.signal("CONT");
                for (int i : new int[] {0, 3}) {
                    Procs.Proc p = ranks.get(i);
                    long since = silentAt[i];
                    assertTrue(p.await(l -> l.startsWith("SILENT ") && !silent(l).contains(2) && stamp(l) > since,
                            5_000 + 3L * INTERVAL_MS) > 0, "rank " + i + " never heard rank 2 again:\n" + p.output());
                    long backAt = stamp(p.find(l -> l.startsWith("SILENT ") && !silent(l).contains(2) && stamp(l) > since));
                    System.out.printf("heartbeat: rank %d heard rank 2 again %.0f ms after SIGCONT%n", i, (backAt - c0) / 1e6);
                    TimeToError.assertWithin("heartbeat " + INTERVAL_MS + " ms: SIGCONT of rank 2 heard again", i,
                            (backAt - c0) / 1e9, BACK_SECS);
                }
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

    /** The silent ranks of the last "SILENT [..] t" line {@code p} printed (empty before the first). */
    static List<Integer> lastSilent(Procs.Proc p) {
        synchronized (p.lines()) {
            for (int i = p.lines().size() - 1; i >= 0; i--) {
                if (p.lines().get(i).startsWith("SILENT [")) {
                    return silent(p.lines().get(i));
                }
            }
            return List.of();
        }
    }

    /** The System.nanoTime a "SILENT [..] t" line was printed at (the same clock as this JVM's). */
    static long stamp(String line) {
        return Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
    }
}
