package org.jccl.spark;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Spark contexts for the tests: {@code local[n]} (tasks are threads of this JVM) and
 * {@code local-cluster[n,1,1024]} (each executor its own JVM, started by Spark's worker).
 */
final class SparkWorlds {
    private SparkWorlds() {
    }

    /** A local-mode context with {@code threads} task slots. */
    static JavaSparkContext local(int threads) {
        return new JavaSparkContext(conf("local[" + threads + "]"));
    }

    /**
     * A local-cluster context of {@code executors} executor processes with one core each, waiting
     * until all have registered (a barrier stage needs all its slots at once). The executors get
     * this JVM's class path; Spark's launcher needs a Spark home, made empty here
     * ({@code SPARK_HOME}, set by the pom, names where).
     */
    static JavaSparkContext cluster(int executors) throws IOException, InterruptedException {
        String home = System.getenv("SPARK_HOME");
        if (home == null) {
            throw new IllegalStateException("SPARK_HOME is not set: the jccl-spark pom sets it for the tests");
        }
        Files.createDirectories(Path.of(home, "jars"));
        if (!Files.exists(Path.of(home, "RELEASE"))) {
            Files.writeString(Path.of(home, "RELEASE"), "an empty Spark home for local-cluster tests\n");
        }
        List<String> cp = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!e.isBlank()) {
                cp.add(Path.of(e).toAbsolutePath().toString());
            }
        }
        SparkConf conf = conf("local-cluster[" + executors + ",1,1024]")
                .set("spark.executor.extraClassPath", String.join(File.pathSeparator, cp))
                .set("spark.executor.extraJavaOptions", "--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED");
        JavaSparkContext sc = new JavaSparkContext(conf);
        long deadline = System.nanoTime() + 120_000_000_000L;
        // getExecutorInfos includes the driver
        while (sc.sc().statusTracker().getExecutorInfos().length < executors + 1) {
            if (System.nanoTime() > deadline) {
                sc.close();
                throw new IllegalStateException("the " + executors + " executors of local-cluster did not register within 120 s");
            }
            Thread.sleep(50);
        }
        return sc;
    }

    private static SparkConf conf(String master) {
        return new SparkConf().setMaster(master).setAppName("jccl-spark-test")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                // a barrier stage that finds too few slots retries after this interval (15 s by default)
                .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
                // JDK 25 lacks the class Spark's serialization debugger reflects on
                .set("spark.serializer.extraDebugInfo", "false");
    }
}
