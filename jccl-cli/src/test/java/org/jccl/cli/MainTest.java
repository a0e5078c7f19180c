package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The command line: version, help, and the one-line errors of bad usage (exit code 2). */
class MainTest {
    record Result(int code, String out, String err) {
    }

    static Result main(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void versionAndHelp() {
        Result v = main("--version");
        assertEquals(0, v.code());
        assertTrue(v.out().startsWith("jccl " + org.jccl.Jccl.VERSION + " (JDK "), v.out());
        Result h = main("--help");
        assertEquals(0, h.code());
        for (String s : List.of("run", "perf", "info", "Exit codes")) {
            assertTrue(h.out().contains(s), s);
        }
        Result ph = main("perf", "--help");
        assertEquals(0, ph.code());
        for (String s : List.of("-b", "--minbytes", "-e", "-f", "-i", "-n", "-w", "-c", "-o", "-d", "-r", "-z", "--ranks",
                "--backend", "-g", "--json", "--csv", "--svg", "--compare", "busbw")) {
            assertTrue(ph.out().contains(s), s);
        }
        assertEquals(0, main("run", "--help").code());
        assertEquals(0, main("info", "--help").code());
    }

    @Test
    void noCommandIsUsage() {
        Result r = main();
        assertEquals(2, r.code());
        assertOneLine(r.err(), "no command");
    }

    static void assertOneLine(String err, String... parts) {
        assertTrue(err.endsWith("\n") && err.indexOf('\n') == err.length() - 1, "one line: " + err);
        for (String p : parts) {
            assertTrue(err.contains(p), "'" + p + "' missing in: " + err);
        }
    }

    @Test
    void badPerfFlagsAreOneLineNamingTheFlagAndTheValidValues() {
        String[][] cases = {
            {"-d", "foo", "'-d'", "int8", "bfloat16", "fp8e5m2", "all"},
            {"-o", "bar", "'-o'", "sum", "prod", "min", "max", "avg", "premulsum", "all"},
            {"-r", "x", "'-r'", "all"},
            {"-r", "-2", "'-r'", "all"},
            {"-c", "2", "'-c'", "0", "1"},
            {"-z", "5", "'-z'", "0", "1"},
            {"-b", "1X", "'-b'", "32M"},
            {"-e", "abc", "'-e'", "32M"},
            {"-i", "0", "'-i'"},
            {"-n", "0", "'-n'", "at least 1"},
            {"-n", "two", "'--iters'", "two"},
            {"-w", "-1", "'-w'"},
            {"-f", "0", "'-f'"},
            {"--backend", "gloo", "'--backend'", "host", "nccl"},
            {"-g", "2", "'-g'", "nccl"},
            {"-g", "0", "'-g'"},
            {"--ranks", "0", "'--ranks'", "4096"},
            {"--compare", "/nonexistent/x.json", "'--compare'", "x.json"},
            {"--json", "/nonexistent/dir/x.json", "'--json'", "does not exist"},
            {"--frobnicate", "1", "frobnicate"},
        };
        for (String[] c : cases) {
            Result r = main("perf", "allreduce", c[0], c[1]);
            assertEquals(2, r.code(), String.join(" ", c) + ": " + r.err());
            assertOneLine(r.err(), java.util.Arrays.copyOfRange(c, 2, c.length));
            assertTrue(r.err().startsWith("jccl perf: "), r.err());
            assertEquals("", r.out());
        }
        Result coll = main("perf", "allreduc");
        assertEquals(2, coll.code());
        assertOneLine(coll.err(), "allreduc", "allgather", "sendrecv", "all");
        Result order = main("perf", "allreduce", "-b", "64", "-e", "8");
        assertEquals(2, order.code());
        assertOneLine(order.err(), "-b 64", "-e 8");
        Result zero = main("perf", "allreduce", "-b", "0", "-f", "2");
        assertEquals(2, zero.code());
        assertOneLine(zero.err(), "-b 0");
    }

    @Test
    void badRunFlags() {
        Result r = main("run", "sh", "-c", "true");
        assertEquals(2, r.code());
        assertOneLine(r.err(), "-n");
        Result zero = main("run", "-n", "0", "true");
        assertEquals(2, zero.code());
        assertOneLine(zero.err(), "'-n'", "4096");
        Result none = main("run", "-n", "2");
        assertEquals(2, none.code());
        assertOneLine(none.err(), "COMMAND");
    }

    @Test
    void runPassesTheCommandsOwnFlagsThrough() {
        // Without "--": everything from the command on belongs to it (-c is sh's, not jccl's).
        Result r = main("run", "-n", "1", "sh", "-c", "echo $JCCL_WORLD_SIZE-ok");
        assertEquals(0, r.code(), r.err());
        assertEquals("[0] 1-ok\n", r.out());
        Result dashes = main("run", "-n", "2", "--", "sh", "-c", "exit 4");
        assertEquals(4, dashes.code());
    }

    @Test
    void childArgsDropRanks() {
        assertEquals(List.of("perf", "allreduce", "-b", "8"),
                PerfCommand.childArgs(new String[] {"perf", "allreduce", "--ranks", "4", "-b", "8"}));
        assertEquals(List.of("perf", "all", "-n", "2"), PerfCommand.childArgs(new String[] {"perf", "--ranks=3", "all", "-n", "2"}));
    }

    @Test
    void jobDetection() {
        assertTrue(PerfCommand.inJob(java.util.Map.of("JCCL_RANK", "0")));
        assertTrue(PerfCommand.inJob(java.util.Map.of("RANK", "1", "WORLD_SIZE", "2")));
        assertTrue(PerfCommand.inJob(java.util.Map.of("OMPI_COMM_WORLD_RANK", "0")));
        assertTrue(!PerfCommand.inJob(java.util.Map.of("RANK", "1")));
        assertTrue(!PerfCommand.inJob(java.util.Map.of()));
    }
}
