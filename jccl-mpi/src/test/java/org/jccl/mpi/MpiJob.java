package org.jccl.mpi;

import org.jccl.testing.Require;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Starts a test main class under {@code mpirun -np N} and collects its output. */
final class MpiJob {
    private MpiJob() {
    }

    /** What a finished (or killed) job left. */
    record Result(int exitCode, boolean finished, String output, double seconds) {
    }

    /** The mpirun on the PATH, or null. */
    static Path mpirun() {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String dir : path.split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "mpirun");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    /** Why MPI tests cannot run here, or null when they can. */
    static String skipReason() {
        if (!Mpi.isAvailable()) {
            return "no usable Open MPI: " + Mpi.unavailabilityCause();
        }
        if (mpirun() == null) {
            return "mpirun is not on the PATH (apt-get install openmpi-bin)";
        }
        return null;
    }

    /** Skips the test without MPI, or fails it when JCCL_REQUIRE names mpi ({@link Require}). */
    static void requireMpi() {
        Require.require("mpi", skipReason());
    }

    /**
     * Runs {@code main} with {@code args} as {@code np} MPI ranks, this JVM's class path and
     * flags, and {@code env} on top of a clean environment (no JCCL_* / OMPI_* / launcher
     * variables inherited); kills it after {@code limitSeconds}.
     */
    static Result run(int np, Class<?> main, List<String> jvmFlags, Map<String, String> env, long limitSeconds,
                      String... args) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(mpirun().toString(), "--allow-run-as-root", "--oversubscribe",
                "--bind-to", "none", "-np", Integer.toString(np)));
        for (String k : env.keySet()) {
            cmd.add("-x");
            cmd.add(k);
        }
        cmd.addAll(List.of(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-Xshare:auto", "-Xss4m"));
        cmd.addAll(jvmFlags);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        // A crashing JVM writes hs_err files into its working directory: not into the checkout.
        pb.directory(Files.createTempDirectory("jccl-mpi-test").toFile());
        Map<String, String> e = pb.environment();
        e.keySet().removeIf(k -> k.startsWith("JCCL_") || k.startsWith("OMPI_") || k.startsWith("PMIX_")
                || k.startsWith("SLURM_") || k.equals("RANK") || k.equals("WORLD_SIZE") || k.equals("MASTER_ADDR")
                || k.equals("MASTER_PORT"));
        e.putAll(env);
        pb.redirectErrorStream(true);
        long t0 = System.nanoTime();
        Process p = pb.start();
        List<String> lines = new ArrayList<>();
        Thread reader = Thread.ofVirtual().start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    synchronized (lines) {
                        lines.add(line);
                    }
                }
            } catch (IOException ignored) {
                // the job is gone
            }
        });
        boolean finished = p.waitFor(limitSeconds, TimeUnit.SECONDS);
        if (!finished) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
        reader.join(5_000);
        double secs = (System.nanoTime() - t0) / 1e9;
        String out;
        synchronized (lines) {
            out = String.join("\n", lines);
        }
        return new Result(finished ? p.exitValue() : -1, finished, out, secs);
    }
}
