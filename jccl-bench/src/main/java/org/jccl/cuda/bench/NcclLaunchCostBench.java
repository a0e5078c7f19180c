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
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.cuda.CudaDevice;
import org.jccl.cuda.CudaStream;
import org.jccl.cuda.DeviceBuffer;
import org.jccl.cuda.Nccl;
import org.jccl.cuda.NcclCommunicator;
import org.jccl.cuda.NcclGroup;
import org.jccl.cuda.NcclWork;

/**
 * Where the time of a small NCCL operation goes. For each operation (a send/recv ring step, a
 * 64-byte all-gather, broadcast and all-reduce, and a 0-count all-gather), one thread per GPU
 * launches batches of {@code --ops} (default 200) operations back to back and then waits for the stream, as
 * nccl-tests times its loop; three variants interleave batch by batch:
 * <ul>
 *   <li>{@code plain}: the bare NCCL calls on a communicator of {@code ncclCommInitAll} (blocking,
 *       not split: what nccl-tests creates) and a stream of its own;</li>
 *   <li>{@code data}: the bare NCCL calls on jccl's data communicator ({@link NcclCommunicator#handle()}:
 *       split from a nonblocking one with splitShare = 1) and jccl's stream;</li>
 *   <li>{@code data+1ev}, {@code data+2ev}: the same, each operation followed by one or two
 *       cuEventRecords (events of a ring of 512, as jccl's works use);</li>
 *   <li>{@code grp+data}: the bare calls inside a jccl {@link NcclGroup} (its Java side alone);</li>
 *   <li>{@code jccl}: the jccl calls (send/recv in an {@link NcclGroup}), with their checks, works and events.</li>
 * </ul>
 * It prints, per rank and variant, the median time per operation (batch launched and completed)
 * and the host's enqueue time per operation (the batch's launches alone). {@code data / plain}
 * isolates the split child; {@code jccl / data} jccl's own cost, of which the event variants show the events' share.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp jccl-core.jar:jccl-cuda.jar:jccl-bench.jar \
 *      org.jccl.cuda.bench.NcclLaunchCostBench [-g GPUS] [--batches N] [--ops N]
 * </pre>
 */
public final class NcclLaunchCostBench {
    private NcclLaunchCostBench() {
    }

    /** Operations per batch ({@code --ops}). */
    static int BATCH = 200;
    private static final String[] OPS = {"sendrecv", "allgather", "broadcast", "allreduce", "allgather0"};
    private static final String[] VARIANTS = {"plain", "data", "data+1ev", "data+2ev", "grp+data", "jccl"};
    private static final int GROUPED = 4, JCCL = 5;
    private static final int NCCL_FLOAT = 7, NCCL_SUM = 0;
    /** Floats of the 64-byte operations (per rank: all-gather's send, the others' whole buffer). */
    private static final int COUNT = 16;

    /** Entry point; see the class comment. */
    public static void main(String[] args) throws Exception {
        int gpus = CudaDevice.count();
        int batches = 30;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-g" -> gpus = Integer.parseInt(args[++i]);
                case "--batches" -> batches = Integer.parseInt(args[++i]);
                case "--ops" -> BATCH = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown flag " + args[i] + ": use -g GPUS --batches N --ops N");
            }
        }
        if (!Nccl.isAvailable()) {
            System.err.println("NCCL unavailable: " + Nccl.unavailabilityCause());
            System.exit(2);
        }
        if (gpus < 2 || gpus > CudaDevice.count()) {
            throw new IllegalArgumentException("-g " + gpus + ": use 2.." + CudaDevice.count());
        }
        int n = gpus;
        List<CudaDevice> devices = new ArrayList<>();
        for (int g = 0; g < n; g++) {
            devices.add(CudaDevice.open(g));
        }
        List<NcclCommunicator> comms = NcclCommunicator.initAll(devices, Duration.ofMinutes(5));
        long[] plain = Raw.commInitAll(n);
        System.out.printf("# NcclLaunchCostBench: %d x %s, NCCL %s, one thread per GPU, float; median over %d batches of "
                + "%d operations (launched back to back, then the stream awaited)%n", n, devices.get(0).name(),
                Nccl.versionString(), batches, BATCH);
        System.out.println("# plain: bare calls on an ncclCommInitAll communicator; data: bare calls on jccl's data "
                + "communicator; jccl: jccl's calls");
        ExecutorService pool = Executors.newFixedThreadPool(n);
        CyclicBarrier bar = new CyclicBarrier(n);
        List<Future<double[][][]>> fs = new ArrayList<>();
        final int nb = batches;
        try {
            for (int r = 0; r < n; r++) {
                NcclCommunicator c = comms.get(r);
                long plainComm = plain[r];
                fs.add(pool.submit(() -> rank(c, plainComm, bar, nb)));
            }
            double[][][][] all = new double[n][][][];
            for (int r = 0; r < n; r++) {
                all[r] = fs.get(r).get();
            }
            StringBuilder head = new StringBuilder(String.format("# %-10s %4s |", "op", "rank"));
            for (String v : VARIANTS) {
                head.append(String.format(" %9s", v));
            }
            head.append(" |");
            for (String v : VARIANTS) {
                head.append(String.format(" %9s", "enq " + v.replace("data+", "+")));
            }
            System.out.println(head.append(String.format(" | %10s %10s", "data/plain", "jccl/data")));
            for (int o = 0; o < OPS.length; o++) {
                for (int r = 0; r < n; r++) {
                    double[][] v = all[r][o];
                    StringBuilder line = new StringBuilder(String.format("  %-10s %4d |", OPS[o], r));
                    for (double[] x : v) {
                        line.append(String.format(" %9.2f", x[0]));
                    }
                    line.append(" |");
                    for (double[] x : v) {
                        line.append(String.format(" %9.2f", x[1]));
                    }
                    System.out.println(line.append(String.format(" | %10.2f %10.2f", v[1][0] / v[0][0], v[JCCL][0] / v[1][0])));
                }
            }
            System.out.println("# times in us per operation; enq = the host's launch time alone");
        } finally {
            pool.shutdownNow();
            for (long p : plain) {
                Raw.commDestroy(p);
            }
            for (NcclCommunicator c : comms) {
                c.close();
            }
            for (CudaDevice d : devices) {
                d.close();
            }
        }
    }

    /** [op][variant] {us per operation, us of enqueue per operation}, medians. */
    private static double[][][] rank(NcclCommunicator c, long plainComm, CyclicBarrier bar, int batches) throws Exception {
        int n = c.size();
        int rank = c.rank();
        int next = (rank + 1) % n;
        int prev = (rank + n - 1) % n;
        CudaDevice d = c.device();
        d.makeCurrent();
        try (CudaStream own = d.createStream();
             DeviceBuffer send = d.allocate(DataType.FLOAT32, COUNT);
             DeviceBuffer recv = d.allocate(DataType.FLOAT32, (long) COUNT * n)) {
            send.clear();
            recv.clear();
            long sp = send.pointer();
            long rp = recv.pointer();
            DeviceBuffer recvOne = recv.slice(0, COUNT);
            DeviceBuffer send0 = send.slice(0, 0);
            DeviceBuffer recv0 = recv.slice(0, 0);
            double[][][] res = new double[OPS.length][VARIANTS.length][2];
            long[] events = new long[512];
            for (int i = 0; i < events.length; i++) {
                events[i] = Raw.eventCreate();
            }
            int ev = 0;
            for (int o = 0; o < OPS.length; o++) {
                String op = OPS[o];
                long[][] total = new long[VARIANTS.length][batches];
                long[][] enq = new long[VARIANTS.length][batches];
                for (int round = 0; round < 3; round++) { // rounds 0 and 1 warm up the JIT (C2) and NCCL
                    for (int k = 0; k < batches; k++) {
                        for (int v = 0; v < VARIANTS.length; v++) {
                            bar.await();
                            d.makeCurrent();
                            long comm = v == 0 ? plainComm : c.handle();
                            long stream = v == 0 ? own.handle() : c.stream().handle();
                            long t0 = System.nanoTime();
                            NcclWork last = null;
                            for (int i = 0; i < BATCH; i++) {
                                if (v == JCCL) {
                                    last = switch (op) {
                                        case "sendrecv" -> {
                                            NcclWork w;
                                            try (NcclGroup g = NcclGroup.start()) {
                                                c.sendAsync(send, next);
                                                w = c.recvAsync(recvOne, prev);
                                            }
                                            yield w;
                                        }
                                        case "allgather" -> c.allGatherAsync(send, recv);
                                        case "broadcast" -> c.broadcastAsync(send, recvOne, 0);
                                        case "allreduce" -> c.allReduceAsync(send, recvOne, ReduceOp.SUM);
                                        default -> c.allGatherAsync(send0, recv0);
                                    };
                                } else if (v == GROUPED) {
                                    try (NcclGroup g = NcclGroup.start()) {
                                        switch (op) {
                                            case "sendrecv" -> {
                                                Raw.send(sp, COUNT, next, comm, stream);
                                                Raw.recv(rp, COUNT, prev, comm, stream);
                                            }
                                            case "allgather" -> Raw.allGather(sp, rp, COUNT, comm, stream);
                                            case "broadcast" -> Raw.broadcast(sp, rp, COUNT, comm, stream);
                                            case "allreduce" -> Raw.allReduce(sp, rp, COUNT, comm, stream);
                                            default -> Raw.allGather(sp, rp, 0, comm, stream);
                                        }
                                    }
                                } else {
                                    switch (op) {
                                        case "sendrecv" -> Raw.sendRecv(sp, rp, COUNT, next, prev, comm, stream);
                                        case "allgather" -> Raw.allGather(sp, rp, COUNT, comm, stream);
                                        case "broadcast" -> Raw.broadcast(sp, rp, COUNT, comm, stream);
                                        case "allreduce" -> Raw.allReduce(sp, rp, COUNT, comm, stream);
                                        default -> Raw.allGather(sp, rp, 0, comm, stream);
                                    }
                                    for (int e = 1; e < v && v < GROUPED; e++) { // data+1ev, data+2ev
                                        Raw.eventRecord(events[ev], stream);
                                        ev = (ev + 1) & 511;
                                    }
                                }
                            }
                            long t1 = System.nanoTime();
                            if (last != null) {
                                last.await();
                            }
                            (v == 0 ? own : c.stream()).synchronize(Duration.ofMinutes(1));
                            long t2 = System.nanoTime();
                            total[v][k] = t2 - t0;
                            enq[v][k] = t1 - t0;
                        }
                    }
                }
                for (int v = 0; v < VARIANTS.length; v++) {
                    res[o][v][0] = median(total[v]) / 1e3 / BATCH;
                    res[o][v][1] = median(enq[v]) / 1e3 / BATCH;
                }
            }
            for (long e : events) {
                Raw.eventDestroy(e);
            }
            return res;
        }
    }

    private static double median(long[] x) {
        long[] s = x.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    /** The bare NCCL calls, bound here independently of jccl's binding. */
    @SuppressWarnings("restricted") // binding NCCL is what this class is for
    private static final class Raw {
        private static final SymbolLookup NCCL = SymbolLookup.libraryLookup(Path.of(Nccl.libraryPath()), Arena.global());
        static final MethodHandle INIT_ALL = bind("ncclCommInitAll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT,
                ADDRESS));
        static final MethodHandle DESTROY = bind("ncclCommDestroy", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle GROUP_START = bind("ncclGroupStart", FunctionDescriptor.of(JAVA_INT));
        static final MethodHandle GROUP_END = bind("ncclGroupEnd", FunctionDescriptor.of(JAVA_INT));
        static final MethodHandle SEND = bind("ncclSend", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT,
                JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle RECV = bind("ncclRecv", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT,
                JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle ALL_GATHER = bind("ncclAllGather", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
                JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle BROADCAST = bind("ncclBroadcast", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
                JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle ALL_REDUCE = bind("ncclAllReduce", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
                JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));

        private static final SymbolLookup CU = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
        static final MethodHandle EVENT_CREATE = Linker.nativeLinker().downcallHandle(CU.find("cuEventCreate").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle EVENT_RECORD = Linker.nativeLinker().downcallHandle(CU.find("cuEventRecord").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle EVENT_DESTROY = Linker.nativeLinker().downcallHandle(
                CU.find("cuEventDestroy_v2").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_LONG));

        private static MethodHandle bind(String name, FunctionDescriptor fd) {
            return Linker.nativeLinker().downcallHandle(NCCL.find(name).orElseThrow(), fd);
        }

        /** An event without timing (CU_EVENT_DISABLE_TIMING), as jccl's works use; the current context's. */
        static long eventCreate() {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(8);
                check((int) EVENT_CREATE.invokeExact(out, 2), "cuEventCreate");
                return out.get(JAVA_LONG, 0);
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void eventRecord(long e, long stream) {
            try {
                check((int) EVENT_RECORD.invokeExact(e, stream), "cuEventRecord");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void eventDestroy(long e) {
            try {
                check((int) EVENT_DESTROY.invokeExact(e), "cuEventDestroy");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        /** A failed downcall's throwable as an unchecked one (the hot loops stay free of lambdas). */
        private static RuntimeException rethrown(Throwable t) {
            return t instanceof RuntimeException e ? e : new IllegalStateException(t);
        }

        private static void check(int r, String what) {
            if (r != 0) {
                throw new IllegalStateException(what + " returned " + r);
            }
        }

        /** ncclCommInitAll over GPUs 0..n-1, called from one thread. */
        static long[] commInitAll(int n) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(8L * n, 8);
                MemorySegment devs = a.allocate(4L * n, 4);
                for (int i = 0; i < n; i++) {
                    devs.setAtIndex(JAVA_INT, i, i);
                }
                check((int) INIT_ALL.invokeExact(out, n, devs), "ncclCommInitAll");
                long[] r = new long[n];
                for (int i = 0; i < n; i++) {
                    r[i] = out.getAtIndex(JAVA_LONG, i);
                }
                return r;
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void commDestroy(long comm) {
            try {
                check((int) DESTROY.invokeExact(comm), "ncclCommDestroy");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void send(long sp, long count, int peer, long comm, long stream) {
            try {
                check((int) SEND.invokeExact(sp, count, NCCL_FLOAT, peer, comm, stream), "ncclSend");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void recv(long rp, long count, int peer, long comm, long stream) {
            try {
                check((int) RECV.invokeExact(rp, count, NCCL_FLOAT, peer, comm, stream), "ncclRecv");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void sendRecv(long sp, long rp, long count, int next, int prev, long comm, long stream) {
            try {
                check((int) GROUP_START.invokeExact(), "ncclGroupStart");
                check((int) SEND.invokeExact(sp, count, NCCL_FLOAT, next, comm, stream), "ncclSend");
                check((int) RECV.invokeExact(rp, count, NCCL_FLOAT, prev, comm, stream), "ncclRecv");
                check((int) GROUP_END.invokeExact(), "ncclGroupEnd");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void allGather(long sp, long rp, long count, long comm, long stream) {
            try {
                check((int) ALL_GATHER.invokeExact(sp, rp, count, NCCL_FLOAT, comm, stream), "ncclAllGather");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void broadcast(long sp, long rp, long count, long comm, long stream) {
            try {
                check((int) BROADCAST.invokeExact(sp, rp, count, NCCL_FLOAT, 0, comm, stream), "ncclBroadcast");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }

        static void allReduce(long sp, long rp, long count, long comm, long stream) {
            try {
                check((int) ALL_REDUCE.invokeExact(sp, rp, count, NCCL_FLOAT, NCCL_SUM, comm, stream), "ncclAllReduce");
            } catch (Throwable t) {
                throw rethrown(t);
            }
        }
    }
}
