package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a failing job prints under {@code jccl run}, with {@code JCCL_DEBUG=INFO}: jccl's log
 * lines are one line each, {@code [rank] jccl LEVEL org.jccl.<package>: message}, the rank once
 * (the launcher does not prefix them again); the failure the caller gets is not also logged as
 * a warning. Two real rank processes whose all-reduce counts differ.
 */
@Timeout(120)
class LoggingTest {
    private static final Pattern OWN_LINE = Pattern.compile("(\\[[01]] )?jccl (WARN|INFO|TRACE) org\\.jccl(\\.[a-z]+)*: .*");

    @Test
    void aFailureIsShownOnceAndLogLinesAreOneLineWithTheRankOnce(@TempDir Path dir) throws Exception {
        RunJavaTest.Result r = RunJavaTest.jccl(dir, "run", "-n", "2", "--", "java", "-cp",
                System.getProperty("java.class.path"), MismatchRankMain.class.getName());
        assertNotEquals(0, r.code(), r.err());
        List<String> lines = r.err().lines().toList();
        for (int rank = 0; rank < 2; rank++) {
            // Each rank's own call is named, first when it saw the mismatch itself, after the other's
            // when the other rank saw it first ("rank 0 detected a mismatch: ... but rank 1 called ...")
            String mismatch = "rank " + rank + " called allReduce #1";
            String thrownLine = "[" + rank + "] Exception in thread \"main\"";
            long thrown = lines.stream().filter(l -> l.startsWith(thrownLine) && l.contains("collective mismatch: ")
                    && l.contains(mismatch)).count();
            assertEquals(1, thrown, "rank " + rank + "'s exception, once:\n" + r.err());
            assertFalse(lines.stream().anyMatch(l -> l.contains("WARN") && l.contains(mismatch)),
                    "the failure the caller gets is not logged as a warning too:\n" + r.err());
        }
        assertFalse(r.err().contains("org.jccl.internal.Log"), "no logger header lines:\n" + r.err());
        List<String> own = lines.stream().filter(l -> l.contains(" jccl INFO ") || l.contains(" jccl WARN ")).toList();
        assertTrue(own.stream().anyMatch(l -> l.contains("jccl INFO org.jccl.host.engine: communicator")), r.err());
        for (String l : own) {
            assertTrue(OWN_LINE.matcher(l).matches(), "one line, rank once, a package's logger name: " + l);
            assertFalse(l.matches("\\[[01]] \\[[01]] .*") || l.matches(".*: \\[[01]] .*"), "the rank once: " + l);
        }
    }
}
