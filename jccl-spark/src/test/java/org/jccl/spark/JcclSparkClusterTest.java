package org.jccl.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.jccl.HostBuffer;
import org.jccl.kit.Kit;
import org.jccl.kit.Mem;
import org.jccl.kit.Traits;
import org.junit.jupiter.api.Test;

/**
 * {@link JcclSpark} across executor processes: Spark's {@code local-cluster} mode starts each
 * executor as its own JVM, so the ranks of a barrier stage meet over shared memory between
 * processes, as executors on one machine of a real cluster do. The conformance kit (quick subset)
 * runs on the stage's communicator.
 */
class JcclSparkClusterTest {

    @Test
    void conformanceKitAcrossExecutorProcesses() throws Exception {
        long seed = Kit.seed();
        try (JavaSparkContext sc = SparkWorlds.cluster(2)) {
            List<List<String>> reports = JcclSpark.mapPartitions(sc.parallelize(List.of(0, 1), 2), (comm, it) -> {
                long[] pid = {ProcessHandle.current().pid()};
                long[] pids = new long[comm.size()];
                comm.allGather(HostBuffer.of(pid), HostBuffer.of(pids));
                Kit.Report r = Kit.run(comm, Mem::host, Traits.host("shm", false).named("spark local-cluster, 2 executors"),
                        seed, false, Kit.selection());
                List<String> lines = new ArrayList<>();
                lines.add("ran " + r.ran().size());
                lines.add("pids " + pids[0] + " " + pids[1] + " backend " + comm.backend());
                lines.add(String.join(", ", r.ran()));
                lines.addAll(r.failures());
                return List.<List<String>>of(lines).iterator();
            }, o -> o.withTimeout(Duration.ofSeconds(60))).collect();
            assertEquals(2, reports.size());
            String[] pids = reports.get(0).get(1).split(" ");
            assertNotEquals(pids[1], pids[2], "the two ranks ran in one process: " + reports.get(0).get(1));
            assertNotEquals(Long.toString(ProcessHandle.current().pid()), pids[1], "rank 0 ran in the driver");
            assertEquals(reports.get(0).get(1), reports.get(1).get(1));
            System.out.println("cases (ms) on rank 0: " + reports.get(0).get(2));
            List<List<String>> kit = new ArrayList<>();
            for (List<String> r : reports) {
                List<String> k = new ArrayList<>(r);
                k.remove(1);
                k.remove(1);
                kit.add(k);
            }
            assertKitPassed("spark local-cluster, 2 executor processes", seed, kit);
        }
    }

    private static void assertKitPassed(String world, long seed, List<List<String>> reports) {
        assertFalse(reports.isEmpty(), world + ": no task reported");
        List<String> failures = new ArrayList<>();
        for (List<String> r : reports) {
            assertTrue(r.get(0).startsWith("ran "), r.get(0));
            failures.addAll(r.subList(1, r.size()));
        }
        System.out.println(world + ": kit " + reports.get(0).get(0) + " cases on each of " + reports.size() + " ranks");
        assertNotEquals("ran 0", reports.get(0).get(0), world + ": no case ran");
        if (!failures.isEmpty()) {
            fail(world + ": " + failures.size() + " failure(s), seed " + seed + ":\n  "
                    + String.join("\n  ", failures.subList(0, Math.min(40, failures.size()))));
        }
    }

}
