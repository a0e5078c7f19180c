package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** jccl run with real processes: environment, output, exit codes, stopping, Ctrl-C. */
@Timeout(60)
class LauncherTest {
    /** Output of one launcher run. */
    record Result(int code, String out, String err) {
    }

    static Result launch(Launcher l) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = l.run(new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static Launcher sh(int ranks, String script) {
        return new Launcher(ranks, List.of("sh", "-c", script)).grace(Duration.ofSeconds(1));
    }

    @Test
    void aFailingRankIsNamedWithItsLastErrorLine() {
        Result r = launch(sh(3, "if [ $JCCL_RANK = 1 ]; then echo 'warming up' >&2; echo 'boom: disk on fire' >&2; exit 3; "
                + "else sleep 30; fi"));
        assertEquals(3, r.code());
        assertTrue(r.err().contains("jccl run: rank 1 exited with code 3: boom: disk on fire"), r.err());
    }

    @Test
    void everyRankGetsItsEnvironment() {
        Result r = launch(sh(3, "echo \"rank=$JCCL_RANK size=$JCCL_WORLD_SIZE local=$JCCL_LOCAL_RANK/$JCCL_LOCAL_WORLD_SIZE "
                + "store=$JCCL_STORE job=$JCCL_JOB_ID token=$JCCL_TOKEN served=$JCCL_STORE_SERVED\""));
        assertEquals(0, r.code(), r.err());
        Pattern p = Pattern.compile("\\[(\\d)] rank=(\\d) size=3 local=(\\d)/3 store=127\\.0\\.0\\.1:(\\d+) "
                + "job=([A-Za-z0-9._-]+) token=([0-9a-f]{32}) served=1");
        Set<Integer> ranks = new HashSet<>();
        Set<String> jobs = new HashSet<>();
        Set<String> tokens = new HashSet<>();
        Set<String> stores = new HashSet<>();
        for (String line : r.out().split("\n")) {
            Matcher m = p.matcher(line);
            assertTrue(m.matches(), line);
            assertEquals(m.group(1), m.group(2));
            assertEquals(m.group(1), m.group(3));
            ranks.add(Integer.parseInt(m.group(1)));
            stores.add(m.group(4));
            jobs.add(m.group(5));
            tokens.add(m.group(6));
        }
        assertEquals(Set.of(0, 1, 2), ranks);
        assertEquals(1, jobs.size());
        assertEquals(1, tokens.size());
        assertEquals(1, stores.size());
        // A fresh store, token and job id per job: two jobs never merge.
        Result again = launch(sh(1, "echo $JCCL_TOKEN $JCCL_JOB_ID $JCCL_STORE"));
        assertFalse(again.out().contains(tokens.iterator().next()));
        assertFalse(again.out().contains(jobs.iterator().next()));
        assertFalse(again.out().contains("127.0.0.1:" + stores.iterator().next()), again.out());
    }

    @Test
    void prefixesEveryLineAndNeverInterleavesInsideALine() {
        String x = "x".repeat(150);
        Result r = launch(sh(3, "i=0; while [ $i -lt 400 ]; do echo \"$JCCL_RANK:$i:" + x + "\"; "
                + "echo \"$JCCL_RANK:$i:e" + x + "\" >&2; i=$((i+1)); done"));
        assertEquals(0, r.code(), r.err());
        for (String stream : new String[] {r.out(), r.err()}) {
            boolean err = stream == r.err();
            Map<Integer, Integer> next = new HashMap<>();
            Pattern p = Pattern.compile("\\[(\\d)] (\\d):(\\d+):" + (err ? "e" : "") + x);
            for (String line : stream.split("\n")) {
                Matcher m = p.matcher(line);
                assertTrue(m.matches(), "broken line: " + line);
                int rank = Integer.parseInt(m.group(1));
                assertEquals(m.group(1), m.group(2));
                int i = Integer.parseInt(m.group(3));
                assertEquals(next.getOrDefault(rank, 0), i, "lines of a rank stay in order");
                next.put(rank, i + 1);
            }
            assertEquals(Map.of(0, 400, 1, 400, 2, 400), next);
        }
    }

    @Test
    void lastLineWithoutNewlineAndBlankLinesSurvive() {
        Result r = launch(sh(1, "printf 'a\\n\\nb'"));
        assertEquals("[0] a\n[0] \n[0] b\n", r.out());
    }

    @Test
    void returnsTheFirstNonZeroExitCodeAndSaysWhichRank() {
        Result r = launch(sh(3, "if [ \"$JCCL_RANK\" = 1 ]; then exit 3; fi; sleep 0.3"));
        assertEquals(3, r.code());
        assertTrue(r.err().contains("jccl run: rank 1 exited with code 3"), r.err());
        Result ok = launch(sh(2, "exit 0"));
        assertEquals(0, ok.code());
        assertEquals("", ok.err());
    }

    @Test
    void stopsTheOtherRanksAndWhatTheyStartedWhenOneFails(@TempDir Path dir) throws Exception {
        String script = "echo $$ > " + dir + "/pid.$JCCL_RANK; sleep 300 & echo $! > " + dir + "/child.$JCCL_RANK; "
                + "if [ \"$JCCL_RANK\" = 2 ]; then sleep 0.5; exit 7; fi; wait";
        long t0 = System.nanoTime();
        Result r = launch(sh(3, script));
        assertEquals(7, r.code(), r.err());
        assertTrue(r.err().contains("rank 2 exited with code 7; stopping ranks [0, 1]"), r.err());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(20));
        assertAllGone(dir, 3);
    }

    @Test
    void killsRanksThatIgnoreSigtermAfterTheGracePeriod(@TempDir Path dir) throws Exception {
        // Rank 0 and its child ignore SIGTERM: only SIGKILL after the 1 s grace stops them.
        String script = "if [ \"$JCCL_RANK\" = 0 ]; then trap '' TERM; fi; echo $$ > " + dir + "/pid.$JCCL_RANK; "
                + "sleep 300 & echo $! > " + dir + "/child.$JCCL_RANK; "
                + "if [ \"$JCCL_RANK\" = 1 ]; then sleep 0.5; exit 9; fi; while true; do wait; done";
        long t0 = System.nanoTime();
        Result r = launch(sh(2, script));
        long took = System.nanoTime() - t0;
        assertEquals(9, r.code(), r.err());
        assertTrue(took >= TimeUnit.MILLISECONDS.toNanos(1400), "SIGKILL came before the grace period: " + took);
        assertTrue(took < TimeUnit.SECONDS.toNanos(20));
        assertAllGone(dir, 2);
    }

    static void assertAllGone(Path dir, int ranks) throws Exception {
        List<Long> pids = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            pids.add(Long.parseLong(Files.readString(dir.resolve("pid." + r)).trim()));
            pids.add(Long.parseLong(Files.readString(dir.resolve("child." + r)).trim()));
        }
        // Zombies count as gone: this sandbox's init does not reap orphans.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (long pid : pids) {
            while (ProcessHandle.of(pid).map(Launcher::running).orElse(false) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertFalse(ProcessHandle.of(pid).map(Launcher::running).orElse(false), "process " + pid + " still runs");
        }
    }

    @Test
    void ctrlCStopsEveryRank(@TempDir Path dir) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        String script = "echo $$ > " + dir + "/pid.$JCCL_RANK; sleep 300 & echo $! > " + dir + "/child.$JCCL_RANK; wait";
        // A JVM that starts with SIGINT ignored keeps ignoring it, and a shell's background job (`mvn ... &`)
        // may hand it down that way: in case, start the launcher with the default disposition.
        List<String> cmd = new ArrayList<>();
        if (new ProcessBuilder("env", "--default-signal=INT", "true").start().waitFor() == 0) {
            cmd.addAll(List.of("env", "--default-signal=INT"));
        }
        cmd.addAll(List.of(java, "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "run", "-n", "2", "--grace", "1", "--", "sh", "-c", script));
        Process launcher = new ProcessBuilder(cmd)
                .redirectErrorStream(true).redirectOutput(dir.resolve("launcher.log").toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!(Files.exists(dir.resolve("child.0")) && Files.exists(dir.resolve("child.1"))
                    && Files.size(dir.resolve("child.0")) > 0 && Files.size(dir.resolve("child.1")) > 0)) {
                assertTrue(System.nanoTime() < deadline, "ranks did not start: " + Files.readString(dir.resolve("launcher.log")));
                assertTrue(launcher.isAlive(), Files.readString(dir.resolve("launcher.log")));
                Thread.sleep(50);
            }
            // SIGINT, as the terminal sends on Ctrl-C (only to the launcher here, the harder case).
            assertEquals(0, new ProcessBuilder("kill", "-INT", Long.toString(launcher.pid())).start().waitFor());
            assertTrue(launcher.waitFor(20, TimeUnit.SECONDS), "launcher did not exit");
            assertEquals(130, launcher.exitValue());
            assertAllGone(dir, 2);
        } finally {
            launcher.descendants().forEach(ProcessHandle::destroyForcibly);
            launcher.destroyForcibly();
        }
    }

    @Test
    void plainRank0PassesCarriageReturnsAndDropsTheIncubatorNotice() {
        Result r = launch(sh(2, "echo 'WARNING: Using incubator modules: jdk.incubator.vector' >&2; "
                + "printf 'p1\\rp2\\rline\\n'; echo e >&2").plainRank0(true));
        assertEquals(0, r.code());
        assertTrue(r.out().contains("p1\rp2\rline\n"), r.out());
        assertTrue(r.out().contains("[1] p1\rp2\rline\n"), r.out());
        assertFalse(r.err().contains("incubator"), r.err());
        assertTrue(r.err().contains("e\n") && r.err().contains("[1] e\n"), r.err());
    }

    @Test
    void aCommandThatCannotStartIs127() {
        Result r = launch(new Launcher(2, List.of("/nonexistent/jccl-test-program")));
        assertEquals(Launcher.CANNOT_START, r.code());
        assertTrue(r.err().contains("cannot start rank 0"), r.err());
    }

    @Test
    void rejectsBadArguments() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new Launcher(0, List.of("x"))).getMessage().contains("-n"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new Launcher(2, List.of())).getMessage()
                .contains("no command"));
        assertThrows(IllegalArgumentException.class, () -> new Launcher(2, List.of("x")).grace(Duration.ofSeconds(-1)));
        assertNotEquals(Launcher.newToken(), Launcher.newToken());
        assertTrue(Launcher.newToken().matches("[0-9a-f]{32}"));
    }
}
