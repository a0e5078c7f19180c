package org.jccl.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Whether this machine's /usr/bin/python3 imports torch.distributed (Debian's python3-torch), for {@link Require}'s {@code torch}. */
public final class PythonTorch {
    /** The interpreter the torch tests run. */
    public static final String PYTHON = "/usr/bin/python3";

    private static volatile String cached;

    private PythonTorch() {
    }

    /** Why torch cannot be used here, or null when it can (checked once). */
    public static String unavailable() {
        String c = cached;
        if (c != null) {
            return c.isEmpty() ? null : c;
        }
        String why = probe();
        cached = why == null ? "" : why;
        return why;
    }

    /** A free TCP port on this machine (for a torch server a test starts). */
    public static int freePort() throws IOException {
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            return probe.getLocalPort();
        }
    }

    /** A Python script a test runs (unbuffered output, stderr merged into stdout). */
    public static final class Script implements AutoCloseable {
        private final Process process;
        private final java.io.BufferedReader out;

        private Script(Process process) {
            this.process = process;
            this.out = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        }

        /** Writes {@code source} to {@code dir}/{@code name} and runs it with {@code args}. */
        public static Script start(Path dir, String name, String source, String... args) throws IOException {
            Path file = dir.resolve(name);
            Files.writeString(file, source);
            java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(PYTHON, "-u", file.toString()));
            cmd.addAll(java.util.List.of(args));
            return new Script(new ProcessBuilder(cmd).redirectErrorStream(true).start());
        }

        /** Reads output lines up to {@code line}; fails with what came before when the script ends first. */
        public void awaitLine(String line) throws IOException {
            StringBuilder seen = new StringBuilder();
            String l;
            while ((l = out.readLine()) != null) {
                if (l.equals(line)) {
                    return;
                }
                seen.append(l).append('\n');
            }
            throw new AssertionError("the Python script ended before printing " + line + ":\n" + seen);
        }

        /** The next output line (null at the end). */
        public String nextLine() throws IOException {
            return out.readLine();
        }

        /** Waits for the script to end with exit code 0 and returns the rest of its output. */
        public String finish() throws IOException, InterruptedException {
            StringBuilder rest = new StringBuilder();
            String l;
            while ((l = out.readLine()) != null) {
                rest.append(l).append('\n');
            }
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                throw new AssertionError("the Python script did not end:\n" + rest);
            }
            if (process.exitValue() != 0) {
                throw new AssertionError("the Python script failed (exit " + process.exitValue() + "):\n" + rest);
            }
            return rest.toString();
        }

        /** Closes its stdin (a script serving until then ends) and kills it if it does not end soon. */
        @Override
        public void close() throws IOException, InterruptedException {
            try {
                process.getOutputStream().close();
            } catch (IOException ignored) {
                // it ended already
            }
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }

    private static String probe() {
        if (!Files.isExecutable(Path.of(PYTHON))) {
            return "no " + PYTHON + " (apt-get install python3-torch)";
        }
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", "import torch.distributed as d; assert d.is_available(); print(d.TCPStore)")
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                return PYTHON + " cannot import torch.distributed (apt-get install python3-torch): " + out.strip();
            }
            return null;
        } catch (IOException e) {
            return PYTHON + " failed: " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while probing " + PYTHON;
        }
    }
}
