package org.jccl.diag;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The flight recorder's first wrap must not throw away its compiled code. The JIT warm-up clears
 * the recorder every few blocks (so that the caller's collectives count from #1), so it never
 * fills it; a wrap that took a branch of its own was then first taken at the caller's
 * capacity-th collective (the 2000th by default), where C2's trap for the branch it had never
 * seen sent the whole compiled call path, this method inlined in it, back to the interpreter and
 * recompiled it: a few milliseconds of compilation in the middle of the caller's calls (on two
 * cores, 2000-call runs of 8-byte all-reduces averaged 2.6-7.6 us instead of 0.4). The JDK's own
 * deoptimization events (JFR) are the evidence. Without C2 (an interpreter-only JVM) the test
 * passes without saying anything.
 */
class FlightRecorderRecompilationTest {
    private static final int CAPACITY = 2000;

    @Test
    void theFirstWrapAfterAWarmUpThatClearedTheRecorderCostsNoDeoptimization(@TempDir Path tmp) throws Exception {
        FlightRecorder rec = new FlightRecorder(CAPACITY, new String[] {"allReduce"});
        Path file = tmp.resolve("deopt.jfr");
        long last;
        try (Recording jfr = new Recording()) {
            jfr.enable("jdk.Deoptimization").withoutStackTrace();
            jfr.start();
            // As the warm-up: many operations, the recorder cleared before it fills
            for (int block = 0; block < 2_000; block++) {
                record(rec, CAPACITY / 2);
                rec.clear();
            }
            // As the caller: past the capacity, twice
            last = record(rec, 2 * CAPACITY + 7);
            jfr.stop();
            jfr.dump(file);
        }
        assertEquals(2 * CAPACITY + 6, last, "handles count every operation since the clear");
        List<RecordedEvent> traps = RecordingFile.readAllEvents(file).stream()
                .filter(e -> {
                    RecordedMethod m = e.getValue("method");
                    return m != null && FlightRecorder.class.getName().equals(m.getType().getName());
                })
                .toList();
        assertTrue(traps.isEmpty(), () -> traps.size() + " deoptimizations in the flight recorder: " + traps.stream()
                .map(e -> e.<RecordedMethod>getValue("method").getName() + " bci " + e.getInt("bci") + " "
                        + e.getString("reason"))
                .collect(Collectors.joining(", ")));
        // The ring still keeps the newest entries after the wraps
        String json = rec.toJson("c", 0, 1, "test");
        assertTrue(json.contains("\"seq\":" + (2 * CAPACITY + 6)), "newest entry kept");
        assertTrue(json.contains("\"seq\":" + (CAPACITY + 7)), "oldest kept entry");
        assertTrue(!json.contains("\"seq\":" + (CAPACITY + 6) + ","), "entry older than the capacity dropped");
    }

    /** {@code n} operations scheduled, started and completed, as the host engine records its calls; the last handle. */
    private static long record(FlightRecorder rec, int n) {
        long h = -1;
        for (int k = 0; k < n; k++) {
            h = rec.schedule(k, 0, 0, 2, 0, -1, -1, k);
            rec.startedNow(h);
            rec.completed(h);
        }
        return h;
    }
}
