package org.jccl.cli;

import org.jccl.internal.Json;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.Jccl;
import org.jccl.JcclException;
import org.jccl.Options;
import org.jccl.ReduceOp;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.cli.perf.Collective;
import org.jccl.cli.perf.CudaGraphs;
import org.jccl.cli.perf.CudaMemory;
import org.jccl.cli.perf.HostMemory;
import org.jccl.cli.perf.PerfConfig;
import org.jccl.cli.perf.PerfJson;
import org.jccl.cli.perf.PerfMemory;
import org.jccl.cli.perf.PerfRunner;
import org.jccl.cli.perf.Progress;
import org.jccl.cli.perf.Row;
import org.jccl.cli.perf.Run;
import org.jccl.cli.perf.RunInfo;
import org.jccl.cli.perf.Sizes;
import org.jccl.cli.perf.SvgChart;
import org.jccl.cli.perf.Table;
import org.jccl.cuda.CudaDevice;
import org.jccl.cuda.Nccl;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code jccl perf <collective>}: the nccl-tests of jccl, same flags and columns. Outside a job,
 * {@code --ranks N} (N > 1) starts N ranks of itself through the {@link Launcher}; inside a job
 * (JCCL_RANK, torchrun, Slurm or Open MPI variables set) it runs as its rank; with one rank and no
 * job it runs in this process.
 */
@Command(name = "perf", mixinStandardHelpOptions = true, sortOptions = false,
        header = "Benchmark a collective, nccl-tests style (time, algbw, busbw, #wrong).",
        description = {"Measure a collective like nccl-tests: for each size, the time (the largest of the ranks' "
            + "mean times), algorithm and bus bandwidth, and wrong elements, out of place and in place.",
            "busbw = algbw x 2(n-1)/n for allreduce; x (n-1)/n for allgather, reducescatter, alltoall, gather and "
            + "scatter (their size is the total over ranks); x 1 for broadcast, reduce and sendrecv.", ""},
        footer = {"", "Unlike nccl-tests (one size, 32M) the default is a sweep: -b 8 -e 32M -f 2; -i without -f "
            + "sweeps by increments. The table prints premulsum as 'mulsum', as nccl-tests does.",
            "", "Examples:", "  jccl perf allreduce --ranks 4", "  jccl perf all --ranks 2 -b 1K -e 1M -d all -o all -n 5",
            "  jccl perf allgather --ranks 4 --json run.json --svg run.svg --compare mpi.json",
            "  jccl perf allreduce --backend nccl -g 2 -G 10     (CUDA graphs, as nccl-tests -G)",
            "  mpirun -np 4 ./jccl perf allreduce --backend mpi      (Open MPI underneath; see docs/BENCHMARKS.md)",
            "", "Exit codes: 0 ok, 1 wrong results or a failure, 2 bad flags."})
final class PerfCommand implements Callable<Integer> {
    /** Default seed of the check data. */
    static final long DEFAULT_SEED = 0x6A63636CL;

    @Spec
    CommandSpec spec;

    @CommandLine.ParentCommand
    Main parent;

    @Parameters(index = "0", paramLabel = "COLLECTIVE",
            description = "allreduce, allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter, sendrecv, or all.")
    String collective;

    @Option(names = {"-b", "--minbytes"}, paramLabel = "SIZE", defaultValue = "8",
            description = "Smallest size in bytes, K/M/G suffixes allowed (default: ${DEFAULT-VALUE}).")
    String minBytes;

    @Option(names = {"-e", "--maxbytes"}, paramLabel = "SIZE", defaultValue = "32M",
            description = "Largest size (default: ${DEFAULT-VALUE}).")
    String maxBytes;

    @Option(names = {"-i", "--stepbytes"}, paramLabel = "SIZE",
            description = "Increment between sizes (used when no factor is given; default 1M).")
    String stepBytes;

    @Option(names = {"-f", "--stepfactor"}, paramLabel = "N",
            description = "Factor between sizes (default 2 unless -i is given).")
    Long stepFactor;

    @Option(names = {"-n", "--iters"}, paramLabel = "N", defaultValue = "20",
            description = "Timed iterations per size (default: ${DEFAULT-VALUE}).")
    int iters;

    @Option(names = {"-w", "--warmup_iters"}, paramLabel = "N", defaultValue = "5",
            description = "Warm-up iterations at the largest and the smallest size (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = {"-c", "--check"}, paramLabel = "0|1", defaultValue = "1",
            description = "Check results against exactly known values (default: ${DEFAULT-VALUE}).")
    int check;

    @Option(names = {"-o", "--op"}, paramLabel = "OP", defaultValue = "sum",
            description = "sum, prod, min, max, avg, premulsum (scalar 2) or all (default: ${DEFAULT-VALUE}).")
    String op;

    @Option(names = {"-d", "--datatype"}, paramLabel = "TYPE", defaultValue = "float",
            description = "int8, uint8, int32, uint32, int64, uint64, half, bfloat16, float, double, "
                    + "fp8e4m3, fp8e5m2, or all (default: ${DEFAULT-VALUE}).")
    String dtype;

    @Option(names = {"-r", "--root"}, paramLabel = "N|all", defaultValue = "0",
            description = "Root rank of broadcast, reduce, gather, scatter, or all (default: ${DEFAULT-VALUE}).")
    String root;

    @Option(names = {"-z", "--blocking"}, paramLabel = "0|1", defaultValue = "0",
            description = "1: blocking calls, each completes before the next is issued (no barrier in between); 0: issue the iterations asynchronously "
                    + "(default: ${DEFAULT-VALUE}).")
    int blocking;

    @Option(names = {"-G", "--cudagraph"}, paramLabel = "N", defaultValue = "0",
            description = "CUDA graph launches, as nccl-tests' -G (--backend nccl): capture the -n timed iterations into "
                    + "one graph and launch it N times; the time is per iteration (total / (n x N)). The check (-c 1) "
                    + "runs through a graph too. 0: no graph (default: ${DEFAULT-VALUE}).")
    int graphLaunches;

    @Option(names = "--settle", paramLabel = "SECONDS", defaultValue = "0",
            description = "Before timing each size and placement, run it untimed for at least 0.25 s (1.5 s from 1 MiB) and until the JIT has "
                    + "compiled it (a ~20 ms block in which no rank's JIT compiled anything), for at most SECONDS (default: "
                    + "${DEFAULT-VALUE}, off). A JVM timed right after a change of size can measure its recompilation.")
    double settle;

    @Option(names = "--to-steady",
            description = "With -z 1: time every call of the timed loops and report, per size and placement, the time "
                    + "from the start of its first call until 16 consecutive calls ran within 1.3x of the steady median "
                    + "(JSON to_steady_us, CSV oop_to_steady_us/ip_to_steady_us; -1: fewer than 32 timed calls, -n). Adds "
                    + "two clock readings per call. For a cold library: -w 0.")
    boolean toSteady;

    @Option(names = "--ranks", paramLabel = "N",
            description = "Start N local ranks (outside a job); inside a job, the job's size (checked).")
    Integer ranks;

    @Option(names = "--backend", paramLabel = "host|nccl|mpi", defaultValue = "host",
            description = "Backend (default: ${DEFAULT-VALUE}); mpi runs under mpirun: mpirun -np N ./jccl perf ... --backend mpi.")
    String backend;

    @Option(names = {"-g", "--ngpus"}, paramLabel = "N", defaultValue = "1",
            description = "GPUs per process (nccl backend; default: ${DEFAULT-VALUE}).")
    int gpus;

    @Option(names = "--json", paramLabel = "FILE", description = "Write every row as JSON (docs/PERF_FORMAT.md).")
    Path json;

    @Option(names = "--csv", paramLabel = "FILE", description = "Write every row as CSV.")
    Path csv;

    @Option(names = "--svg", paramLabel = "FILE", description = "Write a chart of bus bandwidth and time vs size.")
    Path svg;

    @Option(names = "--compare", paramLabel = "FILE.json",
            description = "Overlay the runs of this JSON file on the chart (repeatable).")
    List<Path> compare = new ArrayList<>();

    @Option(names = "--label", paramLabel = "TEXT", description = "Name of this run in charts and JSON "
            + "(default: 'jccl BACKEND N ranks').")
    String label;

    @Option(names = "--seed", paramLabel = "N", description = "Seed of the check data (default: a fixed seed).")
    Long seed;

    @Override
    public Integer call() throws IOException {
        PerfConfig cfg = config();
        List<Run> compared = readCompared();
        checkOutputs();
        Map<String, String> env = System.getenv();
        if (!inJob(env)) {
            int n = ranks == null ? 1 : ranks;
            if (n > 1 && backend.trim().equalsIgnoreCase("mpi")) {
                // MPI's launcher forms an MPI job; jccl's launcher cannot.
                throw usage("--backend mpi with --ranks " + n + ": start the ranks with MPI's launcher instead, e.g. "
                        + "mpirun -np " + n + " ./jccl perf ... --backend mpi");
            }
            if (n > 1) {
                return relaunch(n);
            }
            return single(cfg, compared);
        }
        return rank(cfg, compared, Options.fromEnv());
    }

    /** Parses and checks every flag; a bad one is a one-line usage error (exit code 2). */
    PerfConfig config() {
        List<Collective> colls;
        try {
            colls = "all".equalsIgnoreCase(collective.trim()) ? List.of(Collective.values())
                    : List.of(Collective.parse(collective));
        } catch (IllegalArgumentException e) {
            throw bad("COLLECTIVE", collective, "use one of " + Collective.names() + " or all");
        }
        long min = size("-b", minBytes);
        long max = size("-e", maxBytes);
        if (min > max) {
            throw usage("-b " + minBytes + " is larger than -e " + maxBytes + ": give -b <= -e");
        }
        long step = stepBytes == null ? 1 << 20 : size("-i", stepBytes);
        long factor = stepFactor != null ? stepFactor : (stepBytes != null ? 1 : 2);
        if (factor < 1) {
            throw bad("-f", Long.toString(factor), "give a factor >= 2, or 1 to step by -i");
        }
        if (factor <= 1 && step < 1) {
            throw bad("-i", stepBytes, "give an increment of at least 1 byte");
        }
        if (factor > 1 && min == 0) {
            throw usage("-b 0 with -f " + factor + " never grows: give -b >= 1, or step by -i");
        }
        if (iters < 1) {
            throw bad("-n", Integer.toString(iters), "give at least 1 iteration");
        }
        if (warmup < 0) {
            throw bad("-w", Integer.toString(warmup), "give 0 or more warm-up iterations");
        }
        if (check != 0 && check != 1) {
            throw bad("-c", Integer.toString(check), "use 0 (no check) or 1 (check)");
        }
        if (blocking != 0 && blocking != 1) {
            throw bad("-z", Integer.toString(blocking), "use 0 (asynchronous) or 1 (blocking)");
        }
        if (!(settle >= 0 && settle <= 600)) {
            throw bad("--settle", Double.toString(settle), "give 0 (off) to 600 seconds");
        }
        List<ReduceOp> ops = ops();
        List<DataType> types = types();
        int r = root();
        String b = backend.trim().toLowerCase(Locale.ROOT);
        if (!b.equals("host") && !b.equals("nccl") && !b.equals("mpi")) {
            throw bad("--backend", backend, "use host, nccl or mpi");
        }
        if (gpus < 1) {
            throw bad("-g", Integer.toString(gpus), "give 1 or more GPUs per process");
        }
        if (gpus > 1 && !b.equals("nccl")) {
            throw bad("-g", Integer.toString(gpus), "GPUs per process apply to --backend nccl; the " + b + " backend takes -g 1");
        }
        if (graphLaunches < 0) {
            throw bad("-G", Integer.toString(graphLaunches), "give 0 (no CUDA graph) or a number of graph launches");
        }
        if (graphLaunches > 0 && !b.equals("nccl")) {
            throw bad("-G", Integer.toString(graphLaunches), "CUDA graphs apply to --backend nccl; the " + b
                    + " backend takes -G 0");
        }
        if (graphLaunches > 0 && blocking == 1) {
            throw bad("-G", Integer.toString(graphLaunches), "blocking calls (-z 1) cannot be captured into a CUDA graph: "
                    + "use -z 0 with -G");
        }
        if (toSteady && blocking != 1) {
            throw usage("--to-steady needs -z 1: it times each call on its own, which only blocking calls allow");
        }
        if (ranks != null && (ranks < 1 || ranks > Launcher.MAX_RANKS)) {
            throw bad("--ranks", Integer.toString(ranks), "give 1 to " + Launcher.MAX_RANKS + " ranks");
        }
        try {
            List<Long> sizes = Sizes.sweep(min, max, step, factor);
            if (sizes.isEmpty()) {
                throw usage("the sweep -b " + minBytes + " -e " + maxBytes + " has no size");
            }
            return new PerfConfig(colls, min, max, step, factor, iters, warmup, check == 1, ops, types, r,
                    blocking == 1, seed == null ? DEFAULT_SEED : seed, graphLaunches);
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
    }

    private List<ReduceOp> ops() {
        String o = op.trim().toLowerCase(Locale.ROOT);
        String valid = "use one of sum, prod, min, max, avg, premulsum, all";
        return switch (o) {
            case "all" -> List.of(ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.AVG,
                    ReduceOp.preMulSum(2));
            case "sum", "prod", "min", "max", "avg" -> List.of(ReduceOp.parse(o));
            case "premulsum", "mulsum" -> List.of(ReduceOp.preMulSum(2));
            default -> throw bad("-o", op, valid);
        };
    }

    private List<DataType> types() {
        String d = dtype.trim().toLowerCase(Locale.ROOT);
        if (d.equals("all")) {
            return List.of(DataType.values());
        }
        // nccl-tests' table names of the FP8 types, besides DataType.parse's spellings.
        if (d.equals("f8e4m3")) {
            return List.of(DataType.FLOAT8_E4M3);
        }
        if (d.equals("f8e5m2")) {
            return List.of(DataType.FLOAT8_E5M2);
        }
        try {
            return List.of(DataType.parse(d));
        } catch (IllegalArgumentException e) {
            throw bad("-d", dtype, "use one of int8, uint8, int32, uint32, int64, uint64, half, bfloat16, float, "
                    + "double, fp8e4m3, fp8e5m2, all");
        }
    }

    private int root() {
        String r = root.trim().toLowerCase(Locale.ROOT);
        if (r.equals("all")) {
            return PerfConfig.ALL_ROOTS;
        }
        try {
            int v = Integer.parseInt(r);
            if (v >= 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // falls through to the error
        }
        throw bad("-r", root, "give a rank number >= 0 or all");
    }

    private long size(String flag, String text) {
        try {
            return Sizes.parse(text);
        } catch (IllegalArgumentException e) {
            throw bad(flag, text, "give bytes with an optional K, M or G suffix, e.g. 8, 64K, 32M, 1G");
        }
    }

    private List<Run> readCompared() {
        List<Run> out = new ArrayList<>();
        for (Path p : compare) {
            try {
                out.addAll(PerfJson.read(p));
            } catch (IOException e) {
                throw bad("--compare", p.toString(), "cannot read it: " + e.getMessage());
            } catch (IllegalArgumentException e) {
                throw usage("invalid value for option '--compare': " + e.getMessage());
            }
        }
        return out;
    }

    /** Output files are checked before the sweep, so a typo does not throw a long run away. */
    private void checkOutputs() {
        checkOutput("--json", json);
        checkOutput("--csv", csv);
        checkOutput("--svg", svg);
    }

    private void checkOutput(String flag, Path p) {
        if (p == null) {
            return;
        }
        Path dir = p.toAbsolutePath().getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            throw bad(flag, p.toString(), "its folder " + dir + " does not exist");
        }
        if (Files.isDirectory(p)) {
            throw bad(flag, p.toString(), "it is a folder: give a file name");
        }
    }

    private CommandLine.ParameterException bad(String flag, String value, String what) {
        return usage("invalid value for " + (flag.startsWith("-") ? "option '" + flag + "'" : flag) + ": '" + value
                + "' (" + what + ")");
    }

    private CommandLine.ParameterException usage(String message) {
        return new CommandLine.ParameterException(spec.commandLine(), message);
    }

    /** Whether this process is a rank of a job: JCCL_RANK, torchrun's RANK, Open MPI's or Slurm's rank variables. */
    static boolean inJob(Map<String, String> env) {
        return env.containsKey("JCCL_RANK") || (env.containsKey("RANK") && env.containsKey("WORLD_SIZE"))
                || env.containsKey("OMPI_COMM_WORLD_RANK") || env.containsKey("SLURM_PROCID");
    }

    /** Starts {@code n} ranks of this same command through the launcher; rank 0 prints the table. */
    private int relaunch(int n) {
        String java = ProcessHandle.current().info().command().orElse(JavaCommand.currentJava());
        List<String> jvm = new ArrayList<>();
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            // A debugger agent would clash on its port in every rank; the ranks have no ./jccl stderr filter.
            if (!a.startsWith("-agentlib:jdwp") && !a.startsWith("-Djccl.stderr.")) {
                jvm.add(a);
            }
        }
        String cp = System.getProperty("java.class.path");
        List<String> rest = new ArrayList<>();
        rest.add("-Djccl.stderr.tty=" + Progress.stderrIsTerminal());
        rest.add("-cp");
        rest.add(cp);
        rest.add(Main.class.getName());
        rest.addAll(childArgs(parent.args));
        AotCache.Plan aot = null;
        if (AotCache.enabled(org.jccl.internal.Settings.get("JCCL_AOT"))) {
            try {
                aot = AotCache.plan(AotCache.dir(System.getenv("XDG_CACHE_HOME"), System.getProperty("user.home")), jvm, cp);
            } catch (java.io.IOException e) {
                parent.err.println("jccl perf: JCCL_AOT=on, but no AOT cache can be used (" + e.getMessage()
                        + "): running without one");
            }
        }
        Launcher launcher = new Launcher(n, command(java, jvm, aot == null ? List.of() : aot.rankFlags(), rest));
        if (aot != null) {
            launcher.rank0Command(command(java, jvm, aot.rank0Flags(), rest));
        }
        try {
            return launcher.plainRank0(true).run(parent.out, parent.err);
        } finally {
            if (aot != null && aot.training() != null) {
                String why = AotCache.create(aot, java, jvm, cp);
                if (why != null) {
                    parent.err.println("jccl perf: JCCL_AOT=on: no AOT cache made (" + why + "); the next run trains again");
                }
            }
        }
    }

    private static List<String> command(String java, List<String> jvm, List<String> extra, List<String> rest) {
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(jvm);
        cmd.addAll(extra);
        cmd.addAll(rest);
        return cmd;
    }

    /** The arguments after "perf", without --ranks and its value. */
    static List<String> childArgs(String[] args) {
        List<String> out = new ArrayList<>();
        int start = Arrays.asList(args).indexOf("perf");
        out.add("perf");
        for (int i = start + 1; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--ranks")) {
                i++;
            } else if (!a.startsWith("--ranks=")) {
                out.add(a);
            }
        }
        return out;
    }

    /** One rank, no job: a store of our own in this process. */
    private int single(PerfConfig cfg, List<Run> compared) throws IOException {
        String token = Launcher.newToken();
        try (TcpStoreServer store = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), token)) {
            Options o = Options.of(0, 1).withStore("127.0.0.1", store.port()).withToken(token)
                    .withJobId("perf-" + ProcessHandle.current().pid());
            return rank(cfg, compared, o);
        }
    }

    /** Runs the sweep as this rank of the job (as {@code -g} ranks, one per GPU, with -g > 1). */
    private int rank(PerfConfig cfg, List<Run> compared, Options options) throws IOException {
        String b = backend.trim().toLowerCase(Locale.ROOT);
        if (ranks != null && ranks != options.size()) {
            throw usage("--ranks " + ranks + " does not match this job, which has " + options.size()
                    + " ranks: drop --ranks inside a job or give the job's size");
        }
        int total = options.size() * gpus;
        if (cfg.root() >= total) {
            throw bad("-r", root, "this job has ranks 0.." + (total - 1));
        }
        if (b.equals("host") || b.equals("mpi")) {
            try (PerfMemory mem = new HostMemory()) {
                return measure(cfg, compared, options.withBackend(b), mem, new ArrayList<>());
            }
        }
        String why = Nccl.unavailabilityCause();
        if (why != null) {
            throw new JcclException("--backend nccl cannot run here: " + why);
        }
        int visible = CudaDevice.count();
        if (gpus == 1) {
            try (CudaDevice gpu = CudaDevice.open(options.localRank() % visible);
                 PerfMemory mem = new CudaMemory(gpu)) {
                return measure(cfg, compared, options.withDevice(gpu).withBackend("nccl"), mem, new ArrayList<>());
            }
        }
        return multiGpu(cfg, compared, options, visible);
    }

    /** One process drives -g GPUs: one thread and one communicator (one rank) per GPU. */
    private int multiGpu(PerfConfig cfg, List<Run> compared, Options options, int visible) throws IOException {
        int first = options.localRank() * gpus;
        if (first + gpus > visible) {
            throw bad("-g", Integer.toString(gpus), "local rank " + options.localRank() + " needs GPUs " + first + ".."
                    + (first + gpus - 1) + " but this process sees " + visible);
        }
        List<Communicator> comms = java.util.Collections.synchronizedList(new ArrayList<>());
        int[] codes = new int[gpus];
        Throwable[] failures = new Throwable[gpus];
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < gpus; i++) {
            int g = i;
            Options o = options.withRank(options.rank() * gpus + g, options.size() * gpus)
                    .withLocal(first + g, options.localSize() * gpus);
            threads.add(Thread.ofPlatform().name("jccl-perf-gpu" + (first + g)).start(() -> {
                try (CudaDevice gpu = CudaDevice.open(first + g); PerfMemory mem = new CudaMemory(gpu)) {
                    codes[g] = measure(cfg, compared, o.withDevice(gpu).withBackend("nccl"), mem, comms);
                } catch (Throwable t) {
                    failures[g] = t;
                    // The other GPUs' ranks would wait for this one until their deadline: release them.
                    synchronized (comms) {
                        comms.forEach(Communicator::abort);
                    }
                }
            }));
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new JcclException("interrupted while the GPUs' ranks run", e);
            }
        }
        int code = 0;
        for (int i = 0; i < gpus; i++) {
            if (failures[i] instanceof RuntimeException re) {
                throw re;
            }
            if (failures[i] instanceof IOException io) {
                throw io;
            }
            if (failures[i] != null) {
                throw new JcclException("the rank on GPU " + (first + i) + " failed: " + failures[i], failures[i]);
            }
            code = Math.max(code, codes[i]);
        }
        return code;
    }

    /** The sweep on one communicator; its rank 0 prints the table and writes the files. */
    private int measure(PerfConfig cfg, List<Run> compared, Options options, PerfMemory mem, List<Communicator> peers)
            throws IOException {
        try (Communicator comm = Jccl.init(options)) {
            peers.add(comm);
            boolean reporting = comm.rank() == 0;
            java.io.PrintStream out = reporting ? parent.out : null;
            Progress progress = new Progress(parent.err, reporting && Progress.stderrIsTerminal());
            PerfRunner runner = new PerfRunner(comm, mem, cfg, out, progress).settle(settle).toSteady(toSteady);
            if (cfg.graphLaunches() > 0) {
                runner.graphs(new CudaGraphs(comm));
            }
            String host = hostname();
            String devices = runner.devices(String.format(Locale.ROOT, "Pid %6d on %10s device %s",
                    ProcessHandle.current().pid(), host, mem.device()));
            RunInfo info = new RunInfo(host, org.jccl.internal.Affinity.cpus(), comm.backend(), comm.size(),
                    Jccl.VERSION, Runtime.version().toString(),
                    label != null ? label : RunInfo.defaultLabel("jccl", comm.backend(), comm.size()));
            if (reporting) {
                out.print(header(cfg, info, devices));
                out.flush();
            }
            List<Row> rows = runner.run();
            long bad = Table.outOfBounds(rows);
            if (reporting) {
                out.print(Table.footer(rows));
                out.flush();
                Run run = new Run(info, rows);
                if (json != null) {
                    PerfJson.writeJson(run, json);
                }
                if (csv != null) {
                    PerfJson.writeCsv(run, csv);
                }
                if (svg != null) {
                    List<Run> all = new ArrayList<>();
                    all.add(run);
                    all.addAll(compared);
                    Files.writeString(svg, SvgChart.render(all, title(cfg, info)));
                }
            }
            if (bad > 0) {
                if (reporting) {
                    parent.err.println("jccl perf: " + bad + " measurement" + (bad == 1 ? " has" : "s have")
                            + " wrong results (see the #wrong columns)");
                }
                return Main.FAILED;
            }
            return 0;
        }
    }

    private String header(PerfConfig cfg, RunInfo info, String devices) {
        String nl = System.lineSeparator();
        StringBuilder sb = new StringBuilder();
        sb.append("# jccl perf ").append(Jccl.VERSION).append(": ")
                .append(cfg.collectives().size() == 1 ? cfg.collectives().getFirst().cliName() : "all collectives")
                .append(" | backend ").append(info.backend()).append(" | ").append(info.ranks())
                .append(info.ranks() == 1 ? " rank" : " ranks").append(" | JDK ").append(info.jdk())
                .append(" | ").append(info.hostname()).append(", ").append(info.cores()).append(" cores").append(nl);
        sb.append(String.format(Locale.ROOT, "# nRanks %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d "
                        + "iters: %d validation: %d blocking: %d graph: %d%n", info.ranks(), gpus, cfg.minBytes(),
                cfg.maxBytes(), cfg.stepFactor() > 1 ? cfg.stepFactor() : cfg.stepBytes(),
                cfg.stepFactor() > 1 ? "factor" : "bytes", cfg.warmup(), cfg.iters(), cfg.check() ? 1 : 0,
                cfg.blocking() ? 1 : 0, cfg.graphLaunches()));
        int local = localRanks();
        if (info.backend().equals("host") && local > info.cores()) {
            sb.append("# note: ").append(local).append(" local ranks on ").append(info.cores()).append(" CPUs take turns on ")
                    .append("the cores (and with the JIT): small sizes measure the scheduler more than the library; ")
                    .append("run at most one rank per core to measure jccl").append(nl);
        }
        sb.append("#").append(nl).append("# Using devices").append(nl).append(devices).append("#").append(nl);
        return sb.toString();
    }

    /** The ranks on this host (JCCL_LOCAL_WORLD_SIZE, set by jccl's launcher), or 0 when unknown. */
    private static int localRanks() {
        try {
            String v = org.jccl.internal.Settings.get("JCCL_LOCAL_WORLD_SIZE");
            return v == null ? 0 : Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static String title(PerfConfig cfg, RunInfo info) {
        String what = cfg.collectives().size() == 1 ? cfg.collectives().getFirst().cliName() : "all collectives";
        return "jccl perf " + what + ": " + info.label() + " on " + info.hostname() + " (" + info.cores() + " cores)";
    }

    static String hostname() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            String h = System.getenv("HOSTNAME");
            return h != null ? h : "localhost";
        }
    }
}
