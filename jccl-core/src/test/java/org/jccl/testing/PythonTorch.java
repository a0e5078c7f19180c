package org.jccl.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Whether this machine's Python imports torch.distributed, for {@link Require}'s {@code torch}:
 * {@code /usr/bin/python3} (Debian's python3-torch), or the interpreter named by {@code
 * jccl.test.python} / {@code JCCL_TEST_PYTHON} (e.g. a torch 2.x virtual environment).
 */
public final class PythonTorch {
    /** The interpreter the torch tests run. */
    public static final String PYTHON = interpreter();

    private static volatile String cached;
    private static volatile String cachedCuda;
    private static volatile String cachedVersion;

    private static String interpreter() {
        String v = System.getProperty("jccl.test.python");
        if (v == null || v.isBlank()) {
            v = System.getenv("JCCL_TEST_PYTHON");
        }
        return v == null || v.isBlank() ? "/usr/bin/python3" : v.strip();
    }

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

    /**
     * Why torch cannot run NCCL process groups on {@code gpus} GPUs here, or null when it can
     * (checked once): torch with CUDA and NCCL, and that many GPUs visible to it.
     */
    public static String cudaUnavailable(int gpus) {
        String base = unavailable();
        if (base != null) {
            return base;
        }
        String c = cachedCuda;
        if (c == null) {
            c = run("import torch, torch.distributed as d; assert d.is_nccl_available(), 'no NCCL in torch'; "
                    + "print(torch.cuda.device_count())");
            cachedCuda = c;
        }
        if (!c.startsWith("OK ")) {
            return PYTHON + ": torch has no CUDA/NCCL: " + c;
        }
        int n = Integer.parseInt(c.substring(3).strip());
        return n >= gpus ? null : "torch sees " + n + " GPUs, the test needs " + gpus;
    }

    /** torch.__version__ of {@link #PYTHON}, or null when torch is unavailable (asked once). */
    public static String version() {
        if (unavailable() != null) {
            return null;
        }
        String v = cachedVersion;
        if (v == null) {
            v = run("import torch; print(torch.__version__)");
            cachedVersion = v;
        }
        return v.startsWith("OK ") ? v.substring(3) : null;
    }

    /** Runs a one-line program: "OK " and the last line it printed, or why it failed. */
    private static String run(String program) {
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", program).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            String[] lines = out.strip().split("\n");
            String last = lines[lines.length - 1].strip(); // torch may log before it
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                return "failed: " + last;
            }
            return "OK " + last;
        } catch (IOException e) {
            return "failed: " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while running " + PYTHON;
        }
    }

    /**
     * Starts torch's own TCPStore server on 127.0.0.1:{@code port} (made with {@code worldSize}, not
     * waiting for workers) and returns once it listens; it serves until the script is closed.
     */
    public static Script startTorchServer(Path dir, int port, int worldSize) throws IOException {
        Script s = Script.start(dir, "torch-server.py", """
                import sys, datetime
                import torch.distributed as d
                s = d.TCPStore("127.0.0.1", int(sys.argv[1]), int(sys.argv[2]), True, datetime.timedelta(seconds=120),
                               wait_for_workers=False)
                print("READY", flush=True)
                sys.stdin.read()  # serve until the test closes stdin
                """, Integer.toString(port), Integer.toString(worldSize));
        s.awaitLine("READY");
        return s;
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

        /**
         * Everything the script printed from here on, for a failure message: closes it (killing it
         * when it does not end within 10 s), then reads what is left.
         */
        public String drain() {
            StringBuilder rest = new StringBuilder();
            try {
                closeStdin();
                long end = System.nanoTime() + 10_000_000_000L;
                while (System.nanoTime() < end) {
                    while (out.ready()) {
                        rest.append(out.readLine()).append('\n');
                    }
                    if (!process.isAlive()) {
                        String l;
                        while ((l = out.readLine()) != null) {
                            rest.append(l).append('\n');
                        }
                        return rest.toString();
                    }
                    Thread.sleep(50);
                }
                rest.append("(still running after 10 s: killed)\n");
                process.destroyForcibly();
            } catch (IOException | InterruptedException e) {
                rest.append("(reading its output failed: ").append(e).append(")\n");
            }
            return rest.toString();
        }

        /** Closes its stdin: a script serving until then ends. */
        private void closeStdin() {
            try {
                process.getOutputStream().close();
            } catch (IOException ignored) {
                // it ended already
            }
        }

        /** Closes its stdin (a script serving until then ends) and kills it if it does not end soon. */
        @Override
        public void close() throws IOException, InterruptedException {
            closeStdin();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }

    private static String probe() {
        if (PYTHON.contains("/") && !Files.isExecutable(Path.of(PYTHON))) {
            return "no " + PYTHON + " (apt-get install python3-torch)";
        }
        String r = run("import torch.distributed as d; assert d.is_available(); print(d.TCPStore)");
        return r.startsWith("OK ") ? null
                : PYTHON + " cannot import torch.distributed (apt-get install python3-torch): " + r;
    }
}
