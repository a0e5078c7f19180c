package org.jccl.examples.tp;

import java.util.Locale;
import java.util.SplittableRandom;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.Options;
import org.jccl.ReduceOp;
import org.jccl.cuda.CudaDevice;
import org.jccl.cuda.CudaStream;
import org.jccl.cuda.DeviceBuffer;
import org.jccl.cuda.Nccl;
import org.jccl.cuda.NcclCommunicator;

/**
 * The forward pass of a transformer's MLP block, {@code Y = gelu(X W1 + b1) W2 + b2}, split over
 * N GPUs the way Megatron-LM splits it: W1 by columns (rank r holds columns
 * {@code [r F/N, (r+1) F/N)} of the hidden layer, and b1's matching slice), so each rank computes
 * its slice of the hidden activations with no communication; W2 by rows (the same hidden slice),
 * so each rank's {@code H_r W2_r} is a partial sum of Y; one all-reduce (SUM) over NCCL adds the
 * partial sums, and b2 is added once after it. Every rank then holds Y, which is checked against
 * the whole MLP computed by one rank alone.
 *
 * <p>The matrix products run on the host to keep the example short (a real model runs them on
 * the GPU, e.g. with cuBLAS); the partial sums then live in GPU memory that was allocated outside
 * jccl ({@link RawCuda}, standing in for PyTorch, JCuda or any library that hands out a device
 * pointer), wrapped with {@link DeviceBuffer#wrap}, and the all-reduce runs on a stream that
 * library created, wrapped with {@link CudaStream#wrap}.
 *
 * <pre>
 *   ../../jccl run -n 2 --cp target/tensor-parallel-gpu.jar org.jccl.examples.tp.TensorParallelMlp
 * </pre>
 *
 * One process per GPU (rank r uses GPU {@code localRank}). Without a usable GPU and NCCL it prints
 * one line saying why and exits 0; a wrong result exits 1.
 */
public final class TensorParallelMlp {
    private TensorParallelMlp() {
    }

    static final int TOKENS = 32;
    static final int MODEL = 512;   // d_model
    static final int HIDDEN = 1536; // d_ff: splits evenly over 1, 2, 3, 4, 6 or 8 ranks
    static final double TOLERANCE = 1e-5; // largest |error| relative to the largest |Y|

    /** Entry point (no arguments). */
    public static void main(String[] args) throws Exception {
        Options env = Options.fromEnv();
        String why = Nccl.unavailabilityCause();
        if (why == null && CudaDevice.count() < env.localSize()) {
            why = env.localSize() + " ranks on this host need " + env.localSize() + " GPUs (one each), found "
                    + CudaDevice.count();
        }
        if (why != null) {
            if (env.rank() == 0) {
                System.out.println("tensor-parallel-gpu: skipped: " + why.lines().findFirst().orElse(why));
            }
            System.exit(0);
        }
        int code;
        try (CudaDevice gpu = CudaDevice.open(env.localRank());
             Communicator c = Jccl.init(env.withDevice(gpu))) {
            code = run(gpu, (NcclCommunicator) c);
        }
        System.exit(code);
    }

    static int run(CudaDevice gpu, NcclCommunicator comm) {
        int rank = comm.rank();
        int n = comm.size();
        if (HIDDEN % n != 0) {
            throw new IllegalArgumentException("d_ff " + HIDDEN + " does not split over " + n + " ranks");
        }
        // The whole model, the same numbers on every rank (as if every rank read one checkpoint).
        SplittableRandom rnd = new SplittableRandom(2024);
        float[] x = uniform(rnd, TOKENS * MODEL, 1);
        float[] w1 = uniform(rnd, MODEL * HIDDEN, 1 / Math.sqrt(MODEL));
        float[] b1 = uniform(rnd, HIDDEN, 0.1);
        float[] w2 = uniform(rnd, HIDDEN * MODEL, 1 / Math.sqrt(HIDDEN));
        float[] b2 = uniform(rnd, MODEL, 0.1);

        // This rank's shard: hidden units [lo, hi) (columns of W1 and b1, rows of W2).
        int lo = rank * HIDDEN / n;
        int hi = (rank + 1) * HIDDEN / n;
        float[] partial = partialOutput(x, w1, b1, w2, lo, hi); // H_r W2_r, TOKENS x MODEL

        // Partial sums to GPU memory that another library allocated, summed over the ranks by
        // NCCL on that library's stream, and back.
        gpu.makeCurrent();
        long pointer = RawCuda.memAlloc((long) TOKENS * MODEL * Float.BYTES);
        long rawStream = RawCuda.streamCreate();
        float[] y = new float[TOKENS * MODEL];
        try (DeviceBuffer d = DeviceBuffer.wrap(gpu, pointer, DataType.FLOAT32, (long) TOKENS * MODEL)) {
            CudaStream stream = CudaStream.wrap(rawStream);
            d.copyFrom(HostBuffer.of(partial));
            comm.allReduce(d, ReduceOp.SUM, stream); // returns when the stream has done it
            d.copyTo(HostBuffer.of(y));
        } finally {
            RawCuda.streamDestroy(rawStream);
            RawCuda.memFree(pointer);
        }
        for (int t = 0; t < TOKENS; t++) {
            for (int k = 0; k < MODEL; k++) {
                y[t * MODEL + k] += b2[k];
            }
        }

        // The reference: the whole MLP on one rank.
        float[] ref = partialOutput(x, w1, b1, w2, 0, HIDDEN);
        double maxErr = 0;
        double maxAbs = 0;
        for (int t = 0; t < TOKENS; t++) {
            for (int k = 0; k < MODEL; k++) {
                int i = t * MODEL + k;
                ref[i] += b2[k];
                maxErr = Math.max(maxErr, Math.abs(y[i] - ref[i]));
                maxAbs = Math.max(maxAbs, Math.abs(ref[i]));
            }
        }
        double rel = maxErr / maxAbs;
        boolean ok = rel <= TOLERANCE;
        System.out.printf(Locale.ROOT, "rank %d of %d, GPU %d (%s): hidden units [%d, %d) of %d; Y (%dx%d) after "
                        + "allReduce(SUM) differs from the one-rank MLP by %.2e relative (max |Y| %.3f): %s%n",
                rank, n, gpu.ordinal(), gpu.name(), lo, hi, HIDDEN, TOKENS, MODEL, rel, maxAbs,
                ok ? "OK" : "WRONG (tolerance " + TOLERANCE + ")");
        return ok ? 0 : 1;
    }

    /**
     * {@code gelu(X W1[:, lo:hi] + b1[lo:hi]) W2[lo:hi, :]}: one rank's partial sum of Y (without
     * b2); with {@code [0, HIDDEN)}, the whole MLP's. Accumulates in double.
     */
    static float[] partialOutput(float[] x, float[] w1, float[] b1, float[] w2, int lo, int hi) {
        float[] out = new float[TOKENS * MODEL];
        double[] h = new double[hi - lo];
        double[] acc = new double[MODEL];
        for (int t = 0; t < TOKENS; t++) {
            java.util.Arrays.fill(h, 0);
            for (int d = 0; d < MODEL; d++) {
                double xv = x[t * MODEL + d];
                int row = d * HIDDEN;
                for (int j = lo; j < hi; j++) {
                    h[j - lo] += xv * w1[row + j];
                }
            }
            java.util.Arrays.fill(acc, 0);
            for (int j = lo; j < hi; j++) {
                double a = gelu(h[j - lo] + b1[j]);
                int row = j * MODEL;
                for (int k = 0; k < MODEL; k++) {
                    acc[k] += a * w2[row + k];
                }
            }
            for (int k = 0; k < MODEL; k++) {
                out[t * MODEL + k] = (float) acc[k];
            }
        }
        return out;
    }

    /** GELU, tanh approximation (as GPT-2 and Megatron use). */
    static double gelu(double v) {
        return 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)));
    }

    static float[] uniform(SplittableRandom rnd, int count, double scale) {
        float[] a = new float[count];
        for (int i = 0; i < count; i++) {
            a[i] = (float) ((rnd.nextDouble() * 2 - 1) * scale);
        }
        return a;
    }
}
