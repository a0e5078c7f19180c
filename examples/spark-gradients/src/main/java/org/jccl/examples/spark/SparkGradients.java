package org.jccl.examples.spark;

import java.io.File;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.spark.JcclSpark;

/**
 * Data-parallel least-squares regression on Spark, trained twice on the same cached partitions:
 * the Spark way (every step a {@code treeAggregate} job sums the partitions' gradients at the
 * driver, which broadcasts the new weights) and with jccl (one barrier stage; every step each task
 * all-reduces its gradient and updates its own copy of the weights). Both must end with the same
 * weights (to rounding: the sums add in another order), close to the weights that made the data.
 *
 * <p>{@code --bench 1024,65536,...} instead times the gradient sum alone at each size: a
 * {@code treeAggregate} per step against an {@code allReduce} per step inside one stage, in the
 * same run.
 */
public final class SparkGradients {

    private SparkGradients() {
    }

    /** One partition's rows: {@code y = x . w* + noise}, generated on the executor from a seed. */
    record Block(double[][] x, double[] y) implements Serializable {
        static Block generate(int partition, int rows, int dim, long seed) {
            double[] truth = trueWeights(dim, seed);
            SplittableRandom r = new SplittableRandom(seed * 31 + partition);
            double[][] x = new double[rows][dim];
            double[] y = new double[rows];
            for (int i = 0; i < rows; i++) {
                double dot = 0;
                for (int j = 0; j < dim; j++) {
                    x[i][j] = r.nextDouble(-1, 1);
                    dot += x[i][j] * truth[j];
                }
                y[i] = dot + r.nextDouble(-0.01, 0.01);
            }
            return new Block(x, y);
        }

        /** Adds this block's gradient of the squared error at {@code w}, {@code X^T (X w - y)}, to {@code acc}. */
        double[] addGradient(double[] w, double[] acc) {
            for (int i = 0; i < y.length; i++) {
                double[] row = x[i];
                double e = -y[i];
                for (int j = 0; j < row.length; j++) {
                    e += row[j] * w[j];
                }
                for (int j = 0; j < row.length; j++) {
                    acc[j] += e * row[j];
                }
            }
            return acc;
        }
    }

    static double[] trueWeights(int dim, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        return IntStream.range(0, dim).mapToDouble(j -> r.nextDouble(-1, 1)).toArray();
    }

    private static double[] add(double[] a, double[] b) {
        for (int j = 0; j < a.length; j++) {
            a[j] += b[j];
        }
        return a;
    }

    public static void main(String[] args) throws Exception {
        String master = "local[4]";
        int partitions = 4;
        int dim = 512;
        int rows = 8192;
        int steps = 40;
        String bench = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (a) {
                case "--master" -> master = need(a, v);
                case "--partitions" -> partitions = Integer.parseInt(need(a, v));
                case "--dim" -> dim = Integer.parseInt(need(a, v));
                case "--rows" -> rows = Integer.parseInt(need(a, v));
                case "--steps" -> steps = Integer.parseInt(need(a, v));
                case "--bench" -> bench = need(a, v);
                case "-h", "--help" -> {
                    System.out.println("usage: spark-gradients [--master local[4]] [--partitions 4] [--dim 512] [--rows 8192] "
                            + "[--steps 40] [--bench 1024,65536,1048576]");
                    return;
                }
                default -> throw new IllegalArgumentException("unknown argument '" + a + "': see --help");
            }
            i++;
        }
        SparkConf conf = new SparkConf().setMaster(master).setAppName("jccl spark-gradients")
                .set("spark.ui.enabled", "false")
                // JDK 25 lacks a class Spark's serialization debugger reflects on
                .set("spark.serializer.extraDebugInfo", "false")
                .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s");
        if (master.startsWith("local-cluster")) {
            // executors are JVMs of their own: give them this program's class path
            List<String> cp = new ArrayList<>();
            for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
                cp.add(Path.of(e).toAbsolutePath().toString());
            }
            conf.set("spark.executor.extraClassPath", String.join(File.pathSeparator, cp))
                    .set("spark.executor.extraJavaOptions", "--add-modules jdk.incubator.vector");
        }
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            sc.setLogLevel("WARN");
            if (master.startsWith("local-cluster")) {
                int executors = Integer.parseInt(master.substring(master.indexOf('[') + 1, master.indexOf(',')));
                while (sc.sc().statusTracker().getExecutorInfos().length < executors + 1) {
                    Thread.sleep(50);
                }
            }
            boolean ok = bench != null ? bench(sc, partitions, bench, steps) : train(sc, partitions, dim, rows, steps);
            if (!ok) {
                System.exit(1);
            }
        }
    }

    private static String need(String flag, String value) {
        if (value == null) {
            throw new IllegalArgumentException(flag + " needs a value: see --help");
        }
        return value;
    }

    /** Trains both ways; true when they agree. */
    static boolean train(JavaSparkContext sc, int partitions, int dim, int rows, int steps) {
        long seed = 42;
        int perPart = rows / partitions;
        int n = perPart * partitions;
        double lr = 1.0 / n;
        JavaRDD<Block> blocks = sc.parallelize(IntStream.range(0, partitions).boxed().toList(), partitions)
                .map(p -> Block.generate(p, perPart, dim, seed)).cache();
        blocks.count();

        // The Spark way: a treeAggregate job per step, the weights broadcast from the driver.
        long t0 = System.nanoTime();
        double[] w = new double[dim];
        for (int s = 0; s < steps; s++) {
            Broadcast<double[]> bw = sc.broadcast(w);
            double[] g = blocks.treeAggregate(new double[dim], (acc, b) -> b.addGradient(bw.value(), acc),
                    SparkGradients::add);
            bw.destroy();
            double[] next = w.clone();
            for (int j = 0; j < dim; j++) {
                next[j] -= lr * g[j];
            }
            w = next;
        }
        double sparkMs = (System.nanoTime() - t0) / 1e6;

        // With jccl: one barrier stage; each step every task all-reduces its gradient in place.
        t0 = System.nanoTime();
        List<double[]> all = JcclSpark.mapPartitions(blocks, (comm, it) -> {
            Block b = it.next();
            double[] wl = new double[dim];
            double[] g = new double[dim];
            for (int s = 0; s < steps; s++) {
                java.util.Arrays.fill(g, 0);
                b.addGradient(wl, g);
                comm.allReduce(HostBuffer.of(g), ReduceOp.SUM);
                for (int j = 0; j < dim; j++) {
                    wl[j] -= lr * g[j];
                }
            }
            return List.of(wl).iterator();
        }).collect();
        double jcclMs = (System.nanoTime() - t0) / 1e6;

        boolean ok = true;
        for (double[] wr : all) {
            if (!java.util.Arrays.equals(wr, all.get(0))) {
                System.out.println("FAILED: the ranks' weights differ (an all-reduce gives every rank the same sum)");
                ok = false;
            }
        }
        double diff = 0;
        double err = 0;
        double[] truth = trueWeights(dim, seed);
        for (int j = 0; j < dim; j++) {
            diff = Math.max(diff, Math.abs(all.get(0)[j] - w[j]));
            err = Math.max(err, Math.abs(all.get(0)[j] - truth[j]));
        }
        System.out.printf(Locale.ROOT, "%d partitions x %d rows, %d features, %d steps%n", partitions, perPart, dim, steps);
        System.out.printf(Locale.ROOT, "  treeAggregate + broadcast: %8.1f ms (%.2f ms/step)%n", sparkMs, sparkMs / steps);
        System.out.printf(Locale.ROOT, "  jccl allReduce (1 stage):  %8.1f ms (%.2f ms/step), %.1fx faster%n", jcclMs,
                jcclMs / steps, sparkMs / jcclMs);
        System.out.printf(Locale.ROOT, "  weights: largest difference between the two %.2e, from the true weights %.2e%n",
                diff, err);
        if (diff > 1e-9) {
            System.out.println("FAILED: jccl's weights differ from treeAggregate's by more than rounding");
            ok = false;
        }
        if (steps >= 40 && err > 0.05) {
            System.out.println("FAILED: the model did not approach the true weights");
            ok = false;
        }
        System.out.println(ok ? "spark-gradients: OK" : "spark-gradients: FAILED");
        return ok;
    }

    /** A partition's "gradient" at a step: cheap, the same in both methods, its sum known exactly. */
    static void fill(double[] g, int partition, int step) {
        for (int j = 0; j < g.length; j++) {
            g[j] = (partition + 1) * (j % 97) + step;
        }
    }

    static boolean check(double[] sum, int partitions, int step) {
        double ps = partitions * (partitions + 1) / 2.0;
        for (int j = 0; j < sum.length; j += Math.max(1, sum.length / 64)) {
            if (sum[j] != ps * (j % 97) + (double) partitions * step) {
                return false;
            }
        }
        return true;
    }

    /** Times the gradient sum alone at each size: treeAggregate jobs against all-reduces in one stage. */
    static boolean bench(JavaSparkContext sc, int partitions, String dims, int steps) {
        JavaRDD<Integer> parts = sc.parallelize(IntStream.range(0, partitions).boxed().toList(), partitions).cache();
        parts.count();
        int warm = Math.max(2, steps / 5);
        boolean ok = true;
        System.out.printf(Locale.ROOT, "gradient sum over %d partitions (%s), %d steps after %d warm-up steps%n", partitions,
                sc.master(), steps, warm);
        System.out.println("| doubles | bytes | treeAggregate ms/step | jccl allReduce ms/step | jccl stage total ms | speed-up |");
        System.out.println("| ---: | ---: | ---: | ---: | ---: | ---: |");
        for (String d : dims.split(",")) {
            int dim = Integer.parseInt(d.strip());
            double treeMs = 0;
            for (int s = -warm; s < steps; s++) {
                int step = s + warm;
                long t0 = System.nanoTime();
                double[] sum = parts.treeAggregate(new double[dim], (acc, p) -> {
                    double[] g = new double[acc.length];
                    fill(g, p, step);
                    return add(acc, g);
                }, SparkGradients::add);
                if (s >= 0) {
                    treeMs += (System.nanoTime() - t0) / 1e6;
                }
                ok &= check(sum, partitions, step);
            }
            long t0 = System.nanoTime();
            List<double[]> res = JcclSpark.mapPartitions(parts, (comm, it) -> {
                int p = it.next();
                double[] g = new double[dim];
                boolean good = true;
                long start = 0;
                for (int s = -warm; s < steps; s++) {
                    if (s == 0) {
                        start = System.nanoTime();
                    }
                    fill(g, p, s + warm);
                    comm.allReduce(HostBuffer.of(g), ReduceOp.SUM);
                    good &= check(g, comm.size(), s + warm);
                }
                double ms = (System.nanoTime() - start) / 1e6;
                return List.of(new double[] {ms, good ? 1 : 0}).iterator();
            }).collect();
            double stageMs = (System.nanoTime() - t0) / 1e6;
            double jcclMs = 0;
            for (double[] r : res) {
                jcclMs = Math.max(jcclMs, r[0]);
                ok &= r[1] == 1;
            }
            System.out.printf(Locale.ROOT, "| %d | %d | %.3f | %.3f | %.0f | %.1fx |%n", dim, 8L * dim, treeMs / steps,
                    jcclMs / steps, stageMs, (treeMs / steps) / (jcclMs / steps));
        }
        System.out.println(ok ? "spark-gradients bench: every sum checked" : "spark-gradients bench: FAILED: a sum was wrong");
        return ok;
    }
}
