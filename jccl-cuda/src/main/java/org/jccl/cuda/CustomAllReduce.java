package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.internal.Log;

/**
 * jccl's own all-reduce for small messages between GPUs of one host (NVLink): the kernels of
 * {@code src/main/cuda/custom_allreduce.cu}, prebuilt by nvcc into the fatbin resource
 * {@code custom_allreduce.fatbin} (sm_80 and sm_90 SASS, compute_90 PTX for newer GPUs), launched
 * with programmatic dependent launch on sm_90 and later.
 *
 * <p>Each rank owns one device buffer (flags, two data slots of {@link #SLOT_BYTES}) that every
 * other rank maps once per communicator: with CUDA IPC ({@code cuIpcGetMemHandle}, the handles
 * exchanged by an ncclAllGather on the communicator itself) when the ranks are processes, or
 * directly with peer access when one process drives every GPU. A call copies its input into its
 * slot, meets the other ranks at a flag barrier and reduces from their slots: one-shot (every
 * rank reduces everything) or two-shot (reduce-scatter, a second barrier, all-gather). Two
 * algorithms need no barrier: LL (every rank writes its input into every peer's buffer as lines of
 * 8 bytes of data beside 8 bytes of flags, and reduces as its peers' lines arrive) and Lamport (the
 * same with 16 bytes of data a line and no flag: an empty line holds 0xFFFFFFFF in every word,
 * an input word of that value is sent as another NaN, and the thread that read a line empties it
 * again). SUM of
 * FLOAT32, FLOAT16 and BFLOAT16, accumulated in fp32 in rank order 0..n-1 and rounded once: the
 * result is bitwise the same on every rank and in every run (it may differ from NCCL's in the last
 * bit, since NCCL's order is its own; with two ranks an fp32 sum is the same as NCCL's).
 *
 * <p>The tuner ({@link #choose}) picks it or NCCL per call by size and rank count;
 * {@code JCCL_ALGO} = {@code nccl}, {@code oneshot}, {@code twoshot}, {@code ll}, {@code lamport} or
 * {@code lamport2} (two-shot Lamport: each rank reduces its part and pushes the sums) forces one (see
 * docs/ENVIRONMENT.md). Calls it cannot run (other operators or types, more bytes than a slot,
 * calls inside an {@link NcclGroup}) always go to NCCL.
 *
 * <p>A waiting barrier checks a host-pinned abort word every 256 spins: {@link #abort} (called
 * when the communicator is aborted, e.g. by the watchdog at a deadline) makes every spinning
 * kernel return within microseconds, leaving its output unwritten. As a backstop a kernel also
 * gives up after {@code 2 x timeout + 10 s} of spinning and records it in a status word, which the
 * next call reports as a failure of the communicator.
 */
final class CustomAllReduce {
    private static final Log LOG = NcclCommunicator.LOG;

    /** Bytes of one data slot: the largest all-reduce the kernels take. */
    static final long SLOT_BYTES = 1L << 20;
    /** Layout of each rank's buffer (the same constants as custom_allreduce.cu). */
    static final long PEERS_OFF = 0, DATA_OFF = 8192;
    /** The kernels' limits: ranks, blocks of one call (the flag area's size), threads of a block. */
    static final int MAX_RANKS = 8, MAX_BLOCKS = 128, THREADS = 512;
    /**
     * Threads of a block (0: each algorithm's own, {@link #threads}) and most blocks of a call (LL's
     * own). Benchmarks may set them ({@code -Djccl.car.threads=32..512}, {@code -Djccl.car.maxBlocks=1..128},
     * {@code -Djccl.car.llMaxBlocks=1..128}) to compare grids; they are not a user setting.
     */
    static final int BLOCK_THREADS = property("jccl.car.threads", 0, 32, THREADS),
            GRID_MAX = property("jccl.car.maxBlocks", 32, 1, MAX_BLOCKS),
            LL_GRID_MAX = property("jccl.car.llMaxBlocks", MAX_BLOCKS, 1, MAX_BLOCKS);
    /**
     * Whether the kernels go out with programmatic dependent launch where they can (see {@link
     * #launchConfig}); {@code -Djccl.car.pdl=0} launches them plainly, for benchmarks that compare the two.
     */
    static final boolean PDL = property("jccl.car.pdl", 1, 0, 1) == 1;
    /** One sender's LL lines of one parity (LL_SLOT in custom_allreduce.cu): half of it is payload. */
    static final long LL_SLOT = 512L << 10;
    /** Largest all-reduce (bytes) the LL kernel takes. */
    static final long LL_MAX = LL_SLOT / 2;
    /** Where the LL areas start: after the two data slots. */
    static final long LL_OFF = DATA_OFF + 2 * SLOT_BYTES;
    /** One sender's Lamport lines of one parity (LAMPORT_SLOT in custom_allreduce.cu), all payload. */
    static final long LAMPORT_SLOT = 256L << 10;
    /** Largest all-reduce (bytes) the Lamport kernel takes. */
    static final long LAMPORT_MAX = LAMPORT_SLOT;
    /** Where the Lamport areas (two parities, as LL's) start: after the LL areas. */
    static final long LP_OFF = LL_OFF + 2L * MAX_RANKS * LL_SLOT;
    /** Where two-shot Lamport's gather areas (two parities) start: after the Lamport areas. */
    static final long AG_OFF = LP_OFF + 2L * MAX_RANKS * LAMPORT_SLOT;
    static final long BUFFER_BYTES = AG_OFF + 2L * LAMPORT_SLOT;
    /** What JCCL_ALGO asks of a GPU communicator. */
    static final int AUTO = 0, NCCL = 1, ONE_SHOT = 2, TWO_SHOT = 3, LL = 4, LAMPORT = 5, LAMPORT_TWO_SHOT = 6;
    /** Exchanged per rank at set-up: pid, host id, device uuid, buffer pointer, IPC handle, ok. */
    private static final int BLOB = 128;
    private static final int ARGS = 11;
    /** CUDA_ERROR_NOT_READY. */
    private static final int NOT_READY = 600;

    private static volatile byte[] image;

    final NcclCommunicator comm;
    final int mode;
    final int rank;
    final int size;
    /** This rank's buffer (cuMemAlloc on its device). */
    final long buffer;
    /** Peer buffers this rank opened with cuIpcOpenMemHandle (closed by {@link #close}). */
    private final List<Long> opened = new ArrayList<>();
    /** The abort word (offset 0) and the status word (offset 4): host pinned, mapped into the device. */
    private final long hostWords;
    private final MemorySegment words;
    private final CudaModule module;
    private final long fnF32, fnF16, fnBf16;
    private final MemorySegment args;
    private final MemorySegment params;
    /**
     * The launch configuration of cuLaunchKernelEx with programmatic stream serialization (laid out as
     * {@link LaunchConfigDescriptor} says), or null for plain cuLaunchKernel. With it a call's blocks are
     * resident before the kernel ahead of it in the stream ends (each waits for that kernel's completion
     * before it reads anything), which takes the launch gap out of back-to-back calls. Only where the driver
     * has cuLaunchKernelEx (CUDA 12.0+) and the loaded kernels wait (jccl_car_grid_wait: built for sm_90+).
     */
    private final MemorySegment launchConfig;
    private final long spinLimitNanos;
    /** One process holds every rank: the buffers go when the last of them closes (see {@link Local}). */
    private Local local;
    /** Every peer is another process: close() first fences with them (see {@link #quiesce}). */
    private boolean remotePeers;
    private boolean closed;
    /** All-reduces this rank ran with the kernels (under the lock; read by tests). */
    long launches;

    private CustomAllReduce(NcclCommunicator comm, int mode, long buffer, long hostWords) {
        this.comm = comm;
        this.mode = mode;
        this.rank = comm.rank();
        this.size = comm.size();
        this.buffer = buffer;
        this.hostWords = hostWords;
        this.words = MemorySegment.ofAddress(hostWords).reinterpret(8);
        this.module = CudaModule.load(comm.device, image());
        this.fnF32 = module.function("jccl_car_f32");
        this.fnF16 = module.function("jccl_car_f16");
        this.fnBf16 = module.function("jccl_car_bf16");
        this.args = comm.arena.allocate(8L * ARGS, 8);
        this.params = comm.arena.allocate(ADDRESS, ARGS);
        for (int i = 0; i < ARGS; i++) {
            params.setAtIndex(ADDRESS, i, args.asSlice(8L * i, 8));
        }
        this.launchConfig = PDL && CudaDriver.hasLaunchKernelEx() && module.globalInt("jccl_car_grid_wait", 0) == 1
                ? serializedLaunch(comm.arena) : null;
        long t = comm.timeout().toNanos();
        this.spinLimitNanos = t > Long.MAX_VALUE / 4 ? Long.MAX_VALUE / 2 : 2 * t + 10_000_000_000L;
    }

    /** A launch configuration with programmatic stream serialization; grid, block and stream set per launch. */
    private static MemorySegment serializedLaunch(Arena arena) {
        MemorySegment c = arena.allocate(LaunchConfigDescriptor.BYTES, 8);
        c.set(JAVA_INT, LaunchConfigDescriptor.GRID_Y, 1);
        c.set(JAVA_INT, LaunchConfigDescriptor.GRID_Z, 1);
        c.set(JAVA_INT, LaunchConfigDescriptor.BLOCK_Y, 1);
        c.set(JAVA_INT, LaunchConfigDescriptor.BLOCK_Z, 1);
        c.set(JAVA_INT, LaunchConfigDescriptor.SHARED_BYTES, 0);
        c.set(JAVA_LONG, LaunchConfigDescriptor.ATTRS, c.address() + LaunchConfigDescriptor.ATTR);
        c.set(JAVA_INT, LaunchConfigDescriptor.NUM_ATTRS, 1);
        c.set(JAVA_INT, LaunchConfigDescriptor.ATTR_ID, LaunchConfigDescriptor.PROGRAMMATIC_STREAM_SERIALIZATION);
        c.set(JAVA_INT, LaunchConfigDescriptor.ATTR_VALUE, 1);
        return c;
    }

    /** Whether this rank's kernels go out with programmatic dependent launch (read by tests and the log). */
    boolean serializedLaunch() {
        return launchConfig != null;
    }

    /**
     * The fatbin resource, read once; {@code -Djccl.car.fatbin=FILE} loads FILE instead (to compare
     * kernel builds on the GPU machine in one JVM setup; not a user setting).
     */
    static byte[] image() {
        byte[] i = image;
        if (i == null) {
            String file = System.getProperty("jccl.car.fatbin");
            if (file != null && !file.isBlank()) {
                try {
                    i = java.nio.file.Files.readAllBytes(java.nio.file.Path.of(file.strip()));
                } catch (IOException e) {
                    throw new JcclException("-Djccl.car.fatbin=" + file + " cannot be read (" + e
                            + "): name a fatbin built from custom_allreduce.cu, or leave the property out", e);
                }
                image = i;
                return i;
            }
            try (InputStream in = CustomAllReduce.class.getResourceAsStream("custom_allreduce.fatbin")) {
                if (in == null) {
                    throw new JcclException("custom_allreduce.fatbin is missing from jccl-cuda's jar: rebuild jccl-cuda, "
                            + "or set JCCL_ALGO=nccl");
                }
                i = in.readAllBytes();
            } catch (IOException e) {
                throw new JcclException("reading custom_allreduce.fatbin failed: " + e, e);
            }
            image = i;
        }
        return i;
    }

    // ------------------------------------------------------------------ JCCL_ALGO and the tuner

    /** JCCL_ALGO for a GPU communicator; an unknown value is an error naming the accepted ones. */
    static int mode(String algo) {
        if (algo == null || algo.isBlank()) {
            return AUTO;
        }
        return switch (algo.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> AUTO;
            case "nccl" -> NCCL;
            case "oneshot" -> ONE_SHOT;
            case "twoshot", "rsag" -> TWO_SHOT;
            case "ll" -> LL;
            case "lamport" -> LAMPORT;
            case "lamport2" -> LAMPORT_TWO_SHOT;
            default -> throw new IllegalArgumentException("JCCL_ALGO is '" + algo + "': a GPU (nccl backend) communicator "
                    + "takes nccl, oneshot, twoshot (also rsag), ll, lamport, lamport2 or auto; unset it to let the tuner choose");
        };
    }

    /** This communicator's JCCL_ALGO: its own settings (Options.withSetting) first, then the process's. */
    static String algoSetting(NcclCommunicator c) {
        String v = c.settings.get("JCCL_ALGO");
        return v != null ? v : org.jccl.internal.Settings.get("JCCL_ALGO");
    }

    /**
     * Largest all-reduce (bytes) the tuner gives LL (above it Lamport up to {@link #lamportMax}, then
     * one-shot up to {@link #oneShotMax}). Measured through jccl on 2 and 4 H100s (NcclBench --versus
     * nccl,ll,lamport,lamport2, 9 rounds per size interleaved, medians, three JVM runs;
     * bench/gpu/results/2026-11-28-4xH100-lamport/): with 2 ranks LL took 4.4-5.5 us up to 32 KiB
     * where Lamport took 5.0-5.3 (LL's lines carry half the payload, but its flag is checked in the
     * line itself), they tied at 64 KiB, and Lamport led from 128 KiB (5.7 against 6.2 us); with 4
     * ranks LL led up to 16 KiB (4.8-5.4 against 5.2-5.6), they tied at 32 KiB and Lamport led from 64
     * KiB (5.9 against 6.5 us). More than 4 ranks are unmeasured: a cautious 16 KiB.
     *
     * <p>{@link #LL_BY_DEFAULT} turns the tuner's use of LL off ({@code JCCL_ALGO=ll} still runs it).
     * A lone rank's LL all-reduce once returned normally on 2x H100 instead of timing out, unexplained
     * (bench/gpu/results/2026-11-27-4xH100-car-ll/README.md, run 5); since then a kernel that returns
     * without writing its output fails its own call ({@link #quitEarly}), and the GPU tests and the
     * kit passed with LL picked on 2 and 4 H100s (docs/BENCHMARKS.md).
     */
    static long llMax(int n) {
        return !LL_BY_DEFAULT ? 0 : n <= 2 ? 32L << 10 : 16L << 10;
    }

    /**
     * Largest all-reduce (bytes) the tuner gives one-shot Lamport: all it takes ({@link
     * #LAMPORT_MAX}, 256 KiB) with 2 to 4 ranks, where it was the fastest kernel above LL's limit
     * and below NCCL's time (2 ranks: 5.7 us at 128 KiB and 6.3-6.5 at 256 KiB against LL's 6.2 and
     * 7.2-7.8; 4 ranks: 6.7 us at 128 KiB and 8.2-8.3 at 256 KiB against LL's 8.0-8.2 and 11.0, NCCL
     * 11.6-12.6; two-shot Lamport 7.8-7.9 and 8.3; same runs as {@link #llMax}). More than 4 ranks
     * are unmeasured (each rank pushes n - 1 copies of the message): none.
     */
    static long lamportMax(int n) {
        return n <= 4 ? LAMPORT_MAX : 0;
    }

    /** Largest all-reduce (bytes) the tuner gives any of jccl's kernels on {@code n} ranks. */
    static long kernelsMax(int n) {
        return Math.max(Math.max(llMax(n), lamportMax(n)), Math.max(oneShotMax(n), twoShotMax(n)));
    }

    /** Whether the tuner picks LL (see {@link #llMax}). */
    static final boolean LL_BY_DEFAULT = true;

    /**
     * Largest all-reduce (bytes) the tuner gives one-shot, for {@code n} ranks: where it stays below
     * NCCL's time. Measured through jccl (NcclBench --versus, one thread per GPU, float sum, NCCL
     * 2.28.3, 9 rounds per size interleaved with NCCL, medians; bench/gpu/results/2026-11-27-4xH100-versus):
     * on 2 H100s one-shot took 0.69x NCCL's time at 128 KiB, 0.77x at 256 KiB, 0.82x at 512 KiB and
     * 1.09x at 1 MiB; on 4 0.91x at 128 KiB, 1.03x at 256 KiB and 1.07x at 512 KiB. More than 4
     * ranks is unmeasured: a cautious 64 KiB.
     */
    static long oneShotMax(int n) {
        return n <= 2 ? 512L << 10 : n <= 4 ? 128L << 10 : 64L << 10;
    }

    /**
     * Largest all-reduce (bytes) the tuner gives two-shot: none. Measured, it was slower than one-shot
     * at every size up to a slot (1 MiB) on 2 and 4 H100s, and slower than NCCL from 128 KiB on 4;
     * JCCL_ALGO=twoshot still runs it.
     */
    static long twoShotMax(int n) {
        return 0;
    }

    /**
     * The algorithm for one all-reduce: LL, ONE_SHOT, TWO_SHOT or NCCL. NCCL for anything the kernels
     * cannot run: another operator than SUM, another type than FLOAT32/FLOAT16/BFLOAT16, no
     * elements, more bytes than a slot.
     */
    static int choose(int mode, int n, long count, DataType type, int ncclRedOp) {
        if (mode == NCCL || ncclRedOp != ReduceOp.Kind.SUM.ncclValue() || count <= 0 || n < 2 || n > MAX_RANKS) {
            return NCCL;
        }
        if (type != DataType.FLOAT32 && type != DataType.FLOAT16 && type != DataType.BFLOAT16) {
            return NCCL;
        }
        long bytes = count * type.byteSize();
        if (bytes > SLOT_BYTES) {
            return NCCL;
        }
        if (mode == ONE_SHOT || mode == TWO_SHOT) {
            return mode;
        }
        if (mode == LL) {
            return bytes <= LL_MAX ? LL : NCCL;
        }
        if (mode == LAMPORT || mode == LAMPORT_TWO_SHOT) {
            return bytes <= LAMPORT_MAX ? mode : NCCL;
        }
        if (bytes <= llMax(n)) {
            return LL;
        }
        if (bytes <= lamportMax(n)) {
            return LAMPORT;
        }
        if (bytes <= oneShotMax(n)) {
            return ONE_SHOT;
        }
        return bytes <= twoShotMax(n) ? TWO_SHOT : NCCL;
    }

    /**
     * Threads of a block: 128 for LL, 512 for one-shot and two-shot. Measured on 2 and 4 H100s
     * (NcclBench --versus, bench/gpu/results/2026-11-28-4xH100-ll256/): LL with 128 threads per block
     * (and up to {@link #LL_GRID_MAX} blocks) took 4.6-5.6 us from 8 B to 64 KiB on 2 GPUs and
     * 4.9-7.7 us on 4, against 4.8-5.9 and 5.1-7.7 with 256 threads and 32 blocks; 9.3 against 10.1 us
     * at 128 KiB on 4. An earlier run (bench/gpu/results/2026-11-27-4xH100-car-ll/) had preferred 256
     * to 512 and 128 by smaller margins than its noise.
     */
    static int threads(int algo) {
        return BLOCK_THREADS > 0 ? BLOCK_THREADS : algo == LL || algo == LAMPORT || algo == LAMPORT_TWO_SHOT ? 128 : 512;
    }

    /**
     * Blocks of one call: one per {@link #threads} packs of 16 bytes (LL: lines of 8 bytes), from 1 to
     * {@link #GRID_MAX} ({@link #LL_GRID_MAX} for LL, whose threads each wait for their own lines and
     * gain from more of them in flight). Both barrier algorithms size the grid by the whole buffer:
     * two-shot copies and gathers all of it (only its reduce handles one rank's part).
     */
    static int blocks(int algo, long count, DataType type) {
        long bytes = count * type.byteSize();
        boolean pushes = algo == LL || algo == LAMPORT || algo == LAMPORT_TWO_SHOT;
        long items = algo == LL ? (bytes + 7) / 8 : pushes ? (bytes + 15) / 16 : bytes / 16;
        int t = threads(algo);
        return (int) Math.max(1, Math.min(pushes ? LL_GRID_MAX : GRID_MAX, (items + t - 1) / t));
    }

    /** The kernel's code of an algorithm (ALGO_* in custom_allreduce.cu). */
    static int kernelAlgo(int algo) {
        return switch (algo) {
            case ONE_SHOT -> 0;
            case TWO_SHOT -> 1;
            case LL -> 2;
            case LAMPORT -> 3;
            case LAMPORT_TWO_SHOT -> 4;
            default -> throw new IllegalArgumentException("not a kernel algorithm: " + algo);
        };
    }

    private static int property(String name, int def, int min, int max) {
        String v = System.getProperty(name);
        if (v == null || v.isBlank() || v.strip().equals("0") && def == 0) {
            return def;
        }
        try {
            int i = Integer.parseInt(v.strip());
            if (i >= min && i <= max) {
                return i;
            }
        } catch (NumberFormatException ignored) {
            // the error below
        }
        throw new IllegalArgumentException("-D" + name + "=" + v + " is not an integer from " + min + " to " + max);
    }

    // ------------------------------------------------------------------ the call

    /**
     * The dispatch point of {@link NcclLaunch}: launches the all-reduce with jccl's kernels when the
     * tuner picks them and returns true; false leaves it to NCCL. Under the communicator's lock with
     * its context current.
     */
    boolean launch(long sp, long rp, long count, DataType type, int ncclRedOp, long stream) {
        int algo = choose(mode, size, count, type, ncclRedOp);
        if (algo == NCCL || NcclGroup.current() != null) {
            return false;
        }
        checkStatus();
        long fn = type == DataType.FLOAT32 ? fnF32 : type == DataType.FLOAT16 ? fnF16 : fnBf16;
        launchKernel(fn, blocks(algo, count, type), sp, rp, count, algo, stream);
        launches++;
        return true;
    }

    private void launchKernel(long fn, int grid, long sp, long rp, long count, int algo, long stream) {
        MemorySegment a = args;
        a.set(JAVA_LONG, 0, buffer);
        a.set(JAVA_LONG, 8, sp);
        a.set(JAVA_LONG, 16, rp);
        a.set(JAVA_LONG, 24, count);
        a.set(JAVA_INT, 32, rank);
        a.set(JAVA_INT, 40, size);
        a.set(JAVA_INT, 48, kernelAlgo(algo));
        a.set(JAVA_LONG, 56, SLOT_BYTES);
        a.set(JAVA_LONG, 64, hostWords);
        a.set(JAVA_LONG, 72, hostWords + 4);
        a.set(JAVA_LONG, 80, spinLimitNanos);
        MemorySegment c = launchConfig;
        if (c != null) {
            c.set(JAVA_INT, LaunchConfigDescriptor.GRID_X, grid);
            c.set(JAVA_INT, LaunchConfigDescriptor.BLOCK_X, threads(algo));
            c.set(JAVA_LONG, LaunchConfigDescriptor.STREAM, stream);
            CudaDriver.launchKernelEx(c, fn, params);
        } else {
            CudaDriver.launchKernel(fn, grid, 1, 1, threads(algo), 1, 1, 0, stream, params);
        }
    }

    /** A kernel that gave up (spin limit) or was aborted leaves its mark in the status word: the communicator fails. */
    private void checkStatus() {
        JcclException e = quitEarly();
        if (e != null) {
            NcclHealth.abortWith(comm, e);
            throw e;
        }
    }

    /**
     * The failure a kernel recorded when it returned without writing its output (it gave up at the
     * spin limit, or saw the abort word), or null. Checked when any work of the communicator
     * completes, so that such a call fails itself instead of returning an unwritten buffer. A read of
     * host memory.
     */
    JcclException quitEarly() {
        int s = (int) JAVA_INT.varHandle().getVolatile(words, 4L);
        if (s == 0) {
            return null;
        }
        return new JcclException("jccl's all-reduce kernel on " + comm.describe() + " "
                + (s == 1 ? "waited more than " + Duration.ofNanos(spinLimitNanos) + " for a peer (a rank died or "
                + "stopped calling all-reduce) and gave up" : "was aborted") + " without writing its output: create a new "
                + "communicator");
    }

    /** Makes every kernel of this communicator that waits at a barrier return (its output unwritten). Any thread. */
    void abort() {
        JAVA_INT.varHandle().setVolatile(words, 0L, 1);
    }

    /** The abort word, for tests. */
    boolean aborted() {
        return (int) JAVA_INT.varHandle().getVolatile(words, 0L) != 0;
    }

    /** For tests: launches the all-reduce on {@code stream} (e.g. a capturing one) with {@code algo}, no work, no checks. */
    void launchForTest(DeviceBuffer send, DeviceBuffer recv, int algo, CudaStream stream) {
        DataType type = send.type();
        long fn = type == DataType.FLOAT32 ? fnF32 : type == DataType.FLOAT16 ? fnF16 : fnBf16;
        comm.lock.lock();
        try {
            comm.device.makeCurrent();
            launchKernel(fn, blocks(algo, send.count(), type), send.rawPointer(), recv.rawPointer(), send.count(),
                    algo, stream.handle());
        } finally {
            comm.lock.unlock();
        }
    }

    // ------------------------------------------------------------------ set-up

    /**
     * Zeroes what the kernels read before any rank wrote it in a new buffer {@code buf} of device
     * {@code d} (current): the peer table, epoch, barrier flags and the LL areas, whose flags must
     * start below any epoch (the data slots are always written before they are read); fills the
     * Lamport areas with 0xFF bytes, their "nothing arrived" word. Returns once
     * the zeros are there: cuMemsetD8 may return before it ran, and the kernels run on streams that
     * do not wait for the legacy stream, so a first kernel could otherwise read what a freed buffer
     * left at the same address.
     */
    private static void prepareBuffer(CudaDevice d, long buf) {
        CudaDriver.memsetD8(buf, (byte) 0, DATA_OFF);
        CudaDriver.memsetD8(buf + LL_OFF, (byte) 0, LP_OFF - LL_OFF);
        CudaDriver.memsetD8(buf + LP_OFF, (byte) 0xFF, BUFFER_BYTES - LP_OFF); // Lamport and gather areas
        d.awaitLegacyStream();
    }

    /**
     * Collective, for a communicator of {@link NcclCommunicator#create}: allocates this rank's buffer,
     * exchanges IPC handles with an ncclAllGather on {@code c}, opens the peers' buffers and agrees
     * (ncclAllReduce MIN) that every rank could; then {@code c} uses the kernels. Off (NCCL only)
     * when JCCL_ALGO is nccl, for 1 or more than 8 ranks, when a rank is on another host or cannot
     * map a peer, or when the ranks are a mix of processes and threads of one process.
     */
    static void attach(NcclCommunicator c) {
        int mode = mode(algoSetting(c));
        int n = c.size();
        if (mode == NCCL || n < 2 || n > MAX_RANKS) {
            return;
        }
        String why = null;
        long buf = 0, words = 0;
        byte[] handle = new byte[64];
        try {
            if (c.device.computeCapabilityMajor() < 8) {
                why = "GPU " + c.device.ordinal() + " is sm_" + c.device.computeCapabilityMajor()
                        + c.device.computeCapabilityMinor() + "; the kernels need sm_80 or newer";
            } else {
                image();
                c.device.makeCurrent();
                buf = CudaDriver.memAlloc(BUFFER_BYTES);
                prepareBuffer(c.device, buf);
                words = CudaDriver.memAllocHost(8);
                MemorySegment.ofAddress(words).reinterpret(8).fill((byte) 0);
                handle = CudaDriver.ipcGetMemHandle(buf);
            }
        } catch (RuntimeException e) {
            why = "setting up on rank " + c.rank() + " failed: " + e.getMessage();
        }
        byte[] all = exchange(c, blob(c, buf, handle, why == null));
        long myPid = ProcessHandle.current().pid();
        long[] ptrs = new long[n];
        boolean samePid = true, otherPid = true;
        for (int p = 0; p < n; p++) {
            long pid = word(all, p, 0);
            if (word(all, p, 88) == 0 && why == null) {
                why = "rank " + p + " could not set up";
            }
            if (word(all, p, 8) != word(all, c.rank(), 8) && why == null) {
                why = "rank " + p + " is on another host";
            }
            if (p != c.rank()) {
                samePid &= pid == myPid;
                otherPid &= pid != myPid;
            }
        }
        if (why == null && !samePid && !otherPid) {
            why = "the ranks are a mix of processes and threads of one process";
        }
        List<Long> opened = new ArrayList<>();
        List<CudaDevice> held = new ArrayList<>();
        if (why == null) {
            try {
                for (int p = 0; p < n; p++) {
                    if (p == c.rank()) {
                        ptrs[p] = buf;
                    } else if (samePid) {
                        CudaDevice d = openByUuid(Arrays.copyOfRange(all, p * BLOB + 16, p * BLOB + 32));
                        held.add(d);
                        c.device.enablePeerAccess(d);
                        c.device.makeCurrent();
                        ptrs[p] = word(all, p, 32);
                    } else {
                        c.device.makeCurrent();
                        long q = CudaDriver.ipcOpenMemHandle(Arrays.copyOfRange(all, p * BLOB + 40, p * BLOB + 104));
                        opened.add(q);
                        ptrs[p] = q;
                    }
                }
            } catch (RuntimeException e) {
                why = "mapping the peers' buffers on rank " + c.rank() + " failed: " + e.getMessage();
            }
        }
        boolean agreed = agree(c, why == null);
        if (!agreed || why != null) {
            String reason = why != null ? why : "another rank could not map its peers";
            LOG.info(c.rank(), () -> "jccl's all-reduce kernels are off on " + c.describe() + ": " + reason
                    + "; every all-reduce runs on NCCL");
            if (mode != AUTO) {
                LOG.warn(c.rank(), "JCCL_ALGO asks for jccl's all-reduce kernels, but " + reason + ": NCCL runs instead");
            }
            c.device.makeCurrent();
            for (long q : opened) {
                CudaDriver.ipcCloseMemHandle(q);
            }
            if (buf != 0) {
                CudaDriver.memFree(buf);
            }
            if (words != 0) {
                CudaDriver.memFreeHost(words);
            }
            held.forEach(CudaDevice::close);
            return;
        }
        CustomAllReduce car = new CustomAllReduce(c, mode, buf, words);
        car.opened.addAll(opened);
        car.remotePeers = otherPid;
        if (samePid) {
            car.local = Local.join(c, all, held);
        }
        car.writePeers(ptrs);
        c.car = car;
        String how = otherPid ? "CUDA IPC" : "peer access";
        LOG.info(c.rank(), () -> "jccl's all-reduce kernels are on for " + c.describe() + " ("
                + how + ", JCCL_ALGO " + (mode == AUTO ? "auto" : algoSetting(c)) + ", "
                + (car.serializedLaunch() ? "programmatic dependent launch" : "plain launches") + ")");
    }

    /**
     * For {@link NcclCommunicator#initAll}: one process drives every GPU, so the buffers are known
     * here and peers map each other with peer access; no collective call.
     */
    static void attachAll(List<NcclCommunicator> comms) {
        int n = comms.size();
        if (n < 2 || n > MAX_RANKS) {
            return;
        }
        int mode = mode(algoSetting(comms.get(0)));
        if (mode == NCCL) {
            return;
        }
        for (NcclCommunicator a : comms) {
            if (a.device.computeCapabilityMajor() < 8) {
                LOG.info(0, () -> "jccl's all-reduce kernels are off: GPU " + a.device.ordinal() + " is older than sm_80");
                return;
            }
            for (NcclCommunicator b : comms) {
                if (a != b && !a.device.canAccessPeer(b.device)) {
                    LOG.info(0, () -> "jccl's all-reduce kernels are off: GPU " + a.device.ordinal() + " cannot access GPU "
                            + b.device.ordinal() + " directly");
                    return;
                }
            }
        }
        image();
        long[] ptrs = new long[n];
        long[] words = new long[n];
        for (int i = 0; i < n; i++) {
            NcclCommunicator c = comms.get(i);
            c.device.makeCurrent();
            ptrs[i] = CudaDriver.memAlloc(BUFFER_BYTES);
            prepareBuffer(c.device, ptrs[i]);
            words[i] = CudaDriver.memAllocHost(8);
            MemorySegment.ofAddress(words[i]).reinterpret(8).fill((byte) 0);
            for (NcclCommunicator d : comms) {
                if (d != c) {
                    c.device.enablePeerAccess(d.device);
                }
            }
        }
        Local group = new Local(n);
        for (int i = 0; i < n; i++) {
            NcclCommunicator c = comms.get(i);
            CustomAllReduce car = new CustomAllReduce(c, mode, ptrs[i], words[i]);
            car.local = group;
            group.add(c.device, ptrs[i]);
            car.writePeers(ptrs);
            c.car = car;
        }
        boolean pdl = comms.getFirst().car.serializedLaunch();
        LOG.info(0, () -> "jccl's all-reduce kernels are on for " + n + " GPUs of this process (peer access, "
                + (pdl ? "programmatic dependent launch" : "plain launches") + ")");
    }

    private void writePeers(long[] ptrs) {
        comm.device.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(8L * MAX_RANKS, 8);
            for (int p = 0; p < ptrs.length; p++) {
                s.setAtIndex(JAVA_LONG, p, ptrs[p]);
            }
            CudaDriver.memcpyHtoD(buffer + PEERS_OFF, s, 8L * MAX_RANKS);
        }
    }

    private static byte[] blob(NcclCommunicator c, long buf, byte[] handle, boolean ok) {
        MemorySegment b = MemorySegment.ofArray(new byte[BLOB]);
        b.set(JAVA_LONG.withByteAlignment(1), 0, ProcessHandle.current().pid());
        b.set(JAVA_LONG.withByteAlignment(1), 8, hostId());
        MemorySegment.copy(c.device.uuid(), 0, b, JAVA_BYTE, 16, 16);
        b.set(JAVA_LONG.withByteAlignment(1), 32, buf);
        MemorySegment.copy(handle, 0, b, JAVA_BYTE, 40, 64);
        b.set(JAVA_LONG.withByteAlignment(1), 88 + 16, 0); // (padding)
        b.set(JAVA_LONG.withByteAlignment(1), 88, ok ? 1 : 0);
        return b.toArray(JAVA_BYTE);
    }

    private static long word(byte[] all, int rank, int off) {
        return MemorySegment.ofArray(all).get(JAVA_LONG.withByteAlignment(1), (long) rank * BLOB + off);
    }

    /** The host: its name and boot id (two containers on one host see the same boot id, and CUDA IPC works). */
    private static long hostId() {
        String boot = "";
        try {
            boot = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (IOException | RuntimeException e) {
            // not Linux: the host name alone
        }
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = "?";
        }
        return ((long) boot.hashCode() << 32) ^ host.hashCode();
    }

    /**
     * Every rank's blob, by an ncclAllGather on the communicator's data communicator and stream, called
     * directly: the set-up is not one of the user's collectives (no sequence number, no JCCL_CHECK
     * fingerprint, no flight-recorder entry). Waited for with the communicator's deadline.
     */
    private static byte[] exchange(NcclCommunicator c, byte[] mine) {
        int n = c.size();
        try (DeviceBuffer send = c.device.allocate(DataType.UINT8, BLOB);
             DeviceBuffer recv = c.device.allocate(DataType.UINT8, (long) BLOB * n);
             Arena a = Arena.ofConfined()) {
            MemorySegment h = a.allocate((long) BLOB * n, 16);
            h.copyFrom(MemorySegment.ofArray(mine));
            c.device.makeCurrent();
            CudaDriver.memcpyHtoD(send.rawPointer(), h, BLOB);
            raw(c, "ncclAllGather", () -> (int) NcclLibrary.ncclAllGather.invokeExact(send.rawPointer(), recv.rawPointer(),
                    (long) BLOB, DataType.UINT8.ncclValue(), c.comm, c.streamHandle));
            CudaDriver.memcpyDtoH(h, recv.rawPointer(), (long) BLOB * n);
            return h.toArray(JAVA_BYTE);
        }
    }

    /** Whether every rank passed {@code ok}: an ncclAllReduce MIN, called directly as in {@link #exchange}. */
    private static boolean agree(NcclCommunicator c, boolean ok) {
        try (DeviceBuffer b = c.device.allocate(DataType.INT32, 1); Arena a = Arena.ofConfined()) {
            MemorySegment h = a.allocate(JAVA_INT);
            h.set(JAVA_INT, 0, ok ? 1 : 0);
            c.device.makeCurrent();
            CudaDriver.memcpyHtoD(b.rawPointer(), h, 4);
            raw(c, "ncclAllReduce", () -> (int) NcclLibrary.ncclAllReduce.invokeExact(b.rawPointer(), b.rawPointer(), 1L,
                    DataType.INT32.ncclValue(), ReduceOp.Kind.MIN.ncclValue(), c.comm, c.streamHandle));
            CudaDriver.memcpyDtoH(h, b.rawPointer(), 4);
            return h.get(JAVA_INT, 0) == 1;
        }
    }

    private interface NcclCall {
        int call() throws Throwable;
    }

    /** One NCCL call of the set-up on the communicator's stream, waited for until the communicator's deadline. */
    private static void raw(NcclCommunicator c, String what, NcclCall call) {
        long deadline = System.nanoTime() + c.timeout().toNanos();
        String on = what + " of the set-up of jccl's all-reduce kernels on " + c.describe();
        c.device.makeCurrent();
        int r;
        try {
            r = call.call();
        } catch (Throwable t) {
            throw NcclInit.rethrow(t);
        }
        org.jccl.spi.TimedIdleStrategy idle = CudaDevice.gpuWait();
        while (r == NcclLibrary.IN_PROGRESS) { // a nonblocking data communicator (JCCL_NCCL_NONBLOCKING=1)
            r = NcclLibrary.asyncError(c.comm, c.lockedScratch);
            if (r == NcclLibrary.IN_PROGRESS) {
                timeoutCheck(c, deadline, on);
                idle.idle();
            }
        }
        if (r != NcclLibrary.SUCCESS) {
            throw new NcclException(on, r, NcclLibrary.errorString(r), NcclLibrary.lastError(c.comm));
        }
        while ((r = CudaDriver.streamQuery(c.streamHandle)) != 0) {
            if (r != NOT_READY) {
                throw CudaDriver.error(r, "cuStreamQuery after " + on);
            }
            timeoutCheck(c, deadline, on);
            idle.idle();
        }
    }

    private static void timeoutCheck(NcclCommunicator c, long deadline, String on) {
        if (System.nanoTime() - deadline > 0) {
            throw new org.jccl.CollectiveTimeoutException(on + " did not complete within " + c.timeout()
                    + " (a rank did not create the communicator, or JCCL_ALGO differs between ranks)", java.util.List.of());
        }
    }

    private static CudaDevice openByUuid(byte[] uuid) {
        for (int i = 0; i < CudaDevice.count(); i++) {
            CudaDevice d = CudaDevice.open(i);
            if (Arrays.equals(d.uuid(), uuid)) {
                return d;
            }
            d.close();
        }
        throw new IllegalStateException("no visible GPU has the peer's uuid (CUDA_VISIBLE_DEVICES differs between threads?)");
    }

    // ------------------------------------------------------------------ teardown

    /**
     * At close, before NCCL's finalize, with every work of this communicator finished: when the peers
     * are other processes, one more kernel (a call with no elements: its barrier only) fences with
     * them, so that none still reads this rank's buffer when {@link #close} frees it. Waited for
     * until {@code deadline}; past it the abort word ends the kernel. Under the lock.
     */
    void quiesce(long deadline) {
        if (!remotePeers || closed) {
            return;
        }
        try {
            comm.device.makeCurrent();
            launchKernel(fnF32, 1, 0, 0, 0, ONE_SHOT, comm.streamHandle);
            org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
            int r;
            while ((r = CudaDriver.streamQuery(comm.streamHandle)) != 0) {
                if (r != NOT_READY || System.nanoTime() - deadline > 0) {
                    abort();
                    CudaDriver.streamSynchronize(comm.streamHandle); // returns within microseconds of the abort
                    LOG.warn(rank, "a peer did not reach close() of " + comm.describe() + " in time");
                    return;
                }
                b.idle();
            }
        } catch (RuntimeException e) {
            abort();
            LOG.warn(rank, "the closing fence of jccl's all-reduce on " + comm.describe() + " failed: " + e);
        }
    }

    /** Frees this rank's resources (after NCCL's teardown: nothing runs on the communicator's streams). */
    void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (!comm.device.isClosed()) {
                comm.device.makeCurrent();
                for (long q : opened) {
                    CudaDriver.ipcCloseMemHandle(q);
                }
                module.close();
            }
            if (!comm.device.isClosed()) {
                CudaDriver.memFreeHost(hostWords); // read by this rank's kernels only, which are over
                if (local == null) {
                    CudaDriver.memFree(buffer);
                }
            }
            if (local != null) {
                local.release(); // may make another GPU's context current
                if (!comm.device.isClosed()) {
                    comm.device.makeCurrent();
                }
            }
        } catch (RuntimeException e) {
            LOG.warn(rank, "freeing jccl's all-reduce buffers of " + comm.describe() + " failed: " + e);
        }
    }

    /**
     * The ranks of one process: their buffers are freed when the last of them closes, so no rank frees
     * a buffer that another's last kernel may still read. Each member's primary context is retained
     * until then.
     */
    private static final class Local {
        private static final java.util.Map<String, Local> BY_KEY = new java.util.concurrent.ConcurrentHashMap<>();
        private final int members;
        private final List<long[]> owned = new ArrayList<>(); // {device ordinal, retained context, buffer}
        private int released;
        private String key;

        Local(int members) {
            this.members = members;
        }

        /** A communicator of {@link NcclCommunicator#create} whose peers are threads of this process. */
        static Local join(NcclCommunicator c, byte[] all, List<CudaDevice> held) {
            StringBuilder k = new StringBuilder();
            for (int p = 0; p < c.size(); p++) {
                k.append(Long.toHexString(word(all, p, 32))).append('/');
            }
            String key = k.toString();
            Local l = BY_KEY.computeIfAbsent(key, x -> new Local(c.size()));
            l.key = key;
            held.forEach(CudaDevice::close); // peer access stays enabled while the contexts live; each member retains its own
            l.add(c.device, word(all, c.rank(), 32));
            return l;
        }

        synchronized void add(CudaDevice d, long buffer) {
            long ctx = CudaDriver.primaryCtxRetain(CudaDriver.device(d.ordinal()));
            owned.add(new long[] {d.ordinal(), ctx, buffer});
        }

        synchronized void release() {
            if (++released < members) {
                return;
            }
            if (key != null) {
                BY_KEY.remove(key);
            }
            for (long[] o : owned) {
                try {
                    CudaDriver.setCurrent(o[1]);
                    CudaDriver.memFree(o[2]);
                } catch (RuntimeException e) {
                    LOG.warn(0, "freeing jccl's all-reduce buffer on GPU " + o[0] + " failed: " + e);
                } finally {
                    CudaDriver.primaryCtxRelease(CudaDriver.device((int) o[0]));
                }
            }
        }
    }

    static {
        // keep VarHandle's class initialised before the first abort from a watchdog thread
        VarHandle.releaseFence();
    }
}
