package org.jccl.cli;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.jccl.bootstrap.TcpStoreServer;

/**
 * {@code jccl run}: starts the rendezvous store and N processes of one command on this host, each
 * with its rank in the environment, and supervises them.
 *
 * <ul>
 *   <li>Environment of rank r: {@code JCCL_RANK=r}, {@code JCCL_WORLD_SIZE=N}, {@code
 *       JCCL_LOCAL_RANK=r}, {@code JCCL_LOCAL_WORLD_SIZE=N}, {@code JCCL_STORE=127.0.0.1:port},
 *       {@code JCCL_JOB_ID} (fresh per job) and {@code JCCL_TOKEN} (32 hex digits from {@link
 *       SecureRandom}, fresh per job; the store admits only clients that prove they know it), and
 *       {@code JCCL_STORE_SERVED=1} (rank 0 connects to the launcher's store instead of serving one).
 *       Each job has its own store on a free port, job id and token: two jobs never merge.</li>
 *   <li>Output: every line of a rank's stdout and stderr goes to the launcher's stdout and stderr
 *       prefixed with {@code [r] }, whole lines only.</li>
 *   <li>Exit: the first non-zero exit code of any rank (which rank, and its code, is printed);
 *       the other ranks are then stopped: SIGTERM to them and to every process they started,
 *       SIGKILL to whatever still runs after the grace period. 0 when every rank exits 0.</li>
 *   <li>Ctrl-C or SIGTERM of the launcher stops every rank the same way (a shutdown hook).</li>
 * </ul>
 * Reused by {@code jccl perf --ranks N}, which starts its own ranks with rank 0's output unprefixed.
 */
public final class Launcher {
    /** Most ranks one launcher starts (one host). */
    public static final int MAX_RANKS = 4096;
    /** Default time between SIGTERM and SIGKILL. */
    public static final Duration DEFAULT_GRACE = Duration.ofSeconds(5);
    /** Exit code when a rank's command cannot be started (as a shell's "command not found"). */
    public static final int CANNOT_START = 127;

    private static final SecureRandom RANDOM = new SecureRandom();

    private final int ranks;
    private final List<String> command;
    private final Map<String, String> environment = new LinkedHashMap<>();
    private Duration grace = DEFAULT_GRACE;
    private boolean plainRank0;
    private Path directory;
    private List<String> rank0Command;

    /**
     * A launcher of {@code ranks} processes of {@code command}.
     *
     * @throws IllegalArgumentException when ranks is out of 1..{@link #MAX_RANKS} or the command is empty
     */
    public Launcher(int ranks, List<String> command) {
        if (ranks < 1 || ranks > MAX_RANKS) {
            throw new IllegalArgumentException("-n is " + ranks + ": give a rank count from 1 to " + MAX_RANKS);
        }
        Objects.requireNonNull(command, "command");
        if (command.isEmpty() || command.getFirst().isBlank()) {
            throw new IllegalArgumentException("no command given: write the program and its arguments after "
                    + "the options, e.g. jccl run -n 2 -- java -cp app.jar Main");
        }
        this.ranks = ranks;
        this.command = List.copyOf(command);
    }

    /** Adds a variable to every rank's environment (the JCCL_* variables of the job win over it). */
    public Launcher environment(String name, String value) {
        environment.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
        return this;
    }

    /** Time between SIGTERM and SIGKILL when ranks are stopped. */
    public Launcher grace(Duration g) {
        if (g == null || g.isNegative()) {
            throw new IllegalArgumentException("grace is " + g + ": give a duration >= 0");
        }
        this.grace = g;
        return this;
    }

    /** Starts rank 0 with {@code rank0} instead of the command (e.g. with JVM flags of its own). */
    public Launcher rank0Command(List<String> rank0) {
        this.rank0Command = List.copyOf(rank0);
        return this;
    }

    /** Rank 0's output unprefixed (carriage returns pass through at once): for {@code jccl perf --ranks}. */
    public Launcher plainRank0(boolean plain) {
        this.plainRank0 = plain;
        return this;
    }

    /** Working directory of the ranks (default: the launcher's). */
    public Launcher directory(Path dir) {
        this.directory = dir;
        return this;
    }

    /** 32 hex digits from SecureRandom: a job token. */
    static String newToken() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /**
     * Runs the job to its end and returns its exit code. Blocks.
     *
     * @param out the launcher's stdout (ranks' stdout lines go there)
     * @param err the launcher's stderr (ranks' stderr lines and the launcher's messages go there)
     */
    public int run(PrintStream out, PrintStream err) {
        String token = newToken();
        byte[] id = new byte[6];
        RANDOM.nextBytes(id);
        String jobId = "run-" + HexFormat.of().formatHex(id);
        try (TcpStoreServer store = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), token)) {
            Map<String, String> env = new LinkedHashMap<>(environment);
            env.put("JCCL_WORLD_SIZE", Integer.toString(ranks));
            env.put("JCCL_LOCAL_WORLD_SIZE", Integer.toString(ranks));
            env.put("JCCL_STORE", "127.0.0.1:" + store.port());
            env.put("JCCL_JOB_ID", jobId);
            env.put("JCCL_TOKEN", token);
            // The launcher serves the store: rank 0 connects to it instead of serving one.
            env.put("JCCL_STORE_SERVED", "1");
            return new Job(env, out, err).run();
        }
    }

    /** Whether a process runs: alive and not a zombie (an exited process nobody reaped yet). */
    static boolean running(ProcessHandle h) {
        if (!h.isAlive()) {
            return false;
        }
        try {
            String stat = java.nio.file.Files.readString(Path.of("/proc", Long.toString(h.pid()), "stat"));
            int close = stat.lastIndexOf(')');
            return close < 0 || close + 2 >= stat.length() || stat.charAt(close + 2) != 'Z';
        } catch (IOException | RuntimeException e) {
            // No /proc (not Linux) or the process vanished meanwhile: trust isAlive.
            return h.isAlive();
        }
    }

    /** One run: the processes, their forwarders and the teardown. */
    private final class Job {
        private final Map<String, String> env;
        private final PrintStream out;
        private final PrintStream err;
        private final Process[] procs = new Process[ranks];
        private final List<Thread> forwarders = new ArrayList<>();
        private final BlockingQueue<Integer> exits = new LinkedBlockingQueue<>();
        /** Children this JVM had before the job: not ours to stop. */
        private final Set<Long> before = new java.util.HashSet<>();
        /** Every process the ranks started that was seen while stopping the job. */
        private final Set<ProcessHandle> leftovers = new LinkedHashSet<>();
        private long killAt = Long.MAX_VALUE;
        /** Set by the shutdown hook: the ranks die because the launcher was told to stop, not by failure. */
        private volatile boolean shuttingDown;

        Job(Map<String, String> env, PrintStream out, PrintStream err) {
            this.env = env;
            this.out = out;
            this.err = err;
        }

        int run() {
            Subreaper.enable();
            ProcessHandle.current().children().forEach(h -> before.add(h.pid()));
            Thread hook = new Thread(this::interrupted, "jccl-run-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            try {
                for (int r = 0; r < ranks; r++) {
                    try {
                        start(r);
                    } catch (IOException e) {
                        message("jccl run: cannot start rank " + r + " (" + String.join(" ", command) + "): "
                                + e.getMessage());
                        stop();
                        cleanUp();
                        return CANNOT_START;
                    }
                }
                int code = supervise();
                cleanUp();
                awaitForwarders();
                return code;
            } finally {
                try {
                    Runtime.getRuntime().removeShutdownHook(hook);
                } catch (IllegalStateException shuttingDown) {
                    // The hook runs or ran already.
                }
            }
        }

        private void start(int r) throws IOException {
            ProcessBuilder pb = new ProcessBuilder(r == 0 && rank0Command != null ? rank0Command : command);
            pb.environment().putAll(env);
            pb.environment().put("JCCL_RANK", Integer.toString(r));
            pb.environment().put("JCCL_LOCAL_RANK", Integer.toString(r));
            pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            if (directory != null) {
                pb.directory(directory.toFile());
            }
            Process p = pb.start();
            procs[r] = p;
            String prefix = plainRank0 && r == 0 ? "" : "[" + r + "] ";
            forward(p.getInputStream(), out, prefix, "out", r);
            forward(p.getErrorStream(), err, prefix, "err", r);
            p.onExit().thenRun(() -> exits.add(r));
        }

        private void forward(java.io.InputStream in, PrintStream target, String prefix, String what, int r) {
            if (what.equals("err")) {
                target = new LastLine(target, lastErrorLines, r);
            }
            Thread t = new Thread(new LineForwarder(in, target, prefix, true), "jccl-run-" + what + "-" + r);
            t.setDaemon(true);
            t.start();
            forwarders.add(t);
            if (what.equals("err")) {
                errForwarders.put(r, t);
            }
        }

        /** Each rank's stderr forwarder: drained before the launcher says why a rank failed. */
        private final java.util.concurrent.ConcurrentHashMap<Integer, Thread> errForwarders =
                new java.util.concurrent.ConcurrentHashMap<>();

        /**
         * Waits up to {@code millis} for rank {@code r}'s stderr to reach its end (the rank has
         * exited): its last lines may still be in the pipe when the exit is seen. A child of the
         * rank that keeps the pipe open only costs the wait.
         */
        private void drainErr(int r, long millis) {
            Thread t = errForwarders.get(r);
            if (t != null) {
                try {
                    t.join(millis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        /** The last line each rank wrote to stderr: the launcher's "why" when it fails. */
        private final java.util.concurrent.ConcurrentHashMap<Integer, String> lastErrorLines =
                new java.util.concurrent.ConcurrentHashMap<>();

        /** Waits for every rank; returns the first non-zero exit code, or 0. */
        private int supervise() {
            int code = 0;
            int left = ranks;
            while (left > 0) {
                Integer r;
                try {
                    r = exits.poll(50, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    stop();
                    killRemaining();
                    return code == 0 ? 130 : code;
                }
                if (r == null) {
                    if (System.nanoTime() >= killAt) {
                        killRemaining();
                    }
                    continue;
                }
                left--;
                int exit = procs[r].exitValue();
                if (exit != 0 && code == 0) {
                    code = exit;
                    if (shuttingDown) {
                        continue;
                    }
                    List<Integer> running = new ArrayList<>();
                    for (int i = 0; i < ranks; i++) {
                        if (procs[i].isAlive()) {
                            running.add(i);
                        }
                    }
                    drainErr(r, 500);
                    String why = lastErrorLines.get(r);
                    message("jccl run: rank " + r + " exited with code " + exit + describe(exit)
                            + (why == null ? "" : ": " + why)
                            + (running.isEmpty() ? "" : "; stopping ranks " + running));
                    stop();
                }
            }
            return code;
        }

        private String describe(int exit) {
            return exit > 128 && exit < 160 ? " (signal " + (exit - 128) + ")" : "";
        }

        /**
         * What the ranks started: descendants of running ranks, and orphans the subreaper adopted
         * (children of this JVM that are neither ranks nor older than the job), with theirs.
         */
        private synchronized void collectLeftovers() {
            Set<Long> rankPids = new java.util.HashSet<>();
            for (Process p : procs) {
                if (p != null) {
                    rankPids.add(p.pid());
                    if (p.isAlive()) {
                        p.descendants().forEach(leftovers::add);
                    }
                }
            }
            ProcessHandle.current().children()
                    .filter(h -> !before.contains(h.pid()) && !rankPids.contains(h.pid()))
                    .forEach(h -> {
                        leftovers.add(h);
                        h.descendants().forEach(leftovers::add);
                    });
        }

        /** SIGTERM to every running rank and every process it started; SIGKILL follows after the grace period. */
        private synchronized void stop() {
            signalAll(false);
            if (killAt == Long.MAX_VALUE) {
                killAt = System.nanoTime() + grace.toNanos();
            }
        }

        /** SIGKILL to every rank and leftover still running. */
        private synchronized void killRemaining() {
            signalAll(true);
        }

        /** SIGTERM, or SIGKILL when {@code kill}, to every running rank and leftover. */
        private synchronized void signalAll(boolean kill) {
            // Children first seen now: once their parent is gone only the subreaper still finds them.
            collectLeftovers();
            for (Process p : procs) {
                if (p != null && p.isAlive()) {
                    if (kill) {
                        p.destroyForcibly();
                    } else {
                        p.destroy();
                    }
                }
            }
            for (ProcessHandle h : leftovers) {
                if (!running(h)) {
                    continue;
                }
                if (kill) {
                    h.destroyForcibly();
                } else {
                    h.destroy();
                }
            }
        }

        /**
         * After the ranks: stops what they left running (SIGTERM, SIGKILL after the grace
         * period) and reaps the orphans the subreaper adopted, so nothing outlives the job.
         */
        private void cleanUp() {
            collectLeftovers();
            if (leftovers.stream().anyMatch(Launcher::running)) {
                stop();
                while (leftovers.stream().anyMatch(Launcher::running) && System.nanoTime() < killAt) {
                    pause(20);
                }
                killRemaining();
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            do {
                collectLeftovers();
                boolean pending = false;
                for (ProcessHandle h : leftovers) {
                    if (h.isAlive() && !Subreaper.reap(h.pid()) && running(h)) {
                        pending = true;
                    }
                }
                if (!pending) {
                    return;
                }
                pause(20);
            } while (System.nanoTime() < deadline);
        }

        private void pause(long millis) {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /** The shutdown hook (Ctrl-C, SIGTERM): stop every rank, wait the grace period, kill the rest. */
        private void interrupted() {
            shuttingDown = true;
            stop();
            long deadline = System.nanoTime() + grace.toNanos();
            for (Process p : procs) {
                if (p == null) {
                    continue;
                }
                long left = deadline - System.nanoTime();
                try {
                    if (left <= 0 || !p.waitFor(left, TimeUnit.NANOSECONDS)) {
                        break;
                    }
                } catch (InterruptedException e) {
                    break;
                }
            }
            killRemaining();
            cleanUp();
        }

        /**
         * Waits for the ranks' output to drain. A process a rank left running in the background
         * may hold the pipe open; its output is not waited for beyond a second.
         */
        private void awaitForwarders() {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            for (Thread t : forwarders) {
                long left = deadline - System.nanoTime();
                try {
                    t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        private void message(String text) {
            synchronized (err) {
                err.println(text);
                err.flush();
            }
        }
    }

    /** Passes bytes through and remembers the last complete line (without its [rank] prefix). */
    static final class LastLine extends PrintStream {
        private final java.util.Map<Integer, String> lines;
        private final int rank;

        LastLine(PrintStream target, java.util.Map<Integer, String> lines, int rank) {
            super(target, true, java.nio.charset.StandardCharsets.UTF_8);
            this.lines = lines;
            this.rank = rank;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            super.write(b, off, len);
            String text = new String(b, off, len, java.nio.charset.StandardCharsets.UTF_8);
            for (String line : text.split("\n")) {
                String l = line.replaceFirst("^\\[\\d+\\] ", "").strip();
                if (!l.isEmpty() && !l.startsWith("at ") && !l.startsWith("...")) {
                    lines.put(rank, l.length() > 400 ? l.substring(0, 400) + "..." : l);
                }
            }
        }
    }
}
