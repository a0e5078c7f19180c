package org.jccl.bootstrap;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** Starts test JVMs (a main class of the test class path) and follows what they print. */
public final class Procs {
    private Procs() {
    }

    /** A started JVM: its process and every line it printed, with the arrival time of each. */
    public record Proc(Process process, List<String> lines, List<Long> arrivals) {
        /** Everything printed so far. */
        public String output() {
            synchronized (lines) {
                return String.join("\n", lines);
            }
        }

        /**
         * Waits until a line matching {@code p} arrives (or has arrived); returns its arrival time
         * (System.nanoTime of this JVM), or -1 after {@code timeoutMs}.
         */
        public long await(Predicate<String> p, long timeoutMs) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            while (true) {
                synchronized (lines) {
                    for (int i = 0; i < lines.size(); i++) {
                        if (p.test(lines.get(i))) {
                            return arrivals.get(i);
                        }
                    }
                    long left = end - System.nanoTime();
                    if (left <= 0) {
                        return -1;
                    }
                    lines.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                }
            }
        }

        /** The first line matching {@code p}, or null. */
        public String find(Predicate<String> p) {
            synchronized (lines) {
                return lines.stream().filter(p).findFirst().orElse(null);
            }
        }

        /** Sends a signal, ignoring failures (cleanup). */
        public void signal0(String sig) {
            try {
                signal(sig);
            } catch (IOException | InterruptedException | RuntimeException ignored) {
                // gone already
            }
        }

        /** Sends a signal (STOP, CONT, KILL) with kill(1). */
        public void signal(String sig) throws IOException, InterruptedException {
            int rc = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).start().waitFor();
            if (rc != 0) {
                throw new IOException("kill -" + sig + " " + process.pid() + " failed: " + rc);
            }
        }
    }

    /**
     * Starts {@code main} with {@code args} in a JVM that compiles with C1 only (quick to start); the
     * JCCL_* / launcher variables of this JVM are removed, {@code env} added.
     */
    public static Proc start(Class<?> main, List<String> args, Map<String, String> env) throws IOException {
        return start(main, args, env, true);
    }

    /**
     * {@link #start} for a JVM that runs the host engine's collectives and checks their results at
     * length (a conformance kit rank): both compilers, since the reduction kernels are Vector API
     * code that only C2 turns into SIMD instructions.
     */
    public static Proc startC2(Class<?> main, List<String> args, Map<String, String> env) throws IOException {
        return start(main, args, env, false);
    }

    private static Proc start(Class<?> main, List<String> args, Map<String, String> env, boolean c1Only)
            throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-Xshare:auto"));
        if (c1Only) {
            cmd.add("-XX:TieredStopAtLevel=1");
        }
        cmd.addAll(List.of("-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().keySet().removeIf(k -> k.startsWith("JCCL_") || k.startsWith("OMPI_") || k.startsWith("SLURM_")
                || k.equals("RANK") || k.equals("WORLD_SIZE"));
        pb.environment().putAll(env);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        List<String> lines = new ArrayList<>();
        List<Long> arrivals = new ArrayList<>();
        Thread.ofVirtual().start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    long now = System.nanoTime();
                    synchronized (lines) {
                        lines.add(line);
                        arrivals.add(now);
                        lines.notifyAll();
                    }
                }
            } catch (IOException ignored) {
                // process gone
            }
        });
        return new Proc(p, lines, arrivals);
    }
}
