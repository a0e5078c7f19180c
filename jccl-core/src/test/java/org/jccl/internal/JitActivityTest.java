package org.jccl.internal;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** {@link JitActivity}: the compiler threads' CPU time moves when the JIT works and stands still when it does not. */
class JitActivityTest {
    private static boolean linux() {
        return Files.isDirectory(Path.of("/proc/self/task"));
    }

    @Test
    void readsTheCompilerThreadsOnLinux() {
        assumeTrue(linux(), "reads /proc/self/task: Linux only");
        assertTrue(JitActivity.compilerCpuNanos() >= 0, "compiler threads found and read");
        assertTrue(JitActivity.reading() >= 0);
    }

    @Test
    void movesWhileTheJitCompiles() throws InterruptedException {
        assumeTrue(JitActivity.reading() >= 0, "this JVM cannot tell how much its JIT works");
        long before = JitActivity.reading();
        // Fresh code run hot enough for C1 and C2, then a wait past the reading's 10 ms reuse
        long sink = 0;
        long deadline = System.nanoTime() + 10_000_000_000L;
        long after = before;
        for (int round = 0; after == before && System.nanoTime() < deadline; round++) {
            for (int i = 0; i < 20_000; i++) {
                sink += Hot.mix(i + round);
            }
            Thread.sleep(20);
            after = JitActivity.reading();
        }
        assertNotEquals(before, after, "no JIT activity seen while new code ran hot (sink " + sink + ")");
    }

    @Test
    void standsStillOnceTheJitIsQuiet() throws InterruptedException {
        assumeTrue(JitActivity.reading() >= 0, "this JVM cannot tell how much its JIT works");
        // A reading that moved all the time (another clock, the whole process's CPU) never stands
        // still for 100 ms while this thread sleeps; the JIT of a test JVM goes quiet within seconds.
        long deadline = System.nanoTime() + 20_000_000_000L;
        long last = JitActivity.reading();
        long stillSince = System.nanoTime();
        while (System.nanoTime() - stillSince < 100_000_000L) {
            assertTrue(System.nanoTime() < deadline, "the reading never stood still for 100 ms in 20 s");
            Thread.sleep(15);
            long now = JitActivity.reading();
            if (now != last) {
                last = now;
                stillSince = System.nanoTime();
            }
        }
    }

    /** Code that runs nowhere else, so the JIT has something new to compile. */
    private static final class Hot {
        static long mix(long z) {
            z = (z ^ (z >>> 31)) * 0x7FB5D329728EA185L;
            z = (z ^ (z >>> 27)) * 0x81DADEF4BC2DD44DL;
            return z ^ (z >>> 33);
        }
    }
}
