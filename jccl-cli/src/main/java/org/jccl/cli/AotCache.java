package org.jccl.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * {@code JCCL_AOT=on}: a JDK ahead-of-time cache (JEP 483, 514, 515: classes loaded and linked,
 * method profiles) for the rank JVMs that {@code jccl perf --ranks} starts, so that their first
 * collectives do not wait for the JIT to learn the call path. The first run with a given JDK and
 * class path trains: rank 0 records, and the launcher creates the cache once the run ended; later
 * runs start from it. The file
 * lives in {@code $XDG_CACHE_HOME/jccl/aot} (else {@code ~/.cache/jccl/aot}), named after a hash of
 * the JDK, the JVM options and every class-path entry (its size and time), so that a rebuild or
 * another JDK trains a new one. {@code off} (the default) does none of this.
 */
final class AotCache {
    /** A rank JVM's flags and, when training, the file rank 0 writes (null otherwise). */
    record Plan(List<String> rankFlags, List<String> rank0Flags, Path training, Path cache) {
    }

    private AotCache() {
    }

    /** JCCL_AOT: true for {@code on}, false for unset or {@code off}; anything else is an error naming the setting. */
    static boolean enabled(String v) {
        if (v == null || v.isBlank() || v.trim().equalsIgnoreCase("off")) {
            return false;
        }
        if (v.trim().equalsIgnoreCase("on")) {
            return true;
        }
        throw new IllegalArgumentException("JCCL_AOT=" + v + " is not a choice: use on (jccl perf's rank JVMs start "
                + "from a JDK AOT cache, trained by the first run) or off (the default)");
    }

    /** The cache directory: $XDG_CACHE_HOME/jccl/aot, else ~/.cache/jccl/aot. */
    static Path dir(String xdgCacheHome, String userHome) {
        Path base = xdgCacheHome != null && !xdgCacheHome.isBlank() ? Path.of(xdgCacheHome) : Path.of(userHome, ".cache");
        return base.resolve("jccl").resolve("aot");
    }

    /**
     * The flags for the rank JVMs of a run whose JVM options are {@code jvmOptions} and class path
     * {@code classPath}: the cache when it exists, else training on rank 0.
     */
    static Plan plan(Path dir, List<String> jvmOptions, String classPath) throws IOException {
        for (String e : classPath.split(java.io.File.pathSeparator)) {
            if (!e.isEmpty() && !Files.isRegularFile(Path.of(e))) {
                // the JDK records and uses AOT caches of jars only: a directory would fail the JVM
                throw new IOException("the class path holds " + e + ", not a jar (the JDK caches classes of jars only)");
            }
        }
        Files.createDirectories(dir);
        Path cache = dir.resolve("perf-" + key(jvmOptions, classPath) + ".aot");
        // The JDK reports an AOT cache it cannot use (or the module graph it leaves out) at level
        // error on stdout, and says when it wrote one: the benchmark's output stays its own.
        List<String> quiet = List.of("-Xlog:aot*=off", "-Xlog:cds*=off");
        if (Files.isRegularFile(cache)) {
            List<String> use = concat(List.of("-XX:AOTCache=" + cache), quiet);
            return new Plan(use, use, null, cache);
        }
        // Two steps (JEP 483): rank 0 records what it loads and profiles; the launcher then creates
        // the cache itself, its output kept out of the benchmark's (it is long and says little).
        Path training = dir.resolve(cache.getFileName() + ".training-" + ProcessHandle.current().pid());
        return new Plan(List.of(), concat(List.of("-XX:AOTMode=record", "-XX:AOTConfiguration=" + training + ".conf"), quiet),
                training, cache);
    }

    /**
     * After the run: creates the cache from rank 0's record with {@code javaLauncher}, the run's JVM
     * options and class path (the cache needs the same), then publishes it atomically (a concurrent
     * run sees all of it or none). Returns null, or why no cache was made.
     */
    static String create(Plan p, String javaLauncher, List<String> jvmOptions, String classPath) {
        if (p.training() == null) {
            return null;
        }
        Path conf = Path.of(p.training() + ".conf");
        Path log = Path.of(p.training() + ".log");
        try {
            if (!Files.isRegularFile(conf)) {
                return "rank 0 recorded nothing (it failed, or was stopped)";
            }
            java.util.ArrayList<String> cmd = new java.util.ArrayList<>();
            cmd.add(javaLauncher);
            cmd.addAll(jvmOptions);
            cmd.addAll(List.of("-XX:AOTMode=create", "-XX:AOTConfiguration=" + conf, "-XX:AOTCache=" + p.training(),
                    "-cp", classPath));
            Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            if (!proc.waitFor(120, java.util.concurrent.TimeUnit.SECONDS)) {
                proc.destroyForcibly();
                return "creating it took over 120 s";
            }
            if (proc.exitValue() != 0 || !Files.isRegularFile(p.training())) {
                String out = Files.readString(log);
                return "java -XX:AOTMode=create exited " + proc.exitValue() + ": "
                        + (out.length() > 500 ? out.substring(out.length() - 500) : out).strip();
            }
            Files.move(p.training(), p.cache(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return null;
        } catch (IOException e) {
            return e.toString();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        } finally {
            for (Path f : List.of(conf, log, p.training())) {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException ignored) {
                    // best effort
                }
            }
        }
    }

    /** A hash of what the cache depends on: the JDK, the JVM options, each class-path entry's path, size and time. */
    static String key(List<String> jvmOptions, String classPath) throws IOException {
        StringBuilder b = new StringBuilder(System.getProperty("java.home")).append('\n')
                .append(System.getProperty("java.vm.version")).append('\n');
        for (String o : jvmOptions) {
            b.append(o).append('\n');
        }
        for (String e : classPath.split(java.io.File.pathSeparator)) {
            Path f = Path.of(e);
            b.append(e);
            if (Files.exists(f)) {
                b.append(' ').append(Files.size(f)).append(' ').append(Files.getLastModifiedTime(f).toMillis());
            }
            b.append('\n');
        }
        try {
            byte[] h = MessageDigest.getInstance("SHA-256").digest(b.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(h, 0, 8).toLowerCase(Locale.ROOT);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static List<String> concat(List<String> a, List<String> b) {
        java.util.ArrayList<String> l = new java.util.ArrayList<>(a);
        l.addAll(b);
        return List.copyOf(l);
    }
}
