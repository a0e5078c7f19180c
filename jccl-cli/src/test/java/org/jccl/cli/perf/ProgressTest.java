package org.jccl.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ProgressTest {
    @Test
    void textHasWhatSizeElapsedAndEta() {
        assertEquals("allreduce float sum: size 3/10, elapsed 4.0 s, ETA 12.0 s",
                Progress.text("allreduce float sum", 3, 10, 4.0, 1, 4));
        assertEquals("x: size 1/2, elapsed 0.5 s, ETA ?", Progress.text("x", 1, 2, 0.5, 0, 4));
        assertEquals("2m05s", Progress.duration(125));
        assertEquals("1h01m", Progress.duration(3660));
    }

    @Test
    void drawsOnlyAfterTwoSecondsAndClearsInPlace() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream err = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        Progress p = new Progress(err, true);
        p.update("allreduce", 1, 4, 0, 4);
        assertEquals(0, bytes.size(), "nothing in the first 2 s");
        Thread.sleep(2100);
        p.update("allreduce", 2, 4, 1, 4);
        String s = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(s.startsWith("allreduce: size 2/4, elapsed 2.") && s.endsWith("\r") && !s.contains("\n"), s);
        p.clear();
        String cleared = bytes.toString(StandardCharsets.UTF_8).substring(s.length());
        assertEquals(" ".repeat(s.length() - 1) + "\r", cleared);
    }

    @Test
    void offNeverDraws() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(bytes), false);
        p.update("x", 1, 1, 0, 1);
        p.clear();
        assertEquals(0, bytes.size());
    }
}
