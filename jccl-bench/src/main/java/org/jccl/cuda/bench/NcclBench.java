package org.jccl.cuda.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.cuda.CudaDevice;
import org.jccl.cuda.DeviceBuffer;
import org.jccl.cuda.Nccl;
import org.jccl.cuda.NcclCommunicator;
import org.jccl.cuda.NcclWork;

/**
 * nccl-tests for jccl's NCCL backend: one thread per GPU, each driving its own communicator
 * (as one process per GPU would), float data, out of place. For each collective and size it
 * prints time per operation (the slowest rank), algorithm bandwidth and bus bandwidth with
 * nccl-tests' factors (all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n;
 * broadcast, reduce 1). Sizes follow nccl-tests: all-gather counts the gathered buffer,
 * reduce-scatter the scattered input, all-to-all one rank's whole buffer.
 *
 * <p>It then measures jccl's own host overhead per call: the time of 8-byte all-reduce
 * enqueues through {@link NcclCommunicator#allReduceAsync} minus the time of the same enqueues
 * as a raw ncclAllReduce downcall on the same communicator and stream.
 *
 * <p>{@code --symmetric}: all-reduce, all-gather and reduce-scatter on ordinary buffers and on NCCL
 * symmetric windows ({@code CudaDevice.allocateSymmetric} + {@code NcclCommunicator.register}), size
 * by size, with their ratio, and the time each registration took.
 *
 * <p>{@code --versus nccl,auto [--rounds 7]}: the sweep of {@code -o} on one set of communicators per
 * {@code JCCL_ALGO} value, interleaved round by round, with the median of the rounds and the ratios
 * to the first value (the tuner's per-size claim against NCCL, both through jccl).
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp jccl-core.jar:jccl-cuda.jar:jccl-bench.jar org.jccl.cuda.bench.NcclBench \
 *      [-b 8] [-e 1G] [-f 8] [-w 5] [-g GPUS] [-o allreduce,allgather,reducescatter,broadcast,reduce,alltoall] [--symmetric]
 *      [--versus ALGO,ALGO --rounds N]
 * </pre>
 */
public final class NcclBench {
    private NcclBench() {
    }

    private static long parseSize(String s) {
        String t = s.trim().toUpperCase(Locale.ROOT);
        long mul = 1;
        if (t.endsWith("G")) {
            mul = 1L << 30;
        } else if (t.endsWith("M")) {
            mul = 1L << 20;
        } else if (t.endsWith("K")) {
            mul = 1L << 10;
        }
        if (mul != 1) {
            t = t.substring(0, t.length() - 1);
        }
        return Long.parseLong(t) * mul;
    }

    /** Iterations for a size: many for small messages (stable latency), 20 at 256 MiB and up. */
    static int iters(long bytes) {
        return (int) Math.max(20, Math.min(1000, (256L << 20) / Math.max(bytes, 1)));
    }

    /** Entry point; see the class comment for flags. */
    public static void main(String[] args) throws Exception {
        long minBytes = 8;
        long maxBytes = 1L << 30;
        long factor = 8;
        int warmup = 5;
        int gpus = CudaDevice.count();
        String ops = "allreduce,allgather,reducescatter,broadcast,reduce,alltoall";
        boolean overhead = true;
        boolean symmetric = false;
        String versus = null;
        int rounds = 7;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-b" -> minBytes = parseSize(args[++i]);
                case "-e" -> maxBytes = parseSize(args[++i]);
                case "-f" -> factor = Long.parseLong(args[++i]);
                case "-w" -> warmup = Integer.parseInt(args[++i]);
                case "-g" -> gpus = Integer.parseInt(args[++i]);
                case "-o" -> ops = args[++i];
                case "--no-overhead" -> overhead = false;
                case "--symmetric" -> symmetric = true;
                case "--versus" -> versus = args[++i];
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown flag " + args[i]
                        + ": use -b MIN -e MAX -f FACTOR -w WARMUP -g GPUS -o OPS --no-overhead --symmetric"
                        + " --versus ALGO,ALGO[,...] --rounds N");
            }
        }
        if (!Nccl.isAvailable()) {
            System.err.println("NCCL unavailable: " + Nccl.unavailabilityCause());
            System.exit(2);
        }
        if (gpus < 1 || gpus > CudaDevice.count()) {
            throw new IllegalArgumentException("-g " + gpus + ": this machine has " + CudaDevice.count() + " GPU(s)");
        }
        List<CudaDevice> devices = new ArrayList<>();
        for (int g = 0; g < gpus; g++) {
            devices.add(CudaDevice.open(g));
        }
        if (versus != null) {
            try {
                versus(devices, versus.split(","), ops, minBytes, maxBytes, factor, warmup, rounds);
            } finally {
                for (CudaDevice d : devices) {
                    d.close();
                }
            }
            return;
        }
        List<NcclCommunicator> comms = NcclCommunicator.initAll(devices, Duration.ofMinutes(5));
        System.out.printf("# jccl NcclBench: %d x %s (sm_%d%d), NCCL %s (%s), one thread per GPU, float, out of place%n",
                gpus, devices.get(0).name(), devices.get(0).computeCapabilityMajor(),
                devices.get(0).computeCapabilityMinor(), Nccl.versionString(), Nccl.libraryPath());
        ExecutorService pool = Executors.newFixedThreadPool(gpus);
        List<DeviceBuffer> sendBufs = new ArrayList<>();
        List<DeviceBuffer> recvBufs = new ArrayList<>();
        try {
            for (CudaDevice d : devices) {
                sendBufs.add(d.allocate(DataType.FLOAT32, maxBytes / 4));
                recvBufs.add(d.allocate(DataType.FLOAT32, maxBytes / 4));
                sendBufs.getLast().clear();
                recvBufs.getLast().clear();
            }
            if (symmetric) {
                symmetricSweeps(ops, comms, sendBufs, recvBufs, minBytes, maxBytes, factor, warmup, pool);
            } else {
                for (String op : ops.equals("none") ? new String[0] : ops.split(",")) {
                    sweep(op.trim(), comms, sendBufs, recvBufs, minBytes, maxBytes, factor, warmup, pool);
                }
            }
            if (overhead) {
                overhead(comms, sendBufs, pool);
            }
        } finally {
            pool.shutdownNow();
            for (DeviceBuffer b : sendBufs) {
                b.close();
            }
            for (DeviceBuffer b : recvBufs) {
                b.close();
            }
            for (NcclCommunicator c : comms) {
                c.close();
            }
            for (CudaDevice d : devices) {
                d.close();
            }
        }
    }

    /**
     * {@code --versus nccl,auto --rounds R}: one set of communicators per JCCL_ALGO value (its
     * communicator setting), and for every size R rounds that time each set in turn ({@link #time},
     * the same calls): per algorithm the median of its rounds, and the ratio of each to the first,
     * as the ratio of the medians and the range of the rounds' own ratios. Interleaving the sets
     * round by round spreads the machine's drifts and single slow batches over both sides.
     */
    private static void versus(List<CudaDevice> devices, String[] algos, String ops, long minBytes, long maxBytes,
                               long factor, int warmup, int rounds) throws Exception {
        int n = devices.size();
        List<List<NcclCommunicator>> sets = new ArrayList<>();
        String before = System.getProperty("jccl.algo");
        try {
            for (String a : algos) {
                System.setProperty("jccl.algo", a.trim()); // JCCL_ALGO, read once at a communicator's creation
                sets.add(NcclCommunicator.initAll(devices, Duration.ofMinutes(5)));
            }
        } finally {
            if (before == null) {
                System.clearProperty("jccl.algo");
            } else {
                System.setProperty("jccl.algo", before);
            }
        }
        System.out.printf("# jccl NcclBench --versus: %d x %s, NCCL %s, one thread per GPU, float, out of place; "
                + "%d rounds per size, the algorithms interleaved round by round; median of the rounds (us); "
                + "ratio = median / median of %s, [lowest, highest] of the rounds' own ratios%n",
                n, devices.get(0).name(), Nccl.versionString(), rounds, algos[0].trim());
        ExecutorService pool = Executors.newFixedThreadPool(n);
        List<DeviceBuffer> sends = new ArrayList<>();
        List<DeviceBuffer> recvs = new ArrayList<>();
        try {
            for (CudaDevice d : devices) {
                sends.add(d.allocate(DataType.FLOAT32, maxBytes / 4));
                recvs.add(d.allocate(DataType.FLOAT32, maxBytes / 4));
                sends.getLast().clear();
                recvs.getLast().clear();
            }
            for (String op : ops.split(",")) {
                op = op.trim();
                System.out.printf("%n# %s, %d ranks%n#%12s", op, n, "size(B)");
                for (String a : algos) {
                    System.out.printf(" %10s", a.trim());
                }
                for (int k = 1; k < algos.length; k++) {
                    System.out.printf(" %8s %15s", "ratio", "rounds");
                }
                System.out.println();
                for (long bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
                    long elems = bytes / 4;
                    boolean perRank = !op.equals("allreduce") && !op.equals("broadcast") && !op.equals("reduce");
                    if (elems == 0 || (perRank && elems / n == 0)) {
                        continue;
                    }
                    double[][] t = new double[algos.length][rounds];
                    double[][] enq = new double[algos.length][rounds];
                    for (int r = 0; r < rounds; r++) {
                        for (int k = 0; k < algos.length; k++) {
                            t[k][r] = time(op, sets.get(k), sends, recvs, bytes, warmup, pool);
                            enq[k][r] = lastEnqueueUs;
                        }
                    }
                    double[] med = new double[algos.length];
                    StringBuilder line = new StringBuilder(String.format(" %12d", bytes));
                    for (int k = 0; k < algos.length; k++) {
                        med[k] = median(t[k]);
                        line.append(String.format(" %10.2f", med[k]));
                    }
                    for (int k = 1; k < algos.length; k++) {
                        double lo = Double.MAX_VALUE, hi = 0;
                        for (int r = 0; r < rounds; r++) {
                            double q = t[k][r] / t[0][r];
                            lo = Math.min(lo, q);
                            hi = Math.max(hi, q);
                        }
                        line.append(String.format(" %8.2f %15s", med[k] / med[0], String.format("[%.2f, %.2f]", lo, hi)));
                    }
                    System.out.println(line);
                    if (ROUNDS_DETAIL) { // every round's time and host enqueue time (us per call), per algorithm
                        for (int k = 0; k < algos.length; k++) {
                            StringBuilder d = new StringBuilder(String.format("#   %10d %-8s", bytes, algos[k].trim()));
                            for (int r = 0; r < rounds; r++) {
                                d.append(String.format(" %.1f/%.1f", t[k][r], enq[k][r]));
                            }
                            System.out.println(d);
                        }
                    }
                }
            }
        } finally {
            pool.shutdownNow();
            for (DeviceBuffer b : sends) {
                b.close();
            }
            for (DeviceBuffer b : recvs) {
                b.close();
            }
            for (List<NcclCommunicator> set : sets) {
                for (NcclCommunicator c : set) {
                    c.close();
                }
            }
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        java.util.Arrays.sort(s);
        int m = s.length / 2;
        return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
    }

    private static double busFactor(String op, int n) {
        return switch (op) {
            case "allreduce" -> 2.0 * (n - 1) / n;
            case "allgather", "reducescatter", "alltoall" -> (double) (n - 1) / n;
            default -> 1.0;
        };
    }

    /** Issues one operation of {@code bytes} (nccl-tests' size convention) and returns its work. */
    private static NcclWork issue(String op, NcclCommunicator c, DeviceBuffer send, DeviceBuffer recv, long bytes) {
        int n = c.size();
        long elems = bytes / 4;
        return switch (op) {
            case "allreduce" -> c.allReduceAsync(send.slice(0, elems), recv.slice(0, elems), ReduceOp.SUM);
            case "allgather" -> c.allGatherAsync(send.slice(0, elems / n), recv.slice(0, elems / n * n));
            case "reducescatter" -> c.reduceScatterAsync(send.slice(0, elems / n * n), recv.slice(0, elems / n),
                    ReduceOp.SUM);
            case "broadcast" -> c.broadcastAsync(send.slice(0, elems), recv.slice(0, elems), 0);
            case "reduce" -> c.reduceAsync(send.slice(0, elems), recv.slice(0, elems), ReduceOp.SUM, 0);
            case "alltoall" -> c.allToAllAsync(send.slice(0, elems / n * n), recv.slice(0, elems / n * n));
            default -> throw new IllegalArgumentException("unknown op " + op
                    + ": use allreduce, allgather, reducescatter, broadcast, reduce, alltoall");
        };
    }

    private static void sweep(String op, List<NcclCommunicator> comms, List<DeviceBuffer> sends,
                              List<DeviceBuffer> recvs, long minBytes, long maxBytes, long factor, int warmup,
                              ExecutorService pool) throws Exception {
        int n = comms.size();
        System.out.printf("%n# %s, %d ranks%n", op, n);
        System.out.printf("#%12s %12s %6s %6s %10s %10s %10s %7s%n", "size(B)", "count", "type", "redop", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)", "iters");
        for (long bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
            long elems = bytes / 4;
            boolean perRank = !op.equals("allreduce") && !op.equals("broadcast") && !op.equals("reduce");
            if (elems == 0 || (perRank && elems / n == 0)) {
                continue;
            }
            double us = time(op, comms, sends, recvs, bytes, warmup, pool);
            double algbw = bytes / (us * 1e-6) / 1e9;
            long count = switch (op) {
                case "allgather", "reducescatter", "alltoall" -> elems / n * n;
                default -> elems;
            };
            System.out.printf(" %12d %12d %6s %6s %10.2f %10.2f %10.2f %7d%n", bytes, count, "float",
                    op.equals("allreduce") || op.equals("reducescatter") || op.equals("reduce") ? "sum" : "none",
                    us, algbw, algbw * busFactor(op, n), iters(bytes));
        }
    }

    /**
     * --symmetric: the same sweep on ordinary buffers (cuMemAlloc) and on symmetric windows
     * (CudaDevice.allocateSymmetric + NcclCommunicator.register), size by size in the same process, so
     * the ratio compares like with like. Only the collectives NCCL has symmetric kernels for.
     */
    private static void symmetricSweeps(String ops, List<NcclCommunicator> comms, List<DeviceBuffer> sends,
                                         List<DeviceBuffer> recvs, long minBytes, long maxBytes, long factor,
                                         int warmup, ExecutorService pool) throws Exception {
        int n = comms.size();
        List<DeviceBuffer> symSends = new ArrayList<>();
        List<DeviceBuffer> symRecvs = new ArrayList<>();
        List<org.jccl.cuda.SymmetricWindow> windows = new ArrayList<>();
        try {
            for (NcclCommunicator c : comms) {
                symSends.add(c.device().allocateSymmetric(DataType.FLOAT32, maxBytes / 4));
                symRecvs.add(c.device().allocateSymmetric(DataType.FLOAT32, maxBytes / 4));
                symSends.getLast().clear();
                symRecvs.getLast().clear();
            }
            List<Future<double[]>> regs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                regs.add(pool.submit(() -> {
                    long t0 = System.nanoTime();
                    org.jccl.cuda.SymmetricWindow a = comms.get(rank).register(symSends.get(rank));
                    long t1 = System.nanoTime();
                    org.jccl.cuda.SymmetricWindow b = comms.get(rank).register(symRecvs.get(rank));
                    long t2 = System.nanoTime();
                    synchronized (windows) {
                        windows.add(a);
                        windows.add(b);
                    }
                    return new double[] {(t1 - t0) / 1e6, (t2 - t1) / 1e6};
                }));
            }
            for (int r = 0; r < n; r++) {
                double[] ms = regs.get(r).get();
                System.out.printf(Locale.ROOT, "# rank %d: register(%d MiB) %.1f ms (first), %.1f ms (second)%n", r,
                        maxBytes >> 20, ms[0], ms[1]);
            }
            for (String op0 : ops.split(",")) {
                String op = op0.trim();
                if (!op.equals("allreduce") && !op.equals("allgather") && !op.equals("reducescatter")) {
                    continue;
                }
                System.out.printf("%n# %s, %d ranks: ordinary buffers vs symmetric windows, float%n", op, n);
                System.out.printf("#%12s %11s %11s %8s %11s %11s %7s%n", "size(B)", "plain(us)", "symm(us)",
                        "symm/pl", "plain-busbw", "symm-busbw", "iters");
                for (long bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
                    long elems = bytes / 4;
                    if (elems == 0 || (!op.equals("allreduce") && elems / n == 0)) {
                        continue;
                    }
                    double plain = time(op, comms, sends, recvs, bytes, warmup, pool);
                    double symm = time(op, comms, symSends, symRecvs, bytes, warmup, pool);
                    double f = busFactor(op, n);
                    System.out.printf(Locale.ROOT, " %12d %11.2f %11.2f %8.3f %11.2f %11.2f %7d%n", bytes, plain, symm,
                            symm / plain, bytes / (plain * 1e-6) / 1e9 * f, bytes / (symm * 1e-6) / 1e9 * f,
                            iters(bytes));
                }
            }
        } finally {
            for (org.jccl.cuda.SymmetricWindow w : windows) {
                w.close();
            }
            symSends.forEach(DeviceBuffer::close);
            symRecvs.forEach(DeviceBuffer::close);
        }
    }

    /** Microseconds per {@code op} of {@code bytes} (the slowest rank), as {@link #sweep} times it. */
    private static double time(String op, List<NcclCommunicator> comms, List<DeviceBuffer> sends,
                               List<DeviceBuffer> recvs, long bytes, int warmup, ExecutorService pool) throws Exception {
        int n = comms.size();
        int it = iters(bytes);
        CyclicBarrier start = new CyclicBarrier(n);
        List<Future<double[]>> fs = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            NcclCommunicator c = comms.get(r);
            DeviceBuffer s = sends.get(r);
            DeviceBuffer d = recvs.get(r);
            fs.add(pool.submit(() -> {
                NcclWork last = null;
                for (int w = 0; w < warmup; w++) {
                    last = issue(op, c, s, d, bytes);
                }
                last.await();
                start.await();
                long t0 = System.nanoTime();
                for (int i = 0; i < it; i++) {
                    last = issue(op, c, s, d, bytes);
                }
                long t1 = System.nanoTime();
                last.await();
                return new double[] {(System.nanoTime() - t0) / 1e3 / it, (t1 - t0) / 1e3 / it};
            }));
        }
        double us = 0, enqueue = 0;
        for (Future<double[]> f : fs) {
            double[] t = f.get();
            us = Math.max(us, t[0]);
            enqueue = Math.max(enqueue, t[1]);
        }
        lastEnqueueUs = enqueue;
        return us;
    }

    /**
     * The last {@link #time}'s host side: µs per call until the slowest rank's thread had issued its last
     * call (before waiting for it). Near the whole time, the loop was bound by the host's launches (or a
     * full launch queue); well under it, by the GPUs.
     */
    private static double lastEnqueueUs;

    /** jccl.bench.roundsDetail=true: --versus prints every round's time and host enqueue time. */
    private static final boolean ROUNDS_DETAIL = Boolean.getBoolean("jccl.bench.roundsDetail");

    /** Overhead variants: raw, +event, +ctx+event, jccl, floor. */
    private static final int VARIANTS = 5;
    /**
     * jccl.bench.extraVariants=true: three more: the event record through a critical downcall; over 512 events
     * in turn; the floor with a handle the size of an NcclWork.
     */
    private static final boolean EXTRA_VARIANTS = Boolean.getBoolean("jccl.bench.extraVariants");

    /** The floor variant's completion handle: what a minimal wrapper allocates per call. */
    private record FloorHandle(long sequence, long deadline, long event) {
    }

    /** A handle with an NcclWork's fields (about 110 bytes): does the size of the object matter? */
    private record BigFloorHandle(Object comm, int kind, long sequence, Object type, long count, long stream,
                                  long deadline, int state, long collective, int peer, long trace, long budget,
                                  long event, Object failure, long ringIndex, boolean blocking, byte redop) {
    }

    /** Raw ncclAllReduce and ncclCommGetAsyncError, bound here independently of jccl's binding. */
    @SuppressWarnings("restricted") // binding NCCL and the CUDA driver is what this class is for
    private static final class Raw {
        private static final SymbolLookup NCCL = SymbolLookup.libraryLookup(Path.of(Nccl.libraryPath()), Arena.global());
        static final MethodHandle ALL_REDUCE = bind(NCCL, "ncclAllReduce", FunctionDescriptor.of(JAVA_INT,
                JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle ASYNC_ERROR = bind(NCCL, "ncclCommGetAsyncError",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));

        private static final SymbolLookup CU = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
        static final MethodHandle EVENT_RECORD = bind(CU, "cuEventRecord", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle EVENT_RECORD_CRITICAL = bind(CU, "cuEventRecord",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG), Linker.Option.critical(false));
        static final MethodHandle EVENT_CREATE = bind(CU, "cuEventCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle EVENT_DESTROY = bind(CU, "cuEventDestroy_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle CTX_SET = bind(CU, "cuCtxSetCurrent", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle CTX_GET = bind(CU, "cuCtxGetCurrent", FunctionDescriptor.of(JAVA_INT, ADDRESS),
                Linker.Option.critical(false));
        static final MethodHandle EVENT_QUERY = bind(CU, "cuEventQuery", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));

        private static MethodHandle bind(SymbolLookup lib, String name, FunctionDescriptor fd, Linker.Option... options) {
            return Linker.nativeLinker().downcallHandle(lib.find(name).orElseThrow(), fd, options);
        }

        /** cuCtxGetCurrent into {@code s}, as jccl checks its context before a launch. */
        static long getCurrent(MemorySegment s) {
            try {
                check((int) CTX_GET.invokeExact(s), "cuCtxGetCurrent");
                return s.get(JAVA_LONG, 0);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        /** cuEventQuery: 0 when fired, 600 (CUDA_ERROR_NOT_READY) while pending. */
        static int eventQuery(long e) {
            try {
                return (int) EVENT_QUERY.invokeExact(e);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        static long currentContext(NcclCommunicator c) {
            c.device().makeCurrent();
            try (Arena a = Arena.ofConfined()) {
                return getCurrent(a.allocate(8));
            }
        }

        static void setCurrent(long ctx) {
            try {
                check((int) CTX_SET.invokeExact(ctx), "cuCtxSetCurrent");
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        static long eventCreate() {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment s = a.allocate(8);
                check((int) EVENT_CREATE.invokeExact(s, 2), "cuEventCreate"); // CU_EVENT_DISABLE_TIMING
                return s.get(JAVA_LONG, 0);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        static void eventDestroy(long e) {
            try {
                check((int) EVENT_DESTROY.invokeExact(e), "cuEventDestroy");
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        /** cuEventRecord through a critical downcall, as jccl binds it. */
        static void eventRecordCritical(long e, long stream) {
            try {
                check((int) EVENT_RECORD_CRITICAL.invokeExact(e, stream), "cuEventRecord");
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        static void eventRecord(long e, long stream) {
            try {
                check((int) EVENT_RECORD.invokeExact(e, stream), "cuEventRecord");
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        private static void check(int r, String what) {
            if (r != 0) {
                throw new IllegalStateException(what + " returned " + r);
            }
        }

        static int allReduce(long send, long recv, long count, int type, int op, long comm, long stream) {
            try {
                return (int) ALL_REDUCE.invokeExact(send, recv, count, type, op, comm, stream);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        /**
         * The bare 8-byte (2 floats, sum) in-place ncclAllReduce of the overhead variants, waiting
         * out ncclInProgress on a nonblocking communicator; throws on an error.
         */
        static void allReduce8(long ptr, long comm, long stream, MemorySegment st) {
            int rr = allReduce(ptr, ptr, 2L, 7, 0, comm, stream);
            while (rr == 7) { // ncclInProgress
                rr = asyncError(comm, st);
            }
            if (rr != 0) {
                throw new IllegalStateException("raw ncclAllReduce returned " + rr);
            }
        }

        static int asyncError(long comm, MemorySegment out) {
            try {
                int r = (int) ASYNC_ERROR.invokeExact(comm, out);
                return r == 0 ? out.get(JAVA_INT, 0) : r;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }

    private static void overhead(List<NcclCommunicator> comms, List<DeviceBuffer> sends, ExecutorService pool)
            throws Exception {
        int n = comms.size();
        int batches = 60;
        int batch = 200;
        System.out.printf("%n# host time per 8-byte all-reduce enqueue, median over %d batches of %d calls per rank "
                + "(no sync inside a batch; the five variants interleave batch by batch)%n", batches, batch);
        System.out.println("#   raw        ncclAllReduce downcall (bound here, independently of jccl)");
        System.out.println("#   +event     raw + cuEventRecord of a pooled event (what completion tracking needs)");
        System.out.println("#   +ctx+event cuCtxGetCurrent + raw + cuEventRecord (the native calls jccl makes)");
        System.out.println("#   jccl       NcclCommunicator.allReduceAsync (checks, bookkeeping, Work)");
        System.out.println("#   floor      +ctx+event under a lock, with a clock reading, a handle object and a ring slot "
                + "(the plainest wrapper that returns a completion handle)");
        CyclicBarrier bar = new CyclicBarrier(n);
        List<Future<double[]>> fs = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            NcclCommunicator c = comms.get(r);
            DeviceBuffer buf = sends.get(r).slice(0, 2);
            fs.add(pool.submit(() -> {
                long comm = c.handle();
                long stream = c.stream().handle();
                long ptr = buf.pointer();
                long ctx = Raw.currentContext(c);
                MemorySegment st = Arena.ofAuto().allocate(8);
                long[] events = new long[batch];
                for (int i = 0; i < batch; i++) {
                    events[i] = Raw.eventCreate();
                }
                double[] res = new double[11];
                int variants = EXTRA_VARIANTS ? VARIANTS + 3 : VARIANTS;
                Object[] bigRing = new Object[512];
                long[][] t = new long[variants][batches];
                long[] ringEvents = new long[EXTRA_VARIANTS ? 512 : 0];
                for (int i = 0; i < ringEvents.length; i++) {
                    ringEvents[i] = Raw.eventCreate();
                }
                int ringNext = 0;
                // The floor: what any Java wrapper that returns a completion handle must do per call
                // (a lock, the context check, the call, a clock reading, a handle object, its event, a
                // slot in a ring for a watchdog), written as plainly as possible.
                java.util.concurrent.locks.ReentrantLock floorLock = new java.util.concurrent.locks.ReentrantLock();
                FloorHandle[] ring = new FloorHandle[512];
                long floorSeq = 0;
                // For a profiler: jccl's enqueue path alone, this many batches (the same count on every rank).
                long profileBatches = Long.getLong("jccl.bench.profileBatches", 0);
                for (long p0 = 0; p0 < profileBatches; p0++) {
                    NcclWork last = null;
                    for (int i = 0; i < batch; i++) {
                        last = c.allReduceAsync(buf, buf, ReduceOp.SUM);
                    }
                    last.await();
                }
                for (long p0 = 0; p0 < profileBatches * 50; p0++) { // and the blocking path
                    c.allReduce(buf, buf, ReduceOp.SUM);
                }
                for (int round = 0; round < 2; round++) { // round 0 warms up the JIT
                    for (int k = 0; k < batches; k++) {
                        for (int v = 0; v < variants; v++) {
                            bar.await();
                            c.device().makeCurrent();
                            long t0 = System.nanoTime();
                            NcclWork last = null;
                            if (v == 3) {
                                for (int i = 0; i < batch; i++) {
                                    last = c.allReduceAsync(buf, buf, ReduceOp.SUM);
                                }
                            } else if (v == 4 || v == 7) { // the floor; 7: with a Work-sized handle
                                for (int i = 0; i < batch; i++) {
                                    floorLock.lock();
                                    try {
                                        if (Raw.getCurrent(st) != ctx) {
                                            Raw.setCurrent(ctx);
                                        }
                                        Raw.allReduce8(ptr, comm, stream, st);
                                        long seq = ++floorSeq;
                                        if (v == 4) {
                                            FloorHandle h = new FloorHandle(seq, System.nanoTime() + 1_000_000_000L,
                                                    events[i]);
                                            Raw.eventRecord(h.event, stream);
                                            ring[(int) seq & 511] = h;
                                        } else {
                                            long now = System.nanoTime();
                                            BigFloorHandle h = new BigFloorHandle(c, 0, seq, DataType.FLOAT32, 2, stream,
                                                    now + 1_000_000_000L, 0, seq, 0, -1, 1_000_000_000L, events[i], null,
                                                    seq, false, (byte) 0);
                                            Raw.eventRecord(h.event(), stream);
                                            bigRing[(int) seq & 511] = h;
                                        }
                                    } finally {
                                        floorLock.unlock();
                                    }
                                }
                            } else if (v >= 5) { // the event variants: a critical downcall; 512 events in turn
                                for (int i = 0; i < batch; i++) {
                                    Raw.allReduce8(ptr, comm, stream, st);
                                    if (v == 5) {
                                        Raw.eventRecordCritical(events[i], stream);
                                    } else {
                                        Raw.eventRecord(ringEvents[ringNext], stream);
                                        ringNext = (ringNext + 1) & 511;
                                    }
                                }
                            } else {
                                for (int i = 0; i < batch; i++) {
                                    if (v == 2 && Raw.getCurrent(st) != ctx) {
                                        Raw.setCurrent(ctx);
                                    }
                                    Raw.allReduce8(ptr, comm, stream, st);
                                    if (v >= 1) {
                                        Raw.eventRecord(events[i], stream);
                                    }
                                }
                            }
                            t[v][k] = System.nanoTime() - t0;
                            if (last != null) {
                                last.await();
                            } else {
                                c.stream().synchronize(Duration.ofMinutes(1));
                            }
                        }
                    }
                }
                for (int v = 0; v < variants; v++) {
                    long[] x = t[v].clone();
                    java.util.Arrays.sort(x);
                    res[v == 4 ? 7 : v >= 5 ? v + 3 : v] = (double) x[batches / 2] / batch;
                }
                for (long e : ringEvents) {
                    Raw.eventDestroy(e);
                }
                // Blocking latency: one 8-byte all-reduce at a time, host waits for each; interleaved:
                // jccl, the bare call + cuStreamSynchronize, the bare call + an event polled as jccl does.
                int lat = 500;
                long jb = 0;
                long rb = 0;
                long eb = 0;
                for (int round = 0; round < 4; round++) {
                    bar.await();
                    long t2 = System.nanoTime();
                    for (int i = 0; i < lat; i++) {
                        c.allReduce(buf, buf, ReduceOp.SUM);
                    }
                    jb += System.nanoTime() - t2;
                    bar.await();
                    long t3 = System.nanoTime();
                    for (int i = 0; i < lat; i++) {
                        Raw.allReduce8(ptr, comm, stream, st);
                        c.stream().synchronize(Duration.ofMinutes(1));
                    }
                    rb += System.nanoTime() - t3;
                    bar.await();
                    long t4 = System.nanoTime();
                    for (int i = 0; i < lat; i++) {
                        Raw.allReduce8(ptr, comm, stream, st);
                        Raw.eventRecord(events[0], stream);
                        int q;
                        while ((q = Raw.eventQuery(events[0])) == 600) {
                            Thread.onSpinWait();
                        }
                        if (q != 0) {
                            throw new IllegalStateException("cuEventQuery returned " + q);
                        }
                    }
                    eb += System.nanoTime() - t4;
                }
                res[4] = jb / 1e3 / lat / 4;
                res[5] = rb / 1e3 / lat / 4;
                res[6] = eb / 1e3 / lat / 4;
                for (long e : events) {
                    Raw.eventDestroy(e);
                }
                return res;
            }));
        }
        System.out.printf("# %4s %10s %10s %12s %10s %10s | %10s %12s %11s | %14s %14s %14s%n", "rank", "raw(ns)", "+event",
                "+ctx+event", "floor(ns)", "jccl(ns)", "jccl-raw", "jccl-native", "jccl-floor", "blocking(us)",
                "raw+sync(us)", "raw+evpoll(us)");
        for (int r = 0; r < n; r++) {
            double[] v = fs.get(r).get();
            System.out.printf("  %4d %10.0f %10.0f %12.0f %10.0f %10.0f | %10.0f %12.0f %11.0f | %14.2f %14.2f %14.2f%n", r,
                    v[0], v[1], v[2], v[7], v[3], v[3] - v[0], v[3] - v[2], v[3] - v[7], v[4], v[5], v[6]);
        }
        System.out.println("# jccl-raw: jccl's whole cost over the bare NCCL call; jccl-native: its Java part alone;");
        System.out.println("# jccl-floor: over the plainest Java wrapper that returns a completion handle (floor)");
        if (EXTRA_VARIANTS) {
            for (int r = 0; r < n; r++) {
                double[] v = fs.get(r).get();
                System.out.printf("# rank %d: raw %.0f, +event %.0f, +event critical %.0f, +event of 512 in turn %.0f, floor %.0f, "
                        + "floor with a Work-sized handle %.0f, jccl %.0f ns%n", r, v[0], v[1], v[8], v[9], v[7], v[10], v[3]);
            }
        }
    }
}
