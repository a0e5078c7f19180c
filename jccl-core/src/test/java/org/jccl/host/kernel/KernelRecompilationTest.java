package org.jccl.host.kernel;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.jccl.bootstrap.Procs;
import org.junit.jupiter.api.Test;

/**
 * A JVM that has seen segments of a confined arena and of a shared one (a caller's buffers, the
 * warm-up's, a peer's slot in shared memory) must not keep throwing away the compiled float
 * kernels. C2's profiled loop predication hoists a confined session's owner-thread check out of
 * loops over segments once the session profile is mixed, and on shared segments the hoisted
 * check fails at the loop's entry: the two-input scalar tail loop took that trap and was
 * recompiled every few hundred milliseconds, warm-up or not. The JDK's own deoptimization events
 * (JFR) are the evidence: sums of a confined and a shared segment, then of shared ones alone, may
 * cost the kernels no {@code profile_predicate} trap. They run in a JVM of their own
 * ({@link KernelRecompilationMain}): in this one, every other test's calls make the profile, and
 * what C2 speculates on depends on which tests ran before.
 */
class KernelRecompilationTest {
    private static final java.util.Set<String> KERNELS = java.util.Set.of(Reductions.class.getName(),
            ScalarKernels.class.getName(), "org.jccl.host.kernel.VectorKernels");

    @Test
    void sharedSegmentsAfterConfinedOnesCostTheFloatKernelsNoPredicateTrap() throws Exception {
        assertNotNull(ReductionsTest.impls()[0], "vector kernels");
        Procs.Proc p = Procs.startC2(KernelRecompilationMain.class, List.of(), Map.of());
        try {
            assertTrue(p.await("DONE"::equals, 120_000) >= 0, () -> "no DONE in 120 s:\n" + p.output());
            String out = p.output();
            // the library's kernel classes: the program's own loop (which inlines them) may trap
            List<String> traps = out.lines().filter(l -> l.startsWith("DEOPT ") && l.endsWith(" profile_predicate"))
                    .filter(l -> KERNELS.contains(l.substring(6, l.lastIndexOf('.', l.indexOf(' ', 6)))))
                    .toList();
            assertTrue(traps.isEmpty(), () -> traps.size() + " profile_predicate traps in the float kernels:\n"
                    + String.join("\n", traps));
        } finally {
            p.process().destroyForcibly();
        }
    }
}
