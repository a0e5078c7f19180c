package org.jccl.internal;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A reading of how much this JVM's JIT has worked, for the warm-ups that wait until it is quiet:
 * an unchanged reading over a stretch of time means the JIT did nothing in it.
 *
 * <p>On Linux the reading is the CPU time of the JVM's compiler threads (their
 * {@code /proc/self/task/<tid>/schedstat}, nanoseconds), which grows while a compilation runs.
 * The JIT's accumulated compilation time (the fallback elsewhere) grows only when a compilation
 * ends, and a C2 compilation of a large method runs for tens of milliseconds, on a slow or busy
 * machine for hundreds: a warm-up that waited for a stretch with no compilation ended stopped in
 * the middle of one, and the compiler thread took the CPU of a rank in the first timed calls (2
 * ranks on 2 cores: first calls of 2-5 ms, seen in the scheduler's trace).
 */
public final class JitActivity {
    private static final Path TASKS = Path.of("/proc/self/task");
    /** Compiler threads come and go (HotSpot's dynamic compiler thread count): look again this often. */
    private static final long RESCAN_NANOS = 200_000_000L;
    /** Thread names (as the kernel truncates them, 15 bytes) of HotSpot's compiler threads. */
    private static final String[] COMPILER_PREFIXES = {"C1 Compiler", "C2 Compiler", "JVMCI Compil"};

    /** The compiler threads found at {@code at}; null tids: /proc cannot be read. */
    private record Scan(long at, long[] tids) {
    }

    private static volatile Scan scan;

    /**
     * Readings closer together than this return the last one: the warm-ups ask after every block
     * (about a millisecond), and reading files that often made the JIT compile the file reading
     * itself, which kept the JIT busy. Far below the quiet stretches the warm-ups wait for.
     */
    private static final long REREAD_NANOS = 10_000_000L;

    private record Reading(long at, long value) {
    }

    private static volatile Reading lastReading;

    private JitActivity() {
    }

    /**
     * The reading: the compiler threads' CPU nanoseconds (Linux), else the JIT's accumulated
     * compilation time in milliseconds, else -1 (nothing to read: callers treat the JIT as busy).
     * Only its changes mean anything; both kinds only grow.
     */
    public static long reading() {
        long now = System.nanoTime();
        Reading last = lastReading;
        if (last != null && now - last.at() < REREAD_NANOS) {
            return last.value();
        }
        long value = read();
        lastReading = new Reading(now, value);
        return value;
    }

    private static long read() {
        long cpu = compilerCpuNanos();
        if (cpu >= 0) {
            return cpu;
        }
        return Jit.TIMED ? Jit.BEAN.getTotalCompilationTime() : -1;
    }

    /** CPU nanoseconds of the compiler threads alive now, or -1 where /proc cannot tell. */
    static long compilerCpuNanos() {
        long now = System.nanoTime();
        Scan s = scan;
        if (s == null || now - s.at() >= RESCAN_NANOS) {
            s = new Scan(now, compilerThreads());
            scan = s;
        }
        if (s.tids() == null) {
            return -1;
        }
        long sum = 0;
        for (long tid : s.tids()) {
            long v = cpuNanos(tid);
            if (v < 0) {
                scan = null; // the thread ended: look again next time
                continue;
            }
            sum += v;
        }
        // A thread that ended takes its time with it: the sum can fall, which is a change too.
        return sum;
    }

    /** Ids of this process's compiler threads; null where /proc/self/task cannot be read. */
    private static long[] compilerThreads() {
        if (!Files.isDirectory(TASKS)) {
            return null;
        }
        long[] found = new long[8];
        int n = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                String name;
                try {
                    name = Files.readString(task.resolve("comm"), StandardCharsets.UTF_8);
                } catch (IOException ended) {
                    continue;
                }
                for (String prefix : COMPILER_PREFIXES) {
                    if (name.startsWith(prefix)) {
                        if (n == found.length) {
                            found = Arrays.copyOf(found, n * 2);
                        }
                        found[n++] = Long.parseLong(task.getFileName().toString());
                        break;
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return n == 0 ? null : Arrays.copyOf(found, n);
    }

    /** The first field of a thread's schedstat (nanoseconds on a CPU), or -1 once it is gone. */
    private static long cpuNanos(long tid) {
        try {
            String s = Files.readString(TASKS.resolve(Long.toString(tid)).resolve("schedstat"), StandardCharsets.US_ASCII);
            int end = s.indexOf(' ');
            return Long.parseLong(end < 0 ? s.trim() : s.substring(0, end));
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The JIT's MXBean, looked up at the first reading that needs it. */
    private static final class Jit {
        static final CompilationMXBean BEAN = ManagementFactory.getCompilationMXBean();
        static final boolean TIMED = BEAN != null && BEAN.isCompilationTimeMonitoringSupported();
    }
}
