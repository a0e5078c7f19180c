package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;

/**
 * {@link JitWarmup} (JCCL_WARMUP): creation runs it when asked, the ranks leave it together (the
 * collectives after it match and are right, with any bound), and the setting is parsed strictly.
 * The suite runs with JCCL_WARMUP=0 (pom.xml); these tests turn it on per communicator.
 */
class JitWarmupTest {
    private static final Duration T = Duration.ofSeconds(60);

    @Test
    void creationWarmsUpWhenAskedAndTheRanksStayInStep() throws Exception {
        int before = JitWarmup.RUNS.get();
        List<String> out = ThreadRanks.run(3, T, Duration.ofSeconds(120), o -> o.withSetting("JCCL_WARMUP", "2"), comm -> {
            float[] x = {comm.rank() + 1f, 10f * comm.rank()};
            comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);
            int[] b = {comm.rank() == 1 ? 7 : 0};
            comm.broadcast(HostBuffer.of(b), HostBuffer.of(b), 1);
            // the warm-up is not counted: the flight recorder holds the caller's two collectives, #1 and #2
            java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("jccl-warmup");
            String trace = java.nio.file.Files.readString(comm.dumpFlightRecord(dir));
            long ops = trace.lines().filter(l -> l.startsWith("{\"seq\":")).count();
            String seqs = (trace.contains("{\"seq\":1,\"op\":\"allReduce\"") ? "1" : "-")
                    + (trace.contains("{\"seq\":2,\"op\":\"broadcast\"") ? "2" : "-");
            return x[0] + " " + x[1] + " " + b[0] + " " + ops + " " + seqs;
        });
        assertEquals(List.of("6.0 30.0 7 2 12", "6.0 30.0 7 2 12", "6.0 30.0 7 2 12"), out);
        assertEquals(before + 3, JitWarmup.RUNS.get(), "every rank warms up once at creation");
    }

    /**
     * A rank that comes late after the warm-up (still computing, as in a training step) makes the
     * others spin, yield and park: a wait the warm-up of back-to-back calls never made until it
     * made one rank late now and then. Before, the park branch was a trap in the compiled waits,
     * and the caller's first long wait sent them back to the interpreter (on few cores the warm-up's
     * own waits may park anyway). Then a MAX, a MIN, a PROD and an AVG, each the caller's first:
     * before the warm-up ran them too, the first threw away the compiled call path (the kernels'
     * dispatch took a branch it had never seen) and SUMs ran 2-3x slower for thousands of calls
     * after. Then a reduce, gather and scatter whose root is rank 1 (the warm-up's root was always
     * rank 0, so rank 0's JVM had never run their other side) and a blocking send and receive.
     * Then 1 MiB calls of the other collectives and a send/recv (their zero-copy and
     * single-copy paths, which the warm-up ran only for all-reduce). Then an async reduce (a
     * non-root's null buffer), an in-place gather and scatter, an 8 KiB broadcast (one chunk too
     * large for the small ring) and five sends ahead of a late receiver (its mailbox full), each of
     * which threw the compiled call path away before the warm-up made them too. Then 2100 calls: the flight
     * recorder's first wrap, which the
     * warm-up never reaches, threw the compiled call path away at the caller's 2000th call. In a
     * fresh JVM (the profile of this one is every other test's), through the JDK's own
     * deoptimization events.
     */
    @Test
    void aLateRankFirstCallsOfEveryKindAndTheFlightRecordersFirstWrapAfterTheWarmUpCostNoDeoptimization() throws Exception {
        org.jccl.bootstrap.Procs.Proc p = org.jccl.bootstrap.Procs.startC2(LateRankMain.class, List.of("8", "30"),
                java.util.Map.of());
        try {
            assertTrue(p.process().waitFor(150, java.util.concurrent.TimeUnit.SECONDS), () -> "still running:\n" + p.output());
            String out = p.output();
            assertTrue(out.contains("DONE"), out);
            assertTrue(out.contains("SUMS 46.5 46.5"), out);
            List<String> traps = out.lines().filter(l -> l.startsWith("DEOPT org.jccl."))
                    .filter(l -> !l.startsWith("DEOPT " + LateRankMain.class.getName())
                            && !l.startsWith("DEOPT " + ThreadRanks.class.getName()))
                    .toList();
            assertTrue(traps.isEmpty(), () -> "the library's compiled code deoptimized after the warm-up:\n"
                    + String.join("\n", traps));
        } finally {
            p.process().destroyForcibly();
        }
    }

    @Test
    void overTcpTheNumberingRestartsTooAndTheCallsAfterMatch() throws Exception {
        List<String> out = ThreadRanks.run(2, T, Duration.ofSeconds(120),
                o -> o.withSetting("JCCL_WARMUP", "0.5").withSetting("JCCL_TRANSPORT", "tcp"), comm -> {
                    double[] x = {comm.rank() + 0.5};
                    comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);
                    long[] g = new long[2];
                    comm.allGather(HostBuffer.of(new long[] {comm.rank() * 10L}), HostBuffer.of(g));
                    java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("jccl-warmup-tcp");
                    String trace = java.nio.file.Files.readString(comm.dumpFlightRecord(dir));
                    return x[0] + " " + g[0] + "," + g[1] + " " + trace.contains("{\"seq\":1,\"op\":\"allReduce\"");
                });
        assertEquals(List.of("2.0 0,10 true", "2.0 0,10 true"), out);
    }

    @Test
    void aWarmUpOfAHierarchicalCommunicatorRunsEveryPathAndTheCallsAfterMatch() throws Exception {
        // 2 pretend hosts x 2 ranks: shared memory inside, TCP between (the large paths too)
        List<String> out = HierarchicalTest.run(new String[] {"a", "a", "b", "b"}, T, comm -> {
            int blocks = JitWarmup.run(comm, 1.0);
            double[] x = {comm.rank() + 1};
            comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);
            return comm.getClass().getSimpleName() + " " + (blocks > 0) + " " + x[0];
        });
        assertEquals(List.of("HierarchicalCommunicator true 10.0", "HierarchicalCommunicator true 10.0",
                "HierarchicalCommunicator true 10.0", "HierarchicalCommunicator true 10.0"), out);
    }

    @Test
    void eachLocalRanksThreadGetsItsOwnShareOfTheCpusWhenAffinityIsAuto() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(org.jccl.internal.Affinity.isAvailable(),
                () -> "affinity unavailable here: " + org.jccl.internal.Affinity.unavailabilityCause());
        int cpus = org.jccl.internal.Affinity.allowed().length;
        org.junit.jupiter.api.Assumptions.assumeTrue(cpus >= 2, "one CPU: nothing to share");
        List<String> shares = ThreadRanks.run(2, T, Duration.ofSeconds(60), o -> o.withSetting("JCCL_AFFINITY", "auto"),
                comm -> org.jccl.internal.Affinity.format(org.jccl.internal.Affinity.allowed()));
        int[] all = org.jccl.internal.Affinity.allowed();
        assertEquals(List.of(org.jccl.internal.Affinity.format(org.jccl.internal.Affinity.shareOf(all, 0, 2)),
                org.jccl.internal.Affinity.format(org.jccl.internal.Affinity.shareOf(all, 1, 2))), shares);
        List<String> off = ThreadRanks.run(2, T, comm -> org.jccl.internal.Affinity.format(org.jccl.internal.Affinity.allowed()));
        assertEquals(List.of(org.jccl.internal.Affinity.format(all), org.jccl.internal.Affinity.format(all)), off,
                "pinned although the suite sets JCCL_AFFINITY=off");
        assertThrows(Exception.class, () -> ThreadRanks.run(2, T, Duration.ofSeconds(60),
                o -> o.withSetting("JCCL_AFFINITY", "core"), comm -> "created"));
    }

    @Test
    void aTinyBoundEndsTheWarmUpOnEveryRankAfterTheSameBlock() throws Exception {
        List<Integer> blocks = ThreadRanks.run(2, T, comm -> {
            int n = JitWarmup.run(comm, 1e-6);
            long[] y = {comm.rank() + 5L};
            comm.allReduce(HostBuffer.of(y), ReduceOp.MAX);
            assertEquals(6L, y[0]);
            return n;
        });
        assertEquals(List.of(1, 1), blocks);
    }

    @Test
    void aWarmUpRunsUntilTheJitIsQuietAndAtLeastItsMinimum() throws Exception {
        long t0 = System.nanoTime();
        List<Integer> blocks = ThreadRanks.run(2, T, comm -> JitWarmup.run(comm, 30));
        assertEquals(blocks.get(0), blocks.get(1), "the ranks ran different numbers of blocks");
        assertTrue(blocks.get(0) >= 2, "one block cannot cover the 60 ms quiet window: " + blocks);
        assertTrue(System.nanoTime() - t0 < 30_000_000_000L, "the warm-up did not end before its bound");
    }

    @Test
    void noWarmUpWithZeroOrOneRank() throws Exception {
        assertEquals(List.of(0, 0), ThreadRanks.run(2, T, comm -> JitWarmup.run(comm, 0)));
        assertEquals(List.of(0), ThreadRanks.run(1, T, comm -> JitWarmup.run(comm, 5)));
    }

    @Test
    void theSettingIsSecondsOrOffAndAnythingElseIsAnErrorNamingIt() throws Exception {
        assertEquals(org.jccl.internal.WarmupSetting.DEFAULT_SECONDS, org.jccl.internal.WarmupSetting.seconds(null));
        assertEquals(org.jccl.internal.WarmupSetting.DEFAULT_SECONDS, org.jccl.internal.WarmupSetting.seconds(" on "));
        assertEquals(0.0, org.jccl.internal.WarmupSetting.seconds("off"));
        assertEquals(0.0, org.jccl.internal.WarmupSetting.seconds("0"));
        assertEquals(2.5, org.jccl.internal.WarmupSetting.seconds("2.5"));
        for (String bad : new String[] {"-1", "601", "NaN", "soon"}) {
            IllegalArgumentException x = assertThrows(IllegalArgumentException.class, () -> org.jccl.internal.WarmupSetting.seconds(bad));
            assertTrue(x.getMessage().startsWith("JCCL_WARMUP=" + bad), x.getMessage());
        }
        Exception e = assertThrows(Exception.class, () -> ThreadRanks.run(2, T, Duration.ofSeconds(60),
                o -> o.withSetting("JCCL_WARMUP", "soon"), comm -> "created"));
        Throwable c = e;
        while (!(c instanceof IllegalArgumentException) && c.getCause() != null) {
            c = c.getCause();
        }
        assertTrue(c instanceof IllegalArgumentException && c.getMessage().contains("JCCL_WARMUP"), String.valueOf(c));
    }
}
