package org.jccl.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.jccl.AbortedException;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link JcclSpark} in Spark's local mode (tasks are threads of this JVM): collectives checked
 * against Spark's own aggregation, and the failure paths (a task that fails, a job cancelled while ranks wait in a
 * collective).
 */
class JcclSparkTest {
    private static final int SLOTS = 4;
    private static JavaSparkContext sc;

    /** What tasks of the failure tests saw, by test and partition (local mode: one JVM). */
    static final Map<String, String> SEEN = new ConcurrentHashMap<>();

    @BeforeAll
    static void start() {
        sc = SparkWorlds.local(SLOTS);
    }

    @AfterAll
    static void stop() {
        if (sc != null) {
            sc.close();
        }
    }

    @Test
    void gradientSumMatchesTreeAggregate() {
        int parts = 3;
        int dim = 1031; // prime: no chunk of any algorithm divides it
        List<Integer> rows = IntStream.range(0, 300).boxed().toList();
        JavaRDD<Integer> data = sc.parallelize(rows, parts);
        // Spark's own answer: the per-row "gradients" summed by treeAggregate
        double[] reference = data.treeAggregate(new double[dim], (acc, row) -> {
            for (int j = 0; j < dim; j++) {
                acc[j] += gradient(row, j);
            }
            return acc;
        }, (a, b) -> {
            for (int j = 0; j < dim; j++) {
                a[j] += b[j];
            }
            return a;
        });
        List<double[]> sums = JcclSpark.mapPartitions(data, (comm, it) -> {
            double[] g = new double[dim];
            while (it.hasNext()) {
                int row = it.next();
                for (int j = 0; j < dim; j++) {
                    g[j] += gradient(row, j);
                }
            }
            comm.allReduce(HostBuffer.of(g), ReduceOp.SUM);
            return List.of(g).iterator();
        }).collect();
        assertEquals(parts, sums.size());
        for (double[] s : sums) {
            for (int j = 0; j < dim; j++) {
                // the same values summed in another order: equal to rounding
                assertEquals(reference[j], s[j], 1e-9 * Math.max(1, Math.abs(reference[j])), "element " + j);
            }
            assertArrayEquals(sums.get(0), s, "every rank holds the same sum, bit for bit");
        }
    }

    private static double gradient(int row, int j) {
        return Math.sin(row * 0.37 + j * 0.011) * (1 + (row % 7));
    }

    @Test
    void ranksArePartitionsAndCollectivesAgree() {
        int parts = 4;
        List<String> out = JcclSpark.mapPartitions(sc.parallelize(List.of(1, 2, 3, 4, 5, 6, 7, 8), parts), (comm, it) -> {
            long[] mine = {comm.rank(), org.apache.spark.TaskContext.getPartitionId()};
            long[] all = new long[2 * comm.size()];
            comm.allGather(HostBuffer.of(mine), HostBuffer.of(all));
            int[] root = {comm.rank() == 2 ? 42 : -1};
            comm.broadcast(HostBuffer.of(root), 2);
            int sum = 0;
            while (it.hasNext()) {
                sum += it.next();
            }
            int[] total = {sum};
            comm.allReduce(HostBuffer.of(total), ReduceOp.SUM);
            return List.of(comm.size() + " " + Arrays.toString(all) + " " + root[0] + " " + total[0]).iterator();
        }).collect();
        assertEquals(List.of(
                "4 [0, 0, 1, 1, 2, 2, 3, 3] 42 36", "4 [0, 0, 1, 1, 2, 2, 3, 3] 42 36",
                "4 [0, 0, 1, 1, 2, 2, 3, 3] 42 36", "4 [0, 0, 1, 1, 2, 2, 3, 3] 42 36"), out);
    }

    @Test
    void aFailingTaskFailsTheJobAndItsPeersPromptly() {
        SEEN.clear();
        long t0 = System.nanoTime();
        SparkException e = assertThrows(SparkException.class, () -> JcclSpark.mapPartitions(
                sc.parallelize(List.of(0, 1, 2), 3), (comm, it) -> {
                    if (comm.rank() == 1) {
                        throw new IllegalStateException("partition 1 gives up");
                    }
                    try {
                        comm.allReduce(HostBuffer.of(new float[64]), ReduceOp.SUM); // never completes
                        SEEN.put("fail/" + comm.rank(), "completed");
                    } catch (JcclException x) {
                        SEEN.put("fail/" + comm.rank(), x.getClass().getSimpleName() + " after "
                                + (System.nanoTime() - t0) / 1_000_000 + " ms: " + x.getMessage());
                        throw x;
                    }
                    return List.of(0).iterator();
                }).collect());
        double seconds = (System.nanoTime() - t0) / 1e9;
        // Spark's error for a barrier stage names the task, not its exception (that is in the task's log)
        assertTrue(String.valueOf(e).contains("barrier"), String.valueOf(e));
        // the peers blocked in the all-reduce end long before the communicator's 10-minute deadline
        awaitSeen("fail/0", "fail/2");
        for (String k : List.of("fail/0", "fail/2")) {
            String s = SEEN.get(k);
            assertFalse(s.startsWith("completed"), k + ": " + s);
            // it names the rank that failed, unless Spark's kill of this task (its kill watch) came first
            assertTrue(s.contains("rank 1") || s.contains("abort() called on rank " + k.substring(5)), k + ": " + s);
        }
        assertTrue(seconds < 60, "the job failed after " + seconds + " s");
    }

    @Test
    void cancellingTheJobAbortsRanksWaitingInACollective() throws Exception {
        SEEN.clear();
        String group = "jccl-cancel-test";
        Thread job = new Thread(() -> {
            sc.setJobGroup(group, "a job the test cancels", false);
            try {
                JcclSpark.mapPartitions(sc.parallelize(List.of(0, 1, 2), 3), (comm, it) -> {
                    SEEN.put("cancel/formed/" + comm.rank(), "");
                    if (comm.rank() == 1) {
                        // a rank that never arrives: it notices the kill only after a while
                        org.apache.spark.TaskContext tc = org.apache.spark.TaskContext.get();
                        while (!tc.isInterrupted()) {
                            Thread.sleep(10);
                        }
                        Thread.sleep(3000);
                        SEEN.put("cancel/1", Long.toString(System.nanoTime()));
                        return List.of(0).iterator();
                    }
                    try {
                        comm.allReduce(HostBuffer.of(new float[64]), ReduceOp.SUM);
                        SEEN.put("cancel/" + comm.rank(), "completed");
                    } catch (JcclException x) {
                        SEEN.put("cancel/" + comm.rank(), System.nanoTime() + " " + x.getClass().getSimpleName() + ": "
                                + x.getMessage());
                        throw x;
                    }
                    return List.of(0).iterator();
                }).collect();
            } catch (Exception expected) {
                SEEN.put("cancel/job", String.valueOf(expected));
            }
        });
        job.start();
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (SEEN.keySet().stream().filter(k -> k.startsWith("cancel/formed/")).count() < 3) {
            assertTrue(System.nanoTime() < deadline, "the communicator did not form: " + SEEN);
            Thread.sleep(20);
        }
        Thread.sleep(300); // ranks 0 and 2 are in the all-reduce now
        long t0 = System.nanoTime();
        sc.cancelJobGroup(group);
        awaitSeen("cancel/0", "cancel/2", "cancel/1");
        job.join(30_000);
        // ranks 0 and 2 ended through their kill watch, not because rank 1 ended its task later
        long rank1Ended = Long.parseLong(SEEN.get("cancel/1"));
        for (String k : List.of("cancel/0", "cancel/2")) {
            String[] s = SEEN.get(k).split(" ", 2);
            assertTrue(s[1].startsWith(AbortedException.class.getSimpleName()), k + ": " + SEEN.get(k));
            assertTrue(Long.parseLong(s[0]) < rank1Ended, k + " ended after rank 1 did: " + SEEN);
            double seconds = (Long.parseLong(s[0]) - t0) / 1e9;
            assertTrue(seconds < 2.5, k + " ended " + seconds + " s after the cancel");
        }
    }

    private static void awaitSeen(String... keys) {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!Arrays.stream(keys).allMatch(SEEN::containsKey)) {
            if (System.nanoTime() > deadline) {
                fail("not every rank ended within 60 s: " + SEEN);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    /**
     * Rank 0 fails in the middle of the rendezvous (after its store was announced): Spark kills the
     * other tasks, which must end their rendezvous at once (not retry the closed store until their
     * deadline), so that every slot is free for the next stage.
     */
    @Test
    void aRankFailingDuringTheRendezvousFreesEverySlotPromptly() throws Exception {
        long t0 = System.nanoTime();
        java.util.concurrent.CompletableFuture<List<String>> jobs = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            SparkException e = assertThrows(SparkException.class, () -> JcclSpark.mapPartitions(
                    sc.parallelize(List.of(0, 1, 2, 3), SLOTS), (Communicator comm, java.util.Iterator<Integer> it) -> it,
                    o -> {
                        if (o.rank() == 0 && o.store() != null) {
                            throw new IllegalStateException("rank 0 gives up in the rendezvous");
                        }
                        return o;
                    }).collect());
            assertTrue(String.valueOf(e).contains("barrier"), String.valueOf(e));
            // a stage that needs every slot at once
            return JcclSpark.mapPartitions(sc.parallelize(List.of(0, 1, 2, 3), SLOTS),
                    (comm, it) -> List.of("rank " + comm.rank()).iterator()).collect();
        });
        assertEquals(List.of("rank 0", "rank 1", "rank 2", "rank 3"), jobs.get(60, java.util.concurrent.TimeUnit.SECONDS),
                "the next stage of all " + SLOTS + " slots ran");
        double seconds = (System.nanoTime() - t0) / 1e9;
        assertTrue(seconds < 30, "both stages took " + seconds + " s");
    }

    @Test
    void tuneMayNotChangeWhatTheStageDecides() {
        SparkException e = assertThrows(SparkException.class, () -> JcclSpark.mapPartitions(
                sc.parallelize(List.of(0, 1), 2), (Communicator comm, java.util.Iterator<Integer> it) -> it,
                o -> o.withJobId("mine")).collect());
        assertTrue(String.valueOf(e).contains("the barrier stage decides those"), String.valueOf(e));
    }

    @Test
    void hostOfExecutorAddresses() {
        assertEquals("10.0.0.5", JcclSpark.hostOf("10.0.0.5:38233"));
        assertEquals("node-3.cluster", JcclSpark.hostOf("node-3.cluster:7077"));
        assertEquals("fe80::1", JcclSpark.hostOf("[fe80::1]:4040"));
        assertEquals("fe80::1", JcclSpark.hostOf("fe80::1"));
        assertEquals("host", JcclSpark.hostOf("host"));
    }
}
