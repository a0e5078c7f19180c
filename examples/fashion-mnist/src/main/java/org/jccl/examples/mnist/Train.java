package org.jccl.examples.mnist;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.ReduceOp;

/**
 * Synchronous data-parallel SGD on Fashion-MNIST, as PyTorch's DistributedDataParallel does it:
 * every rank starts from the same weights, takes its slice of each global batch, computes the
 * gradient of its slice, and one {@code allReduce(AVG)} gives every rank the gradient of the whole
 * batch, so every rank makes the same update and the weights stay identical without ever being
 * sent. Since the global batch does not depend on the rank count, 1, 2 or 4 ranks train the same
 * model (up to float rounding of the gradient sums) in less time.
 *
 * <pre>
 *   ../../jccl run -n 2 --cp target/fashion-mnist.jar org.jccl.examples.mnist.Train [--epochs 3] [--baseline]
 * </pre>
 *
 * Exits 1 when the ranks' weights differ at the end (they must be bitwise identical) or the test
 * accuracy stays below {@code --min-accuracy}.
 */
public final class Train {
    private Train() {
    }

    /** The command line. */
    record Config(int epochs, int batch, float lr, float momentum, int hidden, long seed, Path data,
                  double minAccuracy, boolean baseline) {
    }

    /** Entry point; see the class comment. */
    public static void main(String[] args) throws Exception {
        Config cfg = parse(args);
        int code;
        try (Communicator comm = Jccl.init()) {
            code = train(comm, cfg);
        }
        System.exit(code);
    }

    static int train(Communicator comm, Config cfg) throws Exception {
        int rank = comm.rank();
        int n = comm.size();
        if (cfg.batch % n != 0) {
            throw new IllegalArgumentException("--batch " + cfg.batch + " does not split evenly over " + n
                    + " ranks: pick a multiple of " + n);
        }
        int local = cfg.batch / n;
        FashionMnist train = FashionMnist.load(cfg.data, "train");
        FashionMnist test = FashionMnist.load(cfg.data, "t10k");
        Mlp model = new Mlp(cfg.hidden);
        float[] initial = model.init(cfg.seed);
        // Every rank made the same weights from the seed; rank 0's are broadcast anyway, as
        // DistributedDataParallel does, so that a rank with other weights could not go unnoticed.
        comm.broadcast(HostBuffer.of(initial), 0);
        float[] p = initial.clone();
        float[] velocity = new float[model.size];
        // the gradients, and after them this rank's mean loss: one all-reduce averages both
        float[] grad = new float[model.size + 1];
        HostBuffer gradBuf = HostBuffer.of(grad);
        int steps = train.count() / cfg.batch;
        if (rank == 0) {
            System.out.printf(Locale.ROOT, "fashion-mnist: %d rank%s (%s backend), MLP 784-%d-10 (%,d parameters), "
                            + "global batch %d (%d per rank), %d steps per epoch, lr %s, momentum %s%n",
                    n, n == 1 ? "" : "s", comm.backend(), cfg.hidden, model.size, cfg.batch, local, steps,
                    cfg.lr, cfg.momentum);
        }
        double[] epochSeconds = new double[cfg.epochs];
        double accuracy = 0;
        for (int epoch = 0; epoch < cfg.epochs; epoch++) {
            int[] order = shuffled(train.count(), cfg.seed + epoch); // the same order on every rank
            double lossSum = 0;
            long commNanos = 0;
            long start = System.nanoTime();
            for (int s = 0; s < steps; s++) {
                int from = s * cfg.batch + rank * local; // this rank's slice of global batch s
                grad[model.size] = model.gradient(p, train, order, from, from + local, grad);
                long t = System.nanoTime();
                comm.allReduce(gradBuf, ReduceOp.AVG);
                commNanos += System.nanoTime() - t;
                lossSum += grad[model.size];
                sgd(p, velocity, grad, model.size, cfg.lr, cfg.momentum);
            }
            epochSeconds[epoch] = (System.nanoTime() - start) / 1e9;
            // test: rank r takes every n-th image from r; one all-reduce sums correct counts and losses
            double[] eval = model.evaluate(p, test, rank, test.count(), n);
            comm.allReduce(HostBuffer.of(eval), ReduceOp.SUM);
            accuracy = 100 * eval[0] / test.count();
            if (rank == 0) {
                System.out.printf(Locale.ROOT, "epoch %d  train loss %.4f  test loss %.4f  test accuracy %.2f%%  "
                                + "time %.2f s (allReduce %.2f s)  %,.0f samples/s%n",
                        epoch + 1, lossSum / steps, eval[1] / test.count(), accuracy, epochSeconds[epoch],
                        commNanos / 1e9, steps * (double) cfg.batch / epochSeconds[epoch]);
            }
        }

        int code = 0;
        // Every rank applied the same averaged gradients, so the weights must be the same bits.
        long[] mine = {hash(p)};
        long[] all = new long[n];
        comm.allGather(HostBuffer.of(mine), HostBuffer.of(all));
        boolean same = Arrays.stream(all).allMatch(h -> h == all[0]);
        if (rank == 0) {
            if (same) {
                System.out.printf("weights: bitwise identical on all %d ranks (hash %016x)%n", n, all[0]);
            } else {
                System.out.println("weights: DIFFER between ranks: " + Arrays.stream(all)
                        .mapToObj(h -> String.format("%016x", h)).toList());
            }
        }
        if (!same) {
            code = 1;
        }
        if (accuracy < cfg.minAccuracy) {
            if (rank == 0) {
                System.out.printf(Locale.ROOT, "test accuracy %.2f%% is below --min-accuracy %.2f%%%n", accuracy,
                        cfg.minAccuracy);
            }
            code = 1;
        }

        double median = median(epochSeconds);
        if (cfg.baseline && n > 1) {
            // Rank 0 trains one epoch alone (the whole global batch, no communication) while the
            // others wait in a barrier (their waits park: they leave the cores to rank 0).
            if (rank == 0) {
                float[] p1 = initial.clone();
                float[] v1 = new float[model.size];
                float[] g1 = new float[model.size];
                int[] order = shuffled(train.count(), cfg.seed);
                long start = System.nanoTime();
                for (int s = 0; s < steps; s++) {
                    model.gradient(p1, train, order, s * cfg.batch, (s + 1) * cfg.batch, g1);
                    sgd(p1, v1, g1, model.size, cfg.lr, cfg.momentum);
                }
                double one = (System.nanoTime() - start) / 1e9;
                System.out.printf(Locale.ROOT, "speed-up: 1 rank %.2f s/epoch (rank 0 alone), %d ranks %.2f s/epoch "
                        + "(median): %.2fx%n", one, n, median, one / median);
            }
            comm.barrier();
        } else if (rank == 0) {
            System.out.printf(Locale.ROOT, "time per epoch: %.2f s (median of %d), %d rank%s%n", median, cfg.epochs, n,
                    n == 1 ? "" : "s");
        }
        return code;
    }

    /** p -= lr * v after v = momentum * v + g. */
    static void sgd(float[] p, float[] v, float[] g, int size, float lr, float momentum) {
        for (int i = 0; i < size; i++) {
            v[i] = momentum * v[i] + g[i];
            p[i] -= lr * v[i];
        }
    }

    /** 0..n-1 shuffled by a generator seeded with {@code seed}. */
    static int[] shuffled(int n, long seed) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = i;
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        return a;
    }

    /** FNV-1a over the bits of every float. */
    static long hash(float[] p) {
        long h = 0xcbf29ce484222325L;
        for (float f : p) {
            h = (h ^ Float.floatToRawIntBits(f)) * 0x100000001b3L;
        }
        return h;
    }

    static double median(double[] a) {
        double[] s = a.clone();
        Arrays.sort(s);
        return s.length == 0 ? 0 : s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    static Config parse(String[] args) {
        int epochs = 3;
        int batch = 256;
        float lr = 0.1f;
        float momentum = 0.9f;
        int hidden = 128;
        long seed = 42;
        Path data = FashionMnist.DEFAULT_DIR;
        double minAccuracy = 0;
        boolean baseline = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--baseline")) {
                baseline = true;
                continue;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(a + " needs a value (or unknown flag): " + USAGE);
            }
            String v = args[++i];
            switch (a) {
                case "--epochs" -> epochs = Integer.parseInt(v);
                case "--batch" -> batch = Integer.parseInt(v);
                case "--lr" -> lr = Float.parseFloat(v);
                case "--momentum" -> momentum = Float.parseFloat(v);
                case "--hidden" -> hidden = Integer.parseInt(v);
                case "--seed" -> seed = Long.parseLong(v);
                case "--data" -> data = Path.of(v);
                case "--min-accuracy" -> minAccuracy = Double.parseDouble(v);
                default -> throw new IllegalArgumentException("unknown flag " + a + ": " + USAGE);
            }
        }
        return new Config(epochs, batch, lr, momentum, hidden, seed, data, minAccuracy, baseline);
    }

    private static final String USAGE = "use --epochs N --batch B --lr LR --momentum M --hidden H --seed S"
            + " --data DIR --min-accuracy PERCENT --baseline";
}
