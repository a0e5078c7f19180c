package org.jccl.cli.perf;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.jccl.internal.WarmupSetting;

/**
 * Runs the sweep of a {@link PerfConfig} on one rank of a communicator, as nccl-tests does: for
 * each collective, type, operator and root, warm up at the largest and the smallest size, then
 * for each size and each placement (out of place, in place) run one untimed collective (with
 * {@link #settle(double)}: untimed collectives until the JIT has compiled them; a JVM measured
 * right after a change of size can measure its recompilation), a barrier, {@code iters} timed collectives, and with {@code -c 1} one
 * checked collective on fresh data. Each rank's mean time and wrong count are gathered (through the communicator itself) so
 * every rank ends with the same rows: the time of a cell is the largest of the ranks' means and
 * its wrong count the sum over ranks.
 *
 * <p>Only the rank given an output stream prints (the header, the table and the footer).
 */
public final class PerfRunner {
    /** Work units of one measurement beyond its bytes, so the ETA counts fixed costs of small sizes. */
    private static final double FIXED_WORK = 64 * 1024;
    /** Bytes of one rank's line of the header, gathered from every rank. */
    private static final int DESCRIPTION_BYTES = 256;

    private final Communicator comm;
    private final PerfMemory mem;
    private final PerfConfig cfg;
    private final PrintStream out;
    private final Progress progress;
    private final int rank;
    private final int ranks;
    private final List<Row> rows = new ArrayList<>();
    private final List<Work> pending = new ArrayList<>();
    private double doneWork;
    private double totalWork;

    /**
     * A runner for this rank.
     *
     * @param comm     the communicator (every rank of it runs the same config)
     * @param mem      where buffers live
     * @param cfg      what to measure
     * @param out      where to print the table, or null on ranks that do not print
     * @param progress the progress line (off on ranks that do not print)
     */
    public PerfRunner(Communicator comm, PerfMemory mem, PerfConfig cfg, PrintStream out, Progress progress) {
        this.comm = comm;
        this.mem = RegisteredMemory.ifRequested(comm, mem);
        this.cfg = cfg;
        this.out = out;
        this.progress = progress;
        this.rank = comm.rank();
        this.ranks = comm.size();
        if (cfg.root() >= ranks) {
            throw new IllegalArgumentException("-r " + cfg.root() + " is not a rank of this job: it has " + ranks
                    + " ranks (0.." + (ranks - 1) + "); give -r 0.." + (ranks - 1) + " or -r all");
        }
    }

    /** Captures a block of calls into a CUDA graph (jccl perf -G); null without graphs. */
    private Graphs graphs;

    /** A CUDA graph of captured iterations, launched as a whole. */
    public interface Replay extends AutoCloseable {
        /** Launches the graph {@code times} times back to back and waits until the last launch finished. */
        void launch(int times);

        /** Releases the graph. */
        @Override
        void close();
    }

    /** What -G needs from the backend: capture what {@code body} issues into a graph. */
    public interface Graphs {
        /** Captures the calls {@code body} makes (asynchronous ones; they complete once captured). */
        Replay capture(Runnable body);
    }

    /** Whether the timed loops and the check run through CUDA graphs (-G with a backend that has them). */
    private boolean graphed() {
        return graphs != null && cfg.graphLaunches() > 0;
    }

    /**
     * Times {@code -n} iterations captured into one CUDA graph and launched {@link
     * PerfConfig#graphLaunches()} times (nccl-tests' -G), and checks through a graph too. Returns
     * this runner.
     */
    public PerfRunner graphs(Graphs g) {
        this.graphs = g;
        return this;
    }

    private double settleSeconds;
    /** Seconds of the first call of the size and placement {@link #time} timed last. */
    private double firstSeconds;
    /** Whether {@link #time} times every call for {@link ToSteady} (blocking runs only). */
    private boolean toSteady;
    /** {@link ToSteady#seconds} of the size and placement {@link #time} timed last; NaN when not measured. */
    private double toSteadySeconds = Double.NaN;
    /**
     * Doubles each rank contributes per size: {time, wrong} out of place and in place, then the two
     * first calls, then the two times to steady state.
     */
    private static final int STATS = 8;

    /**
     * Before timing each size and placement, runs it untimed until the JIT has compiled it, for at
     * most {@code seconds} (0, the default: no such wait; see {@link #settle(Launch, Buffer,
     * MemorySegment)}). Returns this runner.
     */
    public PerfRunner settle(double seconds) {
        this.settleSeconds = seconds;
        return this;
    }

    /**
     * Times every call of the timed loops (blocking runs, -z 1) and reports each size's time to
     * steady state ({@link ToSteady}). Returns this runner.
     */
    public PerfRunner toSteady(boolean on) {
        this.toSteady = on;
        return this;
    }

    /**
     * The "Using devices" lines: one per rank, gathered from every rank (collective: every rank
     * calls it). Returns the text on every rank.
     *
     * @param describe this rank's description, e.g. "Pid 1234 on host device cpu"
     */
    public String devices(String describe) {
        byte[] mine = describe.getBytes(StandardCharsets.UTF_8);
        Buffer send = mem.allocate(DataType.UINT8, DESCRIPTION_BYTES);
        Buffer recv = mem.allocate(DataType.UINT8, (long) DESCRIPTION_BYTES * ranks);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment stage = arena.allocate((long) DESCRIPTION_BYTES * ranks);
            MemorySegment.copy(mine, 0, stage, ValueLayout.JAVA_BYTE, 0, Math.min(mine.length, DESCRIPTION_BYTES - 1));
            mem.upload(stage, send);
            comm.allGather(send, recv);
            mem.download(recv, stage);
            StringBuilder sb = new StringBuilder();
            for (int r = 0; r < ranks; r++) {
                MemorySegment one = stage.asSlice((long) r * DESCRIPTION_BYTES, DESCRIPTION_BYTES);
                // Bytes from another rank are only ever read as text, up to the first zero byte.
                long len = 0;
                while (len < DESCRIPTION_BYTES && one.get(ValueLayout.JAVA_BYTE, len) != 0) {
                    len++;
                }
                String text = new String(one.asSlice(0, len).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
                sb.append(String.format(Locale.ROOT, "#  Rank %2d Group %2d %s%n", r, 0, text));
            }
            return sb.toString();
        } finally {
            mem.free(send);
            mem.free(recv);
        }
    }

    /** Runs the whole sweep and returns its rows (the same on every rank). */
    public List<Row> run() {
        List<Long> sizes = cfg.sizes();
        for (Collective c : cfg.collectives()) {
            totalWork += (double) cfg.types().size() * cfg.opsFor(c).size() * cfg.roots(c, ranks).length
                    * sizes.stream().mapToDouble(s -> s + FIXED_WORK).sum();
        }
        for (Collective c : cfg.collectives()) {
            if (out != null) {
                if (cfg.collectives().size() > 1) {
                    out.println("#");
                    out.println("# Collective: " + c.cliName());
                }
                out.print(Table.columns());
                out.flush();
            }
            for (DataType t : cfg.types()) {
                for (ReduceOp op : cfg.opsFor(c)) {
                    for (int root : cfg.roots(c, ranks)) {
                        group(c, t, op, root, sizes);
                    }
                }
            }
        }
        progress.clear();
        return List.copyOf(rows);
    }

    private void group(Collective c, DataType t, ReduceOp op, int root, List<Long> sizes) {
        int ts = t.byteSize();
        Collective.Counts most = c.counts(cfg.maxBytes(), ts, ranks);
        long elems = Math.max(most.send(), most.recv());
        Buffer send = mem.allocate(t, elems);
        Buffer recv = null;
        Buffer stats = null;
        try (Arena arena = Arena.ofConfined()) {
            recv = mem.allocate(t, elems);
            stats = mem.allocate(DataType.FLOAT64, (long) STATS * (ranks + 1));
            MemorySegment staging = arena.allocate(Math.max(elems * ts, 8L * STATS * ranks), 64);
            String what = c.cliName() + " " + t.shortName() + (op == null ? "" : " " + op.shortName())
                    + (root >= 0 ? " root " + root : "");
            warmOwnCode(c, t, op, root, send, recv, staging);
            for (long warmBytes : new long[] {cfg.maxBytes(), cfg.minBytes()}) {
                Launch[] w = {new Launch(c, c.counts(warmBytes, ts, ranks), false, send, recv, op, root),
                    new Launch(c, c.counts(warmBytes, ts, ranks), true, send, recv, op, root)};
                for (int i = 0; i < cfg.warmup(); i++) {
                    // Warm up the way the timed loop runs (-z 1: the blocking calls), both placements,
                    // with the barriers that start each timed loop: a JIT compiles what it saw, and a
                    // path first taken after the warm-up (another buffer, the barrier's empty
                    // messages) throws compiled code away in the middle of a measurement.
                    Launch l = w[i & 1];
                    if (cfg.blocking()) {
                        l.run();
                    } else {
                        l.start(pending);
                    }
                    if ((i & 7) == 7) {
                        awaitPending();
                        comm.barrier();
                    }
                }
                awaitPending();
                comm.barrier();
            }
            gather(new double[STATS], stats, staging); // and the exchange of the results, once
            for (int i = 0; i < sizes.size(); i++) {
                long bytes = sizes.get(i);
                Collective.Counts k = c.counts(bytes, ts, ranks);
                progress.update(what, i + 1, sizes.size(), doneWork, totalWork);
                TestData data = cfg.check() ? new TestData(t, c.reduces() ? op : null, ranks, cfg.seed() + bytes) : null;
                double[] mine = new double[STATS];
                for (int placement = 0; placement < 2; placement++) {
                    boolean inPlace = placement == 1;
                    Launch launch = new Launch(c, k, inPlace, send, recv, op, root);
                    mine[placement * 2] = time(launch, data, staging, stats);
                    mine[4 + placement] = firstSeconds;
                    mine[6 + placement] = toSteadySeconds;
                    mine[placement * 2 + 1] = data == null ? Measurement.NOT_CHECKED
                            : check(launch, data, staging);
                }
                rows.add(row(c, t, op, root, k, gather(mine, stats, staging)));
                doneWork += bytes + FIXED_WORK;
                if (out != null) {
                    progress.clear();
                    out.println(Table.row(rows.getLast()));
                    out.flush();
                }
            }
        } finally {
            mem.free(send);
            if (recv != null) {
                mem.free(recv);
            }
            if (stats != null) {
                mem.free(stats);
            }
        }
    }

    /** Largest call, in bytes, whose correctness check {@link #warmOwnCode} runs. */
    static final long OWN_WARM_BYTES = 256 << 10;
    /** Fewest rounds {@link #warmOwnCode} runs. */
    static final int OWN_WARM_MIN_ROUNDS = 8;
    /** Rows {@link #warmOwnCode} formats (and throws away) per round. */
    static final int OWN_WARM_ROWS = 40;
    /** A stretch in which the JIT did nothing that counts as a quiet JIT, in milliseconds. */
    static final long JIT_QUIET_MILLIS = 40;
    /**
     * Longest time all of a run's {@link #warmOwnCode} may take beyond their {@value
     * #OWN_WARM_MIN_ROUNDS} rounds each, in milliseconds, spent by the first groups (a cold JVM on 2
     * cores compiles the check and the row format for 1-2 s); a sweep of hundreds of groups (every
     * type, operator and root) then runs two rounds of the check per group and does not wait. None
     * with {@code JCCL_WARMUP=0}: no time spent warming anything (the test suites).
     */
    static final long OWN_WARM_BUDGET_MILLIS = 3000;
    /** What is left of {@link #OWN_WARM_BUDGET_MILLIS}, in nanoseconds. */
    private long ownWarmBudgetNanos = WarmupSetting.seconds() > 0 ? OWN_WARM_BUDGET_MILLIS * 1_000_000 : 0;

    /**
     * Compiles this tool's own code before a group's first collective: rounds of the correctness
     * check's data and comparison loops of this collective, type and operator (both placements, up
     * to {@value #OWN_WARM_BYTES} bytes, results half right so that the comparison takes both ways)
     * and of the table's row format, until the JIT has done nothing for {@value
     * #JIT_QUIET_MILLIS} ms, then a sleep until it is ({@value #OWN_WARM_MIN_ROUNDS} rounds at
     * least; beyond them only what is left of the run's {@link #OWN_WARM_BUDGET_MILLIS}; once that
     * is spent, two rounds of the check alone). Before, the JIT compiled them while the first sizes
     * were timed, and on a machine with few cores its compiler threads took the CPU of a rank in the
     * middle of a collective: first calls of 2-10 ms and timed rows of 150-600 us at 8 B-64 KiB on 2
     * cores. No collective runs here and the communicator is not touched: the library is exactly as
     * cold as before.
     */
    private void warmOwnCode(Collective c, DataType t, ReduceOp op, int root, Buffer send, Buffer recv,
                             MemorySegment staging) {
        Collective.Counts k = c.counts(Math.min(cfg.maxBytes(), OWN_WARM_BYTES), t.byteSize(), ranks);
        TestData data = cfg.check() ? new TestData(t, c.reduces() ? op : null, ranks, cfg.seed()) : null;
        String opName = op == null ? "none" : op.shortName();
        long start = System.nanoTime();
        long deadline = start + ownWarmBudgetNanos;
        // Once the budget is spent (a sweep of many groups), two rounds of the check, and no rows
        boolean spent = ownWarmBudgetNanos == 0;
        int minRounds = spent ? 2 : OWN_WARM_MIN_ROUNDS;
        int rows = spent ? 0 : OWN_WARM_ROWS;
        long compiled = WarmupSetting.jitActivity();
        long quietSince = start;
        long chars = 0;
        for (int round = 1; ; round++) {
            for (int placement = 0; data != null && placement < 2; placement++) {
                Launch launch = new Launch(c, k, placement == 1, send, recv, op, root);
                if (launch.checkable()) {
                    launch.initialize(data, staging);
                    launch.writeEveryOtherExpected(data, staging);
                    launch.verify(data, staging); // half right, half not: the count is not used
                }
            }
            for (int i = 0; i < rows; i++) {
                chars += Table.row(warmRow(c, t, opName, root, round * OWN_WARM_ROWS + i)).length();
            }
            long now = System.nanoTime();
            long total = WarmupSetting.jitActivity();
            if (total != compiled) {
                compiled = total;
                quietSince = now;
            }
            if (round >= minRounds && (now - quietSince >= JIT_QUIET_MILLIS * 1_000_000 || now >= deadline)) {
                break;
            }
        }
        if (rows > 0 && chars == 0) {
            throw new IllegalStateException("empty table rows");
        }
        awaitQuietJit(deadline, compiled, quietSince); // the quiet stretch the rounds began goes on
        ownWarmBudgetNanos = Math.max(0, ownWarmBudgetNanos - (System.nanoTime() - start));
    }

    /** A made-up row {@code i} whose figures span the magnitudes, checks and first calls of real ones. */
    private static Row warmRow(Collective c, DataType t, String op, int root, int i) {
        double us = 0.37 * Math.pow(10, i % 7);
        long bytes = 1L << (i % 31);
        Measurement oop = new Measurement(us, bytes / us / 1e3, 2 * bytes / us / 1e3, i % 3 == 0 ? Measurement.NOT_CHECKED
                : i % 5, i % 4 == 0 ? Double.NaN : us * 3.1);
        Measurement ip = new Measurement(us * 1.7, bytes / us / 2e3, bytes / us / 1e3, i % 2, us * 11.3);
        return new Row(c.cliName(), t.shortName(), op, root, bytes, bytes / t.byteSize(), oop, i % 9 == 0 ? null : ip);
    }

    /**
     * Sleeps until the JIT has done nothing for {@value #JIT_QUIET_MILLIS} ms (no compiler thread
     * ran: a compilation still running counts, see {@link WarmupSetting#jitActivity}) or until
     * {@code deadline} ({@link System#nanoTime}), counting the stretch from {@code quietSince}, when
     * the reading was {@code last}; returns at once where the JVM cannot tell ({@code last} < 0).
     */
    private static void awaitQuietJit(long deadline, long last, long quietSince) {
        if (last < 0) {
            return;
        }
        while (true) {
            long now = System.nanoTime();
            if (now - quietSince >= JIT_QUIET_MILLIS * 1_000_000 || now >= deadline) {
                return;
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            long total = WarmupSetting.jitActivity();
            if (total != last) {
                last = total;
                quietSince = System.nanoTime();
            }
        }
    }

    /** Mean seconds of one collective on this rank. */
    private double time(Launch launch, TestData data, MemorySegment staging, Buffer stats) {
        toSteadySeconds = Double.NaN;
        if (data != null) {
            launch.initialize(data, staging);
        }
        // The first call of a size and placement is timed on its own and reported (the "first
        // call" columns): no untimed calls beyond -w hide a cold library. The barrier keeps rank
        // 0's printing of the last row out of the other ranks' first call.
        comm.barrier();
        long f0 = System.nanoTime();
        runOnce(launch);
        firstSeconds = (System.nanoTime() - f0) / 1e9;
        settle(launch, stats, staging);
        if (graphed()) {
            return timeGraph(launch);
        }
        comm.barrier();
        long t0 = System.nanoTime();
        if (cfg.blocking() && toSteady) {
            // --to-steady: every call timed on its own (two clock readings more per call)
            long[] nanos = new long[cfg.iters()];
            for (int i = 0; i < cfg.iters(); i++) {
                long a = System.nanoTime();
                launch.run();
                nanos[i] = System.nanoTime() - a;
            }
            long end = System.nanoTime();
            toSteadySeconds = ToSteady.seconds((long) (firstSeconds * 1e9), nanos, cfg.iters());
            return (end - t0) / 1e9 / cfg.iters();
        }
        loop(launch, cfg.iters());
        return (System.nanoTime() - t0) / 1e9 / cfg.iters();
    }

    /**
     * The timed loop: {@code n} calls. Blocking, each call completes before the next is issued; no
     * barrier in between (as MPI and nccl-tests time their loops), so the mean is the latency of
     * the collective itself. Async, all {@code n} are issued, then awaited. {@link #settle} runs
     * this same method: the JIT compiles this loop, with the calls inlined in it, before it is
     * timed (a loop of its own in the timing alone ran interpreted at first, and the first size
     * timed in a JVM read 2-5x the next ones).
     */
    private void loop(Launch launch, int n) {
        if (cfg.blocking()) {
            launch.run(n);
        } else {
            for (int i = 0; i < n; i++) {
                launch.start(pending);
            }
            awaitPending();
        }
    }

    /**
     * nccl-tests' -G: the {@code -n} iterations captured into one graph (not timed, nor is the
     * instantiation), then the graph launched -G times from a barrier on; mean seconds per iteration.
     */
    private double timeGraph(Launch launch) {
        try (Replay g = graphs.capture(() -> {
            for (int i = 0; i < cfg.iters(); i++) {
                launch.start(pending);
            }
        })) {
            awaitPending(); // captured works are complete once captured
            comm.barrier();
            long t0 = System.nanoTime();
            g.launch(cfg.graphLaunches());
            return (System.nanoTime() - t0) / 1e9 / cfg.iters() / cfg.graphLaunches();
        }
    }

    /**
     * Shortest untimed run of one size and placement before it is timed (with {@link
     * #settle(double)}): after a change of size the JIT, the TCP stacks and the scheduler all
     * adapt: the first tens of milliseconds at a new size run slower even once no compilation
     * finishes any more (docs/BENCHMARKS.md, Across hosts).
     */
    static final double SETTLE_MIN_SECONDS = 0.25;
    /**
     * The same for messages of 1 MiB and more: there, after a change of size, the placement timed
     * first (whichever it was) still ran slower than the second after {@value #SETTLE_MIN_SECONDS}
     * s of untimed calls, and as fast after this long (docs/BENCHMARKS.md, Across hosts).
     */
    static final double SETTLE_MIN_LARGE_SECONDS = 1.5;
    /** Length of one block of the warm-up that waits for the JIT. */
    static final double SETTLE_BLOCK_SECONDS = 0.02;

    /**
     * Untimed calls of this size and placement until the JIT has compiled what they run: blocks of
     * about {@value #SETTLE_BLOCK_SECONDS} s, at least {@value #SETTLE_MIN_SECONDS} s ({@value
     * #SETTLE_MIN_LARGE_SECONDS} s from 1 MiB), until one in
     * which no rank's JIT compiled anything, for at most {@link #settle(double)} seconds (0: not
     * at all). A size or placement that takes a path the
     * compiled code had not seen sends those methods back to the interpreter until they are
     * recompiled (slow on a busy machine), and a short timed loop would measure
     * that instead of the collective. The ranks agree on every block (they exchange their
     * compilation activity), so all run the same number of calls.
     */
    private void settle(Launch launch, Buffer stats, MemorySegment staging) {
        if (settleSeconds <= 0) {
            return;
        }
        double minSeconds = launch.bytes() >= 1 << 20 ? SETTLE_MIN_LARGE_SECONDS : SETTLE_MIN_SECONDS;
        boolean watch = WarmupSetting.jitActivity() >= 0;
        long t0 = System.nanoTime();
        runOnce(launch);
        double[] g = gather(stats((System.nanoTime() - t0) / 1e9, 0), stats, staging);
        int block = (int) Math.max(1, Math.min(100_000, Math.ceil(SETTLE_BLOCK_SECONDS / Math.max(g[0], 1e-9))));
        // Through the timed loop itself, in pieces of at most -n calls (async: as many in flight as timed)
        int piece = Math.max(1, Math.min(block, cfg.iters()));
        long start = System.nanoTime();
        while (true) {
            long before = watch ? WarmupSetting.jitActivity() : 0;
            for (int done = 0; done < block; done += piece) {
                loop(launch, piece);
            }
            boolean busy = watch && WarmupSetting.jitActivity() != before;
            double[] r = gather(stats((System.nanoTime() - start) / 1e9, busy ? 1 : 0), stats, staging);
            if (r[1] == 0 && r[0] >= Math.min(minSeconds, settleSeconds) || r[0] > settleSeconds) {
                return;
            }
        }
    }

    private long check(Launch launch, TestData data, MemorySegment staging) {
        if (!launch.checkable()) {
            return Measurement.NOT_CHECKED;
        }
        launch.initialize(data, staging);
        if (graphed()) {
            // As nccl-tests: the checked call runs through a graph of its own, launched once.
            try (Replay g = graphs.capture(() -> launch.start(pending))) {
                awaitPending();
                g.launch(1);
            }
        } else {
            runOnce(launch);
        }
        return launch.verify(data, staging);
    }

    private void runOnce(Launch launch) {
        if (cfg.blocking()) {
            launch.run();
        } else {
            launch.start(pending);
            awaitPending();
        }
    }

    private void awaitPending() {
        for (Work w : pending) {
            w.await();
        }
        pending.clear();
    }

    /**
     * Gathers every rank's {time, wrong} x 2, first-call times x 2 and times to steady state x 2,
     * and returns {max time, sum wrong} x 2, the largest first-call times and the largest times to
     * steady state (not reached on any rank: not reached). {@code stats} holds {@value #STATS} x (ranks + 1)
     * doubles: this rank's, then everyone's.
     */
    private double[] gather(double[] mine, Buffer stats, MemorySegment staging) {
        MemorySegment.copy(mine, 0, staging, ValueLayout.JAVA_DOUBLE, 0, STATS);
        Buffer one = stats.slice(0, STATS);
        Buffer all = stats.slice(STATS, (long) STATS * ranks);
        mem.upload(staging, one);
        comm.allGather(one, all);
        mem.download(all, staging);
        double[] every = staging.asSlice(0, 8L * STATS * ranks).toArray(ValueLayout.JAVA_DOUBLE);
        double[] result = new double[STATS];
        for (int p = 0; p < 2; p++) {
            boolean checked = true;
            for (int r = 0; r < ranks; r++) {
                result[p * 2] = Math.max(result[p * 2], every[r * STATS + p * 2]);
                result[4 + p] = Math.max(result[4 + p], every[r * STATS + 4 + p]);
                // the slowest rank's; NaN (not measured) or not reached on any rank wins
                double s = every[r * STATS + 6 + p];
                result[6 + p] = r == 0 ? s : Double.isNaN(result[6 + p]) || Double.isNaN(s) ? Double.NaN
                        : result[6 + p] < 0 || s < 0 ? ToSteady.NOT_REACHED : Math.max(result[6 + p], s);
                double w = every[r * STATS + p * 2 + 1];
                if (w < 0) {
                    checked = false;
                } else {
                    result[p * 2 + 1] += w;
                }
            }
            if (!checked) {
                result[p * 2 + 1] = Measurement.NOT_CHECKED;
            }
        }
        return result;
    }

    /** This rank's {@value #STATS} doubles for {@link #gather} with only the first two set. */
    private static double[] stats(double first, double second) {
        double[] v = new double[STATS];
        v[0] = first;
        v[1] = second;
        return v;
    }

    private Row row(Collective c, DataType t, ReduceOp op, int root, Collective.Counts k, double[] g) {
        int ts = t.byteSize();
        Measurement[] m = new Measurement[2];
        for (int p = 0; p < 2; p++) {
            double sec = g[p * 2];
            double steady = g[6 + p];
            m[p] = new Measurement(sec * 1e6, c.algBw(k, ts, ranks, sec), c.busBw(k, ts, ranks, sec), (long) g[p * 2 + 1],
                    g[4 + p] * 1e6, steady < 0 ? steady : steady * 1e6);
        }
        return new Row(c.cliName(), t.shortName(), op == null ? "none" : op.shortName(), root,
                k.printedBytes(ts), k.param(), m[0], m[1]);
    }

    /**
     * One collective call bound to its buffers, out of place or in place (NCCL's conventions:
     * all-gather and gather send from block {@code rank} of the receive buffer, reduce-scatter and
     * scatter receive into it).
     */
    private final class Launch {
        private final Collective c;
        private final Collective.Counts k;
        private final boolean inPlace;
        private final Buffer s;
        private final Buffer r;
        private final Buffer cleared;
        private final ReduceOp op;
        private final int root;
        private final int next = (rank + 1) % ranks;

        /** Bytes of the larger buffer of one call. */
        long bytes() {
            return Math.max(s.byteSize(), r == null ? 0 : r.byteSize());
        }
        private final int prev = (rank - 1 + ranks) % ranks;

        Launch(Collective c, Collective.Counts k, boolean inPlace, Buffer send, Buffer recv, ReduceOp op, int root) {
            this.c = c;
            this.k = k;
            this.inPlace = inPlace;
            this.op = op;
            this.root = root;
            long block = k.param();
            if (!inPlace) {
                s = send.slice(0, k.send());
                r = recv.slice(0, k.recv());
                cleared = r;
            } else {
                // In place everything lives in the receive buffer, which holds the larger side.
                Buffer whole = recv.slice(0, Math.max(k.send(), k.recv()));
                s = switch (c) {
                    case ALLGATHER, GATHER -> recv.slice(rank * block, block);
                    default -> whole.slice(0, k.send());
                };
                r = switch (c) {
                    case REDUCESCATTER, SCATTER -> recv.slice(rank * block, block);
                    default -> whole.slice(0, k.recv());
                };
                cleared = whole;
            }
        }

        /** One blocking call. */
        void run() {
            run(1);
        }

        /**
         * Both halves at once (MPI_Sendrecv); in place, where sendRecv refuses overlapping buffers,
         * the pair of async calls the asynchronous mode issues (as nccl-tests does), awaited.
         */
        private void sendRecv() {
            if (inPlace) {
                postSendRecv(pending);
                awaitPending();
            } else {
                comm.sendRecv(s, next, r, prev);
            }
        }

        /**
         * {@code n} blocking calls, each collective's loop on its own, the buffers in locals: a
         * cold run's timed loop runs in the interpreter (20 iterations compile nothing), where a
         * dispatch per call (a switch around each call) cost about 0.1 us of an 8-byte all-reduce's
         * 0.6, which Open MPI's C driver does not pay.
         */
        void run(int n) {
            Communicator cm = comm;
            Buffer sb = s;
            Buffer rb = r;
            ReduceOp o = op;
            int rt = root;
            switch (c) {
                case ALLREDUCE -> {
                    for (int i = 0; i < n; i++) {
                        cm.allReduce(sb, rb, o);
                    }
                }
                case ALLGATHER -> {
                    for (int i = 0; i < n; i++) {
                        cm.allGather(sb, rb);
                    }
                }
                case REDUCESCATTER -> {
                    for (int i = 0; i < n; i++) {
                        cm.reduceScatter(sb, rb, o);
                    }
                }
                case BROADCAST -> {
                    for (int i = 0; i < n; i++) {
                        cm.broadcast(sb, rb, rt);
                    }
                }
                case REDUCE -> {
                    for (int i = 0; i < n; i++) {
                        cm.reduce(sb, rb, o, rt);
                    }
                }
                case ALLTOALL -> {
                    for (int i = 0; i < n; i++) {
                        cm.allToAll(sb, rb);
                    }
                }
                case GATHER -> {
                    for (int i = 0; i < n; i++) {
                        cm.gather(sb, rb, rt);
                    }
                }
                case SCATTER -> {
                    for (int i = 0; i < n; i++) {
                        cm.scatter(sb, rb, rt);
                    }
                }
                case SENDRECV -> {
                    for (int i = 0; i < n; i++) {
                        sendRecv();
                    }
                }
            }
        }

        void start(List<Work> sink) {
            switch (c) {
                case ALLREDUCE -> sink.add(comm.allReduceAsync(s, r, op));
                case ALLGATHER -> sink.add(comm.allGatherAsync(s, r));
                case REDUCESCATTER -> sink.add(comm.reduceScatterAsync(s, r, op));
                case BROADCAST -> sink.add(comm.broadcastAsync(s, r, root));
                case REDUCE -> sink.add(comm.reduceAsync(s, r, op, root));
                case ALLTOALL -> sink.add(comm.allToAllAsync(s, r));
                case GATHER -> sink.add(comm.gatherAsync(s, r, root));
                case SCATTER -> sink.add(comm.scatterAsync(s, r, root));
                case SENDRECV -> postSendRecv(sink);
            }
        }

        /** This rank's send to the next rank and receive from the previous, issued together (SendRecvGroup). */
        private void postSendRecv(List<Work> sink) {
            SendRecvGroup.issue(comm, () -> {
                sink.add(comm.sendAsync(s, next));
                sink.add(comm.recvAsync(r, prev));
            });
        }

        /** In-place send/recv sends and receives through one buffer: its result is undefined (as in nccl-tests). */
        boolean checkable() {
            return !(inPlace && c == Collective.SENDRECV);
        }

        /** Zeroes the receive side (the whole buffer in place) and writes this rank's inputs (nccl-tests' InitData). */
        void initialize(TestData data, MemorySegment staging) {
            mem.clear(cleared);
            if (k.send() > 0) {
                data.fill(staging, 0, rank, 0, k.send());
                mem.upload(staging, s);
            }
        }

        /** Wrong elements of this rank's result. */
        long verify(TestData data, MemorySegment staging) {
            boolean isRoot = rank == root;
            if ((c == Collective.REDUCE || c == Collective.GATHER) && !isRoot) {
                return 0;
            }
            long n = r.count();
            if (n == 0) {
                return 0;
            }
            mem.download(r, staging);
            DataType t = data.type();
            long wrong = 0;
            for (long i = 0; i < n; i++) {
                if (!TestData.matches(Values.get(staging, t, i), expected(data, i), tolerance(data, i))) {
                    wrong++;
                }
            }
            return wrong;
        }

        /** The correct value of element {@code i} of this rank's result. */
        private double expected(TestData data, long i) {
            long block = k.param();
            return switch (c) {
                case ALLREDUCE, REDUCE -> data.reduced(i);
                case REDUCESCATTER -> data.reduced(rank * block + i);
                case BROADCAST -> data.input(root, i);
                case ALLGATHER, GATHER -> data.input((int) (i / block), i % block);
                case ALLTOALL -> data.input((int) (i / block), rank * block + i % block);
                case SCATTER -> data.input(root, rank * block + i);
                case SENDRECV -> data.input(prev, i);
            };
        }

        /** How far element {@code i} of a correct result may be from {@link #expected}. */
        private double tolerance(TestData data, long i) {
            return switch (c) {
                case ALLREDUCE, REDUCE -> data.tolerance(i);
                case REDUCESCATTER -> data.tolerance(rank * k.param() + i);
                default -> 0;
            };
        }

        /**
         * Writes the correct result into every other element of the result buffer where the type
         * holds it exactly (the rest keeps what it held), so that a check of it takes both ways of
         * the comparison: the warm-up of the check compiles both, and the first real check does not
         * throw compiled code away.
         */
        void writeEveryOtherExpected(TestData data, MemorySegment staging) {
            long n = r.count();
            mem.download(r, staging);
            for (long i = 0; i < n; i += 2) {
                double e = expected(data, i);
                if (Values.holds(data.type(), e)) { // (an average need not be)
                    Values.put(staging, data.type(), i, e);
                }
            }
            mem.upload(staging, r);
        }
    }
}
