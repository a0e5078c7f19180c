package org.jccl.diag;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.jccl.bootstrap.Procs;
import org.junit.jupiter.api.Test;

/**
 * The flight recorder's first wrap must not throw away its compiled code. The JIT warm-up clears
 * the recorder every few blocks (so that the caller's collectives count from #1), so it never
 * fills it; a wrap that took a branch of its own was then first taken at the caller's
 * capacity-th collective (the 2000th by default), where C2's trap for the branch it had never
 * seen sent the whole compiled call path, this method inlined in it, back to the interpreter and
 * recompiled it: a few milliseconds of compilation in the middle of the caller's calls (on two
 * cores, 2000-call runs of 8-byte all-reduces averaged 2.6-7.6 us instead of 0.4). The JDK's own
 * deoptimization events (JFR) are the evidence, in a JVM of its own
 * ({@link FlightRecorderRecompilationMain}): in this one, every other test's calls make the
 * recorder's profile.
 */
class FlightRecorderRecompilationTest {
    private static final int CAPACITY = FlightRecorderRecompilationMain.CAPACITY;

    @Test
    void theFirstWrapAfterAWarmUpThatClearedTheRecorderCostsNoDeoptimization() throws Exception {
        Procs.Proc p = Procs.startC2(FlightRecorderRecompilationMain.class, List.of(), Map.of());
        try {
            assertTrue(p.await("DONE"::equals, 120_000) >= 0, () -> "no DONE in 120 s:\n" + p.output());
            String out = p.output();
            List<String> traps = out.lines()
                    .filter(l -> l.startsWith("DEOPT " + FlightRecorder.class.getName() + ".")).toList();
            assertTrue(traps.isEmpty(), () -> traps.size() + " deoptimizations in the flight recorder:\n"
                    + String.join("\n", traps));
            assertEquals("LAST " + (2 * CAPACITY + 6), p.find(l -> l.startsWith("LAST ")),
                    "handles count every operation since the clear");
            // The ring still keeps the newest entries after the wraps
            String json = p.find(l -> l.startsWith("JSON "));
            assertTrue(json.contains("\"seq\":" + (2 * CAPACITY + 6)), "newest entry kept");
            assertTrue(json.contains("\"seq\":" + (CAPACITY + 7)), "oldest kept entry");
            assertTrue(!json.contains("\"seq\":" + (CAPACITY + 6) + ","), "entry older than the capacity dropped");
        } finally {
            p.process().destroyForcibly();
        }
    }
}
