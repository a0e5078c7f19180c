package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;

/**
 * jccl's own all-reduce kernels ({@link CustomAllReduce}) on 2 or more GPUs of one process: every
 * result is compared bit for bit with a host reference that sums in fp32 in rank order 0..n-1 and
 * rounds once (the order the kernels document). Counts 1, small, prime, large; in place, out of
 * place and unaligned; pipelined calls of changing sizes; a CUDA graph replayed; a missing peer.
 * The ranks are threads of one process ({@link NcclCommunicator#initAll}: peer access); the
 * processes case (CUDA IPC) runs in the conformance kit ({@link NcclConformanceTest}) and the fault
 * tests of {@link NcclProcessTest}, where the tuner gives small float sums to the kernels.
 */
class CustomAllReduceTest {
    private static final Duration LIMIT = Duration.ofSeconds(120);
    private static final long[] COUNTS = {1, 2, 3, 7, 8, 9, 1009, 65537, 262139};
    private static final DataType[] TYPES = {DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16};

    private static int gpus() {
        Gpu.assume(2);
        return Math.min(CudaDevice.count(), 8);
    }

    /**
     * Runs {@code task} once per rank, each on its own thread, on communicators over every GPU with
     * {@code JCCL_ALGO=algo}; every rank must return "ok".
     */
    private static void onEachRank(String algo, java.util.function.Function<NcclCommunicator, String> task)
            throws Exception {
        int n = gpus();
        List<CudaDevice> devs = Gpu.openAll().subList(0, n);
        List<NcclCommunicator> comms = null;
        try {
            comms = comms(devs, algo, Duration.ofSeconds(60));
            Gpu.assertEachOk(comms, LIMIT, task);
        } finally {
            Gpu.closeAll(comms, devs);
        }
    }

    private static List<NcclCommunicator> comms(List<CudaDevice> devs, String algo, Duration timeout) {
        return org.jccl.internal.Settings.with(Map.of("JCCL_ALGO", algo),
                () -> NcclCommunicator.initAll(devs, timeout));
    }

    @Test
    void everyKernelEqualsTheRankOrderSumBitwiseForEveryTypeAndCount() throws Exception {
        int n = gpus();
        for (String algo : new String[] {"oneshot", "twoshot", "ll", "lamport", "lamport2"}) {
            List<CudaDevice> devs = Gpu.openAll().subList(0, n);
            List<NcclCommunicator> comms = null;
            try {
                comms = comms(devs, algo, Duration.ofSeconds(60));
                for (NcclCommunicator c : comms) {
                    assertTrue(c.car != null, "the kernels are attached on rank " + c.rank());
                }
                Gpu.assertEachOk(comms, LIMIT, c -> {
                    for (DataType t : TYPES) {
                        for (long count : COUNTS) {
                            if (beyond(algo, count * t.byteSize())) {
                                continue; // NCCL's (its own summation order)
                            }
                            for (int shape = 0; shape < 3; shape++) { // out of place, in place, unaligned
                                String r = check(c, t, count, shape, 7 * count + t.ordinal());
                                if (!r.equals("ok")) {
                                    return algo + " " + t + " x " + count + " shape " + shape + ": " + r;
                                }
                            }
                        }
                    }
                    long expected = 0;
                    for (DataType t : TYPES) {
                        for (long count : COUNTS) {
                            expected += beyond(algo, count * t.byteSize()) ? 0 : 3;
                        }
                    }
                    return c.car.launches == expected ? "ok" : "rank " + c.rank() + " ran " + c.car.launches
                            + " kernels, expected " + expected;
                });
            } finally {
                Gpu.closeAll(comms, devs);
            }
        }
    }

    /** Whether a forced algorithm leaves a call of {@code bytes} to NCCL (more than its area takes). */
    private static boolean beyond(String algo, long bytes) {
        return algo.equals("ll") && bytes > CustomAllReduce.LL_MAX || algo.startsWith("lamport") && bytes > CustomAllReduce.LAMPORT_MAX;
    }

    /**
     * Lamport's areas must be emptied before each reuse, whatever runs in between: a sequence of calls
     * of random algorithms and sizes (growing and shrinking, so a call empties more or less than it
     * writes), with inputs that hold -0.0, infinities and the word that marks an empty line
     * (0xFFFFFFFF: a NaN in fp32 and two NaNs in fp16/bf16), which must arrive as a NaN without
     * stalling the line. Every result against the rank-order reference (NaN where the reference is NaN).
     */
    @Test
    void lamportCallsStayCorrectWhateverRunsBetweenThemAndForEveryBitPattern() throws Exception {
        onEachRank("auto", c -> {
            int[] algos = {CustomAllReduce.LAMPORT, CustomAllReduce.LAMPORT, CustomAllReduce.LAMPORT_TWO_SHOT,
                    CustomAllReduce.LAMPORT_TWO_SHOT, CustomAllReduce.LL, CustomAllReduce.ONE_SHOT, CustomAllReduce.TWO_SHOT};
            long[] counts = {1, 5, 4099, 30011, CustomAllReduce.LAMPORT_MAX / 4, CustomAllReduce.LAMPORT_MAX / 2 - 3};
            SplittableRandom pick = new SplittableRandom(77); // the same sequence on every rank
            try (CudaStream s = c.device().createStream()) {
                for (int step = 0; step < 60; step++) {
                    int algo = algos[pick.nextInt(algos.length)];
                    DataType t = TYPES[pick.nextInt(TYPES.length)];
                    long count = counts[pick.nextInt(counts.length)];
                    if (t == DataType.FLOAT32 && count > CustomAllReduce.LAMPORT_MAX / 4) {
                        count = CustomAllReduce.LAMPORT_MAX / 4;
                    }
                    if (algo == CustomAllReduce.LL && count * t.byteSize() > CustomAllReduce.LL_MAX) {
                        algo = CustomAllReduce.LAMPORT;
                    }
                    int cnt = (int) count;
                    String r;
                    try (DeviceBuffer send = c.device().allocate(t, cnt); DeviceBuffer recv = c.device().allocate(t, cnt)) {
                        r = special(c, t, cnt, send, recv, algo, s, 5000 + step);
                    }
                    if (!r.equals("ok")) {
                        return "step " + step + " (algo " + algo + ", " + t + " x " + cnt + "): " + r;
                    }
                }
                return "ok";
            } catch (Throwable e) {
                return "failed: " + e;
            }
        });
    }

    /** One launchForTest call of {@code algo} with inputs holding special values, checked against the reference. */
    private static String special(NcclCommunicator c, DataType t, int cnt, DeviceBuffer send, DeviceBuffer recv, int algo,
                                  CudaStream s, long seed) {
        float[][] x = inputs(c.size(), cnt, seed);
        SplittableRandom g = new SplittableRandom(seed);
        for (int r = 0; r < x.length; r++) {
            for (int i = 0; i < cnt; i++) {
                int k = g.nextInt(40);
                x[r][i] = k == 0 ? -0.0f : k == 1 ? Float.POSITIVE_INFINITY : k == 2 ? Float.intBitsToFloat(0xFFFFFFFF) : x[r][i];
            }
        }
        if (cnt > 1) {
            for (float[] xr : x) {
                xr[cnt / 2 & ~1] = -0.0f; // every rank: the sum is -0.0
                xr[(cnt / 2 & ~1) + 1] = -0.0f;
            }
        }
        if (t == DataType.FLOAT32) {
            send.copyFrom(HostBuffer.of(x[c.rank()]));
        } else {
            for (float[] xr : x) { // a NaN at an even index becomes the whole 32-bit word 0xFFFFFFFF: two 16-bit NaNs
                for (int i = 0; i + 1 < cnt; i += 2) {
                    if (Float.isNaN(xr[i])) {
                        xr[i + 1] = Float.NaN;
                    }
                }
            }
            short[] b = toBits(t, x[c.rank()]);
            for (int i = 0; i + 1 < cnt; i += 2) {
                if (Float.isNaN(x[c.rank()][i])) {
                    b[i] = (short) 0xFFFF;
                    b[i + 1] = (short) 0xFFFF;
                }
            }
            send.copyFrom(HostBuffer.of(t, b));
        }
        c.car.launchForTest(send, recv, algo, s);
        s.synchronize(Duration.ofSeconds(30));
        JcclException quit = c.car.quitEarly();
        if (quit != null) {
            return quit.getMessage();
        }
        if (t == DataType.FLOAT32) {
            float[] got = new float[cnt];
            recv.copyTo(HostBuffer.of(got));
            float[] want = sumF32(x);
            for (int i = 0; i < cnt; i++) {
                boolean same = Float.isNaN(want[i]) ? Float.isNaN(got[i])
                        : Float.floatToRawIntBits(want[i]) == Float.floatToRawIntBits(got[i]);
                if (!same) {
                    return "element " + i + ": got " + got[i] + ", want " + want[i];
                }
            }
            return "ok";
        }
        short[] got = new short[cnt];
        recv.copyTo(HostBuffer.of(t, got));
        short[] want = sumBits(t, x);
        for (int i = 0; i < cnt; i++) {
            boolean same = Float.isNaN(fromBits(t, want[i])) ? Float.isNaN(fromBits(t, got[i])) : got[i] == want[i];
            if (!same) {
                return "element " + i + ": got 0x" + Integer.toHexString(got[i] & 0xffff) + ", want 0x"
                        + Integer.toHexString(want[i] & 0xffff);
            }
        }
        return "ok";
    }

    @Test
    void pipelinedCallsOfChangingSizesAndNcclFallbacksStayCorrect() throws Exception {
        onEachRank("auto", c -> {
            SplittableRandom sizes = new SplittableRandom(42);
            int calls = 96;
            List<DeviceBuffer> bufs = new ArrayList<>();
            List<float[]> expect = new ArrayList<>();
            List<NcclWork> works = new ArrayList<>();
            List<float[]> bound = new ArrayList<>(); // NCCL's calls: its own summation order (null: bitwise)
            try {
                for (int i = 0; i < calls; i++) {
                    long count = i % 16 == 5 ? 0 : 1 + sizes.nextInt(i % 3 == 0 ? 200_000 : 3000);
                    ReduceOp op = i % 11 == 3 ? ReduceOp.MAX : ReduceOp.SUM;
                    float[][] in = inputs(c.size(), (int) count, 1000 + i);
                    DeviceBuffer b = c.device().allocate(DataType.FLOAT32, count);
                    b.copyFrom(HostBuffer.of(in[c.rank()]));
                    bufs.add(b);
                    expect.add(op == ReduceOp.SUM ? sumF32(in) : maxF32(in));
                    long before = c.car.launches;
                    works.add(c.allReduceAsync(b, op));
                    // jccl's kernels sum in rank order (bitwise); a call NCCL runs sums in NCCL's
                    // order (a ring from rank to rank on 4 GPUs), which may round differently
                    bound.add(op == ReduceOp.SUM && c.car.launches == before ? orderBound(in) : null);
                }
                for (NcclWork w : works) {
                    w.await();
                }
                for (int i = 0; i < calls; i++) {
                    float[] got = new float[(int) bufs.get(i).count()];
                    bufs.get(i).copyTo(HostBuffer.of(got));
                    String d = bound.get(i) == null ? firstDiff(expect.get(i), got)
                            : firstBeyond(expect.get(i), got, bound.get(i));
                    if (d != null) {
                        return "call " + i + " (" + got.length + " floats): " + d;
                    }
                }
                return c.car.launches > calls / 2 ? "ok" : "only " + c.car.launches + " calls ran the kernels";
            } finally {
                bufs.forEach(DeviceBuffer::close);
            }
        });
    }

    @Test
    void aCapturedGraphReplaysCorrectlyBetweenOrdinaryCalls() throws Exception {
        onEachRank("auto", c -> {
            int count = 4099;
            try (DeviceBuffer in = c.device().allocate(DataType.FLOAT32, count);
                 DeviceBuffer out = c.device().allocate(DataType.FLOAT32, count);
                 CudaStream s = c.device().createStream();
                 Arena a = Arena.ofConfined()) {
                MemorySegment slot = a.allocate(8, 8);
                c.device().makeCurrent();
                Graphs.check((int) Graphs.BEGIN.invokeExact(s.handle(), 2 /* relaxed */), "cuStreamBeginCapture");
                for (int algo : new int[] {CustomAllReduce.ONE_SHOT, CustomAllReduce.LAMPORT, CustomAllReduce.TWO_SHOT,
                        CustomAllReduce.LL, CustomAllReduce.LAMPORT, CustomAllReduce.LAMPORT_TWO_SHOT}) {
                    c.car.launchForTest(in, out, algo, s);
                }
                Graphs.check((int) Graphs.END.invokeExact(s.handle(), slot), "cuStreamEndCapture");
                long graph = slot.get(JAVA_LONG, 0);
                Graphs.check((int) Graphs.INSTANTIATE.invokeExact(slot, graph, 0L), "cuGraphInstantiateWithFlags");
                long exec = slot.get(JAVA_LONG, 0);
                try {
                    for (int replay = 0; replay < 4; replay++) {
                        float[][] x = inputs(c.size(), count, 500 + replay);
                        in.copyFrom(HostBuffer.of(x[c.rank()]));
                        c.device().makeCurrent();
                        Graphs.check((int) Graphs.LAUNCH.invokeExact(exec, s.handle()), "cuGraphLaunch");
                        s.synchronize(Duration.ofSeconds(30));
                        float[] got = new float[count];
                        out.copyTo(HostBuffer.of(got));
                        String d = firstDiff(sumF32(x), got);
                        if (d != null) {
                            return "replay " + replay + ": " + d;
                        }
                        // an ordinary call between replays: the epoch on the device carries over
                        String r = check(c, DataType.FLOAT32, 333, 0, 900 + replay);
                        if (!r.equals("ok")) {
                            return "call after replay " + replay + ": " + r;
                        }
                    }
                } finally {
                    c.device().makeCurrent();
                    Graphs.check((int) Graphs.EXEC_DESTROY.invokeExact(exec), "cuGraphExecDestroy");
                    Graphs.check((int) Graphs.DESTROY.invokeExact(graph), "cuGraphDestroy");
                }
                return "ok";
            } catch (Throwable t) {
                return "failed: " + t;
            }
        });
    }

    /**
     * Programmatic dependent launch (on sm_90 and later the kernels go out with it): a call still sees
     * everything the kernel before it in the stream wrote. Each algorithm right after a kernel that
     * writes its input only after 200 us on the GPU's timer (the input held zeros before), then a
     * chain of in-place calls of every algorithm, each reading what the one before wrote; every result
     * against the rank-order reference, bitwise.
     */
    @Test
    void aCallSeesWhatTheKernelBeforeItWroteAsItsLaunchOverlapsThatKernel() throws Exception {
        String ptx;
        try (java.io.InputStream in = CustomAllReduceTest.class.getResourceAsStream("/slow_fill.ptx")) {
            ptx = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII);
        }
        onEachRank("auto", c -> {
            boolean expected = CustomAllReduce.PDL && CudaDriver.hasLaunchKernelEx()
                    && c.device().computeCapabilityMajor() >= 9;
            if (c.car.serializedLaunch() != expected) {
                return "rank " + c.rank() + " launches with programmatic dependent launch: "
                        + c.car.serializedLaunch() + ", expected " + expected;
            }
            int cnt = 30011;
            int[] algos = {CustomAllReduce.ONE_SHOT, CustomAllReduce.TWO_SHOT, CustomAllReduce.LL,
                    CustomAllReduce.LAMPORT, CustomAllReduce.LAMPORT_TWO_SHOT};
            try (CudaModule m = CudaModule.loadPtx(c.device(), ptx); CudaStream s = c.device().createStream();
                 DeviceBuffer send = c.device().allocate(DataType.FLOAT32, cnt);
                 DeviceBuffer recv = c.device().allocate(DataType.FLOAT32, cnt)) {
                for (int step = 0; step < algos.length + 1; step++) {
                    boolean chain = step == algos.length;
                    float[][] x = new float[c.size()][cnt];
                    for (int r = 0; r < c.size(); r++) {
                        for (int i = 0; i < cnt; i++) {
                            x[r][i] = (r + 1) * 0.25f + step + (i % 1024);
                        }
                    }
                    send.copyFrom(HostBuffer.of(new float[cnt]));
                    c.device().makeCurrent();
                    m.launch("slow_fill", 16, 256, 0, s, send, (c.rank() + 1) * 0.25f + step, cnt, 200_000L);
                    float[] want = sumF32(x);
                    if (!chain) {
                        c.car.launchForTest(send, recv, algos[step], s);
                    } else {
                        for (int k = 0; k < 3 * algos.length; k++) {
                            c.car.launchForTest(send, send, algos[k % algos.length], s);
                            if (k > 0) {
                                float[][] same = new float[c.size()][];
                                java.util.Arrays.fill(same, want);
                                want = sumF32(same);
                            }
                        }
                    }
                    s.synchronize(Duration.ofSeconds(30));
                    JcclException quit = c.car.quitEarly();
                    if (quit != null) {
                        return "step " + step + ": " + quit.getMessage();
                    }
                    float[] got = new float[cnt];
                    (chain ? send : recv).copyTo(HostBuffer.of(got));
                    String d = firstDiff(want, got);
                    if (d != null) {
                        return (chain ? "the chain of in-place calls: " : "algo " + algos[step] + ": ") + d;
                    }
                }
                return "ok";
            } catch (Throwable t) {
                return "failed: " + t;
            }
        });
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"oneshot", "ll", "lamport", "lamport2"})
    void aPeerThatNeverCallsFailsTheCallByTheDeadlineAndTheSpinningKernelReturns(String algo) throws Exception {
        int n = gpus();
        List<CudaDevice> devs = Gpu.openAll().subList(0, n);
        List<NcclCommunicator> comms = null;
        try {
            comms = comms(devs, algo, Duration.ofSeconds(3));
            // Three calls of every rank first: the lone call's area or slot then holds the peers'
            // lines and flags of an earlier call, which must not pass for this call's.
            Gpu.assertEachOk(comms, LIMIT, r -> {
                try (DeviceBuffer x = r.device().allocate(DataType.FLOAT32, 1000)) {
                    x.clear();
                    for (int i = 0; i < 3; i++) {
                        r.allReduce(x, ReduceOp.SUM);
                    }
                    return r.car.launches == 3 ? "ok" : r.car.launches + " of 3 calls ran the kernels";
                }
            });
            NcclCommunicator c = comms.get(0);
            try (DeviceBuffer b = c.device().allocate(DataType.FLOAT32, 1000)) {
                b.clear();
                long t0 = System.nanoTime();
                try {
                    c.allReduce(b, ReduceOp.SUM); // rank 1.. never call
                    fail("the all-reduce completed without its peers");
                } catch (JcclException e) {
                    double s = (System.nanoTime() - t0) / 1e9;
                    assertTrue(s >= 2.5 && s < 15, "failed after " + s + " s: " + e);
                }
                assertTrue(c.car.aborted(), "the abort word is set");
                long t1 = System.nanoTime();
                c.stream().synchronize(Duration.ofSeconds(10)); // the kernel saw the abort word and returned
                double s = (System.nanoTime() - t1) / 1e9;
                assertTrue(s < 2, "the stream was still busy " + s + " s after the abort");
            }
        } finally {
            Gpu.closeAll(comms, devs);
        }
    }

    /**
     * A kernel that returns without writing its output fails its own call, never returning an
     * unwritten buffer as the result. Here rank 0's kernel sees the abort word, set without failing
     * the communicator (as a kernel that gave up at its spin limit leaves only the status word):
     * the call must fail at once, not at the communicator's 60 s deadline, and the communicator with it.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"oneshot", "twoshot", "ll", "lamport", "lamport2"})
    void aKernelThatReturnsWithoutItsOutputFailsItsOwnCall(String algo) throws Exception {
        int n = gpus();
        List<CudaDevice> devs = Gpu.openAll().subList(0, n);
        List<NcclCommunicator> comms = null;
        try {
            comms = comms(devs, algo, Duration.ofSeconds(60));
            NcclCommunicator c = comms.get(0);
            try (DeviceBuffer b = c.device().allocate(DataType.FLOAT32, 1000)) {
                b.clear();
                c.car.abort();
                long t0 = System.nanoTime();
                JcclException e = assertThrows(JcclException.class, () -> c.allReduce(b, ReduceOp.SUM));
                double s = (System.nanoTime() - t0) / 1e9;
                assertTrue(e.getMessage().contains("without writing its output"), e.getMessage());
                assertTrue(s < 10, "failed after " + s + " s, not at once: " + e);
                assertTrue(c.isAborted(), "the communicator failed with its call");
            }
        } finally {
            Gpu.closeAll(comms, devs);
        }
    }

    // ------------------------------------------------------------------ reference

    /** One all-reduce of {@code count} elements of {@code t}; shape 0 out of place, 1 in place, 2 unaligned slices. */
    static String check(NcclCommunicator c, DataType t, long count, int shape, long seed) {
        int n = c.size();
        int cnt = (int) count;
        float[][] x = inputs(n, cnt, seed);
        int off = shape == 2 ? 1 : 0;
        try (DeviceBuffer sb = c.device().allocate(t, cnt + off);
             DeviceBuffer rb = c.device().allocate(t, cnt + off)) {
            DeviceBuffer send = sb.slice(off, cnt);
            DeviceBuffer recv = shape == 1 ? send : rb.slice(off, cnt);
            if (t == DataType.FLOAT32) {
                send.copyFrom(HostBuffer.of(x[c.rank()]));
            } else {
                send.copyFrom(HostBuffer.of(t, toBits(t, x[c.rank()])));
            }
            c.allReduce(send, recv, ReduceOp.SUM);
            if (t == DataType.FLOAT32) {
                float[] got = new float[cnt];
                recv.copyTo(HostBuffer.of(got));
                String d = firstDiff(sumF32(x), got);
                return d == null ? "ok" : d;
            }
            short[] got = new short[cnt];
            recv.copyTo(HostBuffer.of(t, got));
            short[] want = sumBits(t, x);
            for (int i = 0; i < cnt; i++) {
                if (got[i] != want[i]) {
                    return "element " + i + ": got 0x" + Integer.toHexString(got[i] & 0xffff) + ", want 0x"
                            + Integer.toHexString(want[i] & 0xffff);
                }
            }
            return "ok";
        }
    }

    /** Rank r's input: values of mixed magnitudes and signs, so that the order of the sum shows in the bits. */
    static float[][] inputs(int n, int count, long seed) {
        float[][] x = new float[n][count];
        for (int r = 0; r < n; r++) {
            SplittableRandom g = new SplittableRandom(seed * 31 + r);
            for (int i = 0; i < count; i++) {
                x[r][i] = (float) ((g.nextDouble() * 2 - 1) * Math.scalb(1.0, g.nextInt(-8, 8)));
            }
        }
        return x;
    }

    /** The documented order: acc = x0; acc = acc + x1; ... in fp32 (Java's float addition rounds to nearest even). */
    static float[] sumF32(float[][] x) {
        float[] s = x[0].clone();
        for (int r = 1; r < x.length; r++) {
            for (int i = 0; i < s.length; i++) {
                s[i] = s[i] + x[r][i];
            }
        }
        return s;
    }

    static float[] maxF32(float[][] x) {
        float[] s = x[0].clone();
        for (int r = 1; r < x.length; r++) {
            for (int i = 0; i < s.length; i++) {
                s[i] = Math.max(s[i], x[r][i]);
            }
        }
        return s;
    }

    /** The 16-bit inputs (x rounded to the type), summed in fp32 in rank order, rounded once. */
    static short[] sumBits(DataType t, float[][] x) {
        short[][] b = new short[x.length][];
        for (int r = 0; r < x.length; r++) {
            b[r] = toBits(t, x[r]);
        }
        short[] out = new short[x[0].length];
        for (int i = 0; i < out.length; i++) {
            float acc = fromBits(t, b[0][i]);
            for (int r = 1; r < x.length; r++) {
                acc = acc + fromBits(t, b[r][i]);
            }
            out[i] = toBits(t, acc);
        }
        return out;
    }

    static short[] toBits(DataType t, float[] v) {
        short[] s = new short[v.length];
        for (int i = 0; i < v.length; i++) {
            s[i] = toBits(t, v[i]);
        }
        return s;
    }

    static short toBits(DataType t, float f) {
        if (t == DataType.FLOAT16) {
            return Float.floatToFloat16(f);
        }
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) 0x7fc0;
        }
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16); // round to nearest even
    }

    static float fromBits(DataType t, short s) {
        return t == DataType.FLOAT16 ? Float.float16ToFloat(s) : Float.intBitsToFloat((s & 0xffff) << 16);
    }

    /**
     * Per element, how far a sum of the same inputs in any order may be from the rank-order sum: each
     * of the n - 1 additions rounds by at most half an ulp of a partial sum, which is at most the sum
     * of the magnitudes; twice that for the two orders compared.
     */
    static float[] orderBound(float[][] x) {
        float[] b = new float[x[0].length];
        for (int i = 0; i < b.length; i++) {
            double abs = 0;
            for (float[] r : x) {
                abs += Math.abs(r[i]);
            }
            b[i] = (float) (2 * (x.length - 1) * abs * 0x1p-24);
        }
        return b;
    }

    static String firstBeyond(float[] want, float[] got, float[] bound) {
        for (int i = 0; i < want.length; i++) {
            if (!(Math.abs(want[i] - got[i]) <= bound[i])) {
                return "element " + i + " of " + want.length + ": got " + got[i] + ", want " + want[i] + " (+- " + bound[i]
                        + ", NCCL's summation order)";
            }
        }
        return null;
    }

    static String firstDiff(float[] want, float[] got) {
        for (int i = 0; i < want.length; i++) {
            if (Float.floatToRawIntBits(want[i]) != Float.floatToRawIntBits(got[i])) {
                return "element " + i + " of " + want.length + ": got " + got[i] + ", want " + want[i];
            }
        }
        return null;
    }

    /** The CUDA graph calls this test needs, bound here (jccl-cuda has no graph API of its own yet). */
    @SuppressWarnings("restricted")
    private static final class Graphs {
        private static final SymbolLookup CU = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
        static final MethodHandle BEGIN = bind("cuStreamBeginCapture_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
        static final MethodHandle END = bind("cuStreamEndCapture", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS));
        static final MethodHandle INSTANTIATE = bind("cuGraphInstantiateWithFlags",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
        static final MethodHandle LAUNCH = bind("cuGraphLaunch", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        static final MethodHandle EXEC_DESTROY = bind("cuGraphExecDestroy", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        static final MethodHandle DESTROY = bind("cuGraphDestroy", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));

        private static MethodHandle bind(String name, FunctionDescriptor fd) {
            return Linker.nativeLinker().downcallHandle(CU.find(name).orElseThrow(), fd);
        }

        static void check(int r, String call) {
            if (r != 0) {
                throw new IllegalStateException(call + " returned CUresult " + r);
            }
        }
    }
}
