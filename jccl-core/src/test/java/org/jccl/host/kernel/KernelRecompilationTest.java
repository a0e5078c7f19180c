package org.jccl.host.kernel;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingFile;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JVM that has seen segments of a confined arena and of a shared one (a caller's buffers, the
 * warm-up's, a peer's slot in shared memory) must not keep throwing away the compiled float
 * kernels. C2's profiled loop predication hoists a confined session's owner-thread check out of
 * loops over segments once the session profile is mixed, and on shared segments the hoisted
 * check fails at the loop's entry: the two-input scalar tail loop took that trap and was
 * recompiled every few hundred milliseconds, warm-up or not. The JDK's own deoptimization events
 * (JFR) are the evidence: sums of a confined and a shared segment, then of shared ones alone, may
 * cost the kernels no {@code profile_predicate} trap. Without C2 (an interpreter-only JVM) the test
 * passes without saying anything.
 */
class KernelRecompilationTest {
    private static final int COUNT = 7; // below one vector: the tail alone
    private static final java.util.Set<String> KERNELS = java.util.Set.of(Reductions.class.getName(),
            ScalarKernels.class.getName(), "org.jccl.host.kernel.VectorKernels");

    @Test
    void sharedSegmentsAfterConfinedOnesCostTheFloatKernelsNoPredicateTrap(@TempDir Path tmp) throws Exception {
        assertNotNull(ReductionsTest.impls()[0], "vector kernels");
        Path file = tmp.resolve("deopt.jfr");
        try (Recording rec = new Recording()) {
            rec.enable("jdk.Deoptimization").withoutStackTrace();
            rec.start();
            try (Arena confined = Arena.ofConfined(); Arena shared = Arena.ofShared()) {
                // A caller's confined buffers with a peer's shared slot, then shared buffers alone
                run(confined, shared, 300_000);
                run(shared, shared, 2_000_000);
            }
            rec.stop();
            rec.dump(file);
        }
        List<RecordedEvent> traps = RecordingFile.readAllEvents(file).stream()
                .filter(e -> "profile_predicate".equals(e.getString("reason")))
                .filter(e -> {
                    RecordedMethod m = e.getValue("method");
                    // the library's kernel classes: this test's own loop (which inlines them) may trap
                    return m != null && KERNELS.contains(m.getType().getName());
                })
                .toList();
        assertTrue(traps.isEmpty(), () -> traps.size() + " profile_predicate traps in the float kernels: "
                + traps.stream().map(e -> {
                    RecordedMethod m = e.getValue("method");
                    return m.getType().getName() + "." + m.getName() + " bci " + e.getInt("bci");
                }).collect(Collectors.joining(", ")));
    }

    /**
     * {@code calls} two-input float sums of {@link #COUNT} elements: the output and the first
     * input in {@code mine}, the second input in {@code peer}.
     */
    private static void run(Arena mine, Arena peer, int calls) {
        MemorySegment a = mine.allocate(4L * COUNT, 64);
        MemorySegment b = peer.allocate(4L * COUNT, 64);
        MemorySegment d = mine.allocate(4L * COUNT, 64);
        for (int i = 0; i < COUNT; i++) {
            a.setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
            b.setAtIndex(ValueLayout.JAVA_FLOAT, i, 1f);
        }
        MemorySegment[] srcs = {a, b};
        long[] offs = {0, 0};
        for (int c = 0; c < calls; c++) {
            Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, d, 0, srcs, offs, 2, COUNT, 1);
        }
        for (int i = 0; i < COUNT; i++) {
            float got = d.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            if (got != i + 1f) {
                throw new AssertionError("element " + i + ": " + got);
            }
        }
    }
}
