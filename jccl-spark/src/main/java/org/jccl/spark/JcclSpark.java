package org.jccl.spark;

import java.io.Serializable;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.jccl.Communicator;
import org.jccl.Jccl;
import org.jccl.JcclException;
import org.jccl.Options;
import org.jccl.bootstrap.TcpStore;
import org.jccl.internal.Log;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Communicators inside Apache Spark barrier stages: the tasks of a stage
 * ({@code rdd.barrier().mapPartitions(...)}) become the ranks of one communicator, partition
 * {@code i} being rank {@code i}.
 *
 * <pre>{@code
 * JavaRDD<float[]> sums = JcclSpark.mapPartitions(gradients, (comm, rows) -> {
 *     float[] g = localGradient(rows);
 *     comm.allReduce(HostBuffer.of(g), ReduceOp.SUM);   // every partition gets the sum
 *     return List.of(g).iterator();
 * });
 * }</pre>
 *
 * <p>The rendezvous needs nothing from the cluster but the stage itself: the task of partition 0
 * serves a jccl store ({@link TcpStore}) on an ephemeral port of its executor's address, with a
 * fresh random token, and every task learns the address and token through
 * {@link BarrierTaskContext#allGather(String)} (Spark's own channel to the driver). Ranks on one
 * machine then meet over shared memory, machines over TCP, as {@link Jccl#init(Options)} decides
 * for any job. Each init gets a job id of its own (the stage, its attempt and part of the token),
 * so stages, their retries and other applications on the same machines never share a segment or a
 * key.
 *
 * <p>The communicator belongs to the task: it is closed (and the store with it) when the task
 * completes, aborted when the task fails, and aborted when Spark kills the task (a failed barrier
 * task kills its stage's other tasks): a rank blocked in a collective with a dead peer ends within
 * a fraction of a second instead of its deadline, and Spark retries the stage. Closing it earlier
 * is allowed.
 *
 * <p>Rank threads are not pinned to CPUs here ({@code JCCL_AFFINITY=off} unless set): Spark's task
 * threads are pooled and run the executor's later tasks too. The other {@code JCCL_*} variables
 * of the executor's environment apply as for any rank ({@link Options#fromEnv()}: the timeout, the
 * heartbeats, the transport).
 */
public final class JcclSpark {
    private static final Log LOG = Log.get(JcclSpark.class);

    /** How often a task's communicator checks whether Spark killed the task. */
    private static final long KILL_POLL_MS = 50;

    private static final ScheduledExecutorService WATCHER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "jccl-spark-kill-watcher");
        t.setDaemon(true);
        return t;
    });

    private JcclSpark() {
    }

    /**
     * A per-task adjustment of the communicator's options (timeout, settings, backend): Spark
     * ships it to the executors with the task, so it is serializable.
     */
    @FunctionalInterface
    public interface OptionsTuner extends UnaryOperator<Options>, Serializable {
    }

    /**
     * The body of a barrier stage's task: the task's rows in, its result rows out, with a
     * communicator over every task of the stage.
     *
     * @param <T> row type of the input
     * @param <R> row type of the output
     */
    @FunctionalInterface
    public interface PartitionFunction<T, R> extends Serializable {
        /**
         * Runs one partition. The communicator stays open until the task completes, so the
         * returned iterator may be lazy.
         *
         * @param comm rank {@code partitionId} of a communicator over the stage's tasks
         * @param rows this partition's rows
         * @return this partition's output rows
         * @throws Exception any failure, which fails the task (and so the stage)
         */
        Iterator<R> call(Communicator comm, Iterator<T> rows) throws Exception;
    }

    /**
     * Forms a communicator over the tasks of the barrier stage {@code ctx} runs in, with the
     * options of the environment. Collective: every task of the stage calls it.
     *
     * @param ctx this task's context ({@code BarrierTaskContext.get()})
     * @return rank {@code ctx.partitionId()} of {@code ctx.getTaskInfos().length} ranks
     */
    public static Communicator init(BarrierTaskContext ctx) {
        return init(ctx, o -> o);
    }

    /**
     * Forms a communicator over the tasks of the barrier stage {@code ctx} runs in; {@code tune}
     * may change the options (timeout, heartbeat, backend, settings) but not the rank, size, job
     * id, token or store, which come from the stage. Collective: every task of the stage calls it.
     *
     * @param ctx  this task's context ({@code BarrierTaskContext.get()})
     * @param tune adjusts the options, e.g. {@code o -> o.withTimeout(Duration.ofMinutes(1))}
     * @return rank {@code ctx.partitionId()} of {@code ctx.getTaskInfos().length} ranks
     * @throws IllegalArgumentException when {@code tune} changes what the stage decides
     * @throws JcclException            when partition 0 cannot serve the store, or the ranks
     *                                  cannot meet within the timeout
     */
    public static Communicator init(BarrierTaskContext ctx, UnaryOperator<Options> tune) {
        Objects.requireNonNull(ctx, "ctx: call JcclSpark.init(BarrierTaskContext.get()) inside rdd.barrier().mapPartitions");
        Objects.requireNonNull(tune, "tune: pass o -> o to keep the options");
        BarrierTaskInfo[] tasks = ctx.getTaskInfos();
        int size = tasks.length;
        int rank = ctx.partitionId();
        if (rank < 0 || rank >= size) {
            throw new IllegalStateException("partition " + rank + " of a barrier stage of " + size + " tasks: every "
                    + "partition of the RDD must be a task of the stage (do not coalesce or filter partitions away "
                    + "between barrier() and mapPartitions)");
        }
        String[] hosts = new String[size];
        for (int i = 0; i < size; i++) {
            hosts[i] = hostOf(tasks[i].address());
        }
        int below = 0;
        int same = 0;
        for (int i = 0; i < size; i++) {
            if (hosts[i].equals(hosts[rank])) {
                below += i < rank ? 1 : 0;
                same++;
            }
        }
        int localRank = below;
        int localSize = same;
        Options base = Options.fromEnv().withRank(rank, size).withLocal(localRank, localSize);
        // tune is checked before any traffic: every rank runs the same tune, so all fail at once
        Duration timeout = tuned(tune, base, "spark-probe", "probe", null).timeout();

        // From here the task owns what it opens: a kill ends the rendezvous (interrupt, store
        // closed) or aborts the communicator; the task's end closes both.
        TaskBinding binding = new TaskBinding(ctx, rank);
        // Partition 0 serves the store; its address and token reach every task through Spark.
        String message = "";
        RuntimeException serveFailure = null;
        if (rank == 0) {
            String token = HexFormat.of().formatHex(randomBytes(16));
            try {
                TcpStore served = (TcpStore) TcpStore.open(hosts[0], 0, true, token, timeout);
                binding.store = served;
                message = "store " + hosts[0] + " " + served.server().port() + " " + token;
            } catch (RuntimeException e) {
                serveFailure = e;
                message = "failed " + e.getMessage();
            }
        }
        String[] all = ctx.allGather(message);
        if (serveFailure != null) {
            throw serveFailure;
        }
        ctx.killTaskIfInterrupted(); // the stage failed while this task waited
        String[] words = all[0].split(" ", 4);
        if (!words[0].equals("store") || words.length != 4) {
            throw new JcclException("partition 0 (rank 0, on " + hosts[0] + ") could not serve the rendezvous store: "
                    + all[0].substring(Math.min(all[0].length(), 7)) + " (its task's error says more)");
        }
        String token = words[3];
        TcpStore store = binding.store;
        if (store == null) {
            store = (TcpStore) TcpStore.open(words[1], Integer.parseInt(words[2]), false, token, timeout);
            binding.store = store;
        }
        String jobId = "spark-s" + ctx.stageId() + "a" + ctx.stageAttemptNumber() + "-" + token.substring(0, 12);
        Options opts = tuned(tune, base, jobId, token, store);
        TcpStore owned = store;
        LOG.info(rank, () -> "spark stage " + ctx.stageId() + " attempt " + ctx.stageAttemptNumber() + ": rank " + rank
                + " of " + size + " (local " + localRank + " of " + localSize + " on " + hosts[rank] + "), store "
                + owned.address());
        Communicator comm = Jccl.init(opts);
        binding.comm = comm;
        return comm;
    }

    /**
     * The stage's options for this rank, adjusted by {@code tune}, which must leave the rank, size,
     * job id, token and store as the stage decided them.
     */
    private static Options tuned(UnaryOperator<Options> tune, Options base, String jobId, String token, TcpStore store) {
        Options stage = base.withJobId(jobId).withToken(token).withStore(store);
        if (System.getProperty("jccl.affinity") == null && System.getenv("JCCL_AFFINITY") == null) {
            stage = stage.withSetting("JCCL_AFFINITY", "off");
        }
        Options opts = tune.apply(stage);
        if (opts == null || opts.rank() != base.rank() || opts.size() != base.size() || opts.store() != store
                || !opts.jobId().equals(jobId) || !Objects.equals(opts.token(), token)) {
            throw new IllegalArgumentException("tune changed " + (opts == null ? "the options to null"
                    : "the rank, size, job id, token or store") + ": the barrier stage decides those; return the options "
                    + "it was given (o -> o), changing only the timeout, heartbeat, backend or settings");
        }
        return opts;
    }

    /**
     * Runs {@code f} in every partition of {@code rdd} as one barrier stage, each task with a
     * communicator over all of them ({@link #init(BarrierTaskContext)}): the Java form of
     * {@code rdd.barrier().mapPartitions(...)}.
     *
     * @param rdd the input; each partition becomes a rank
     * @param f   the task body
     * @param <T> input row type
     * @param <R> output row type
     * @return the output rows (lazy, as any RDD: an action runs the stage)
     */
    public static <T, R> JavaRDD<R> mapPartitions(JavaRDD<T> rdd, PartitionFunction<T, R> f) {
        return mapPartitions(rdd, f, o -> o);
    }

    /**
     * As {@link #mapPartitions(JavaRDD, PartitionFunction)}, with options adjusted by
     * {@code tune} ({@link #init(BarrierTaskContext, UnaryOperator)}).
     *
     * @param rdd  the input; each partition becomes a rank
     * @param f    the task body
     * @param tune adjusts each task's options
     * @param <T>  input row type
     * @param <R>  output row type
     * @return the output rows
     */
    public static <T, R> JavaRDD<R> mapPartitions(JavaRDD<T> rdd, PartitionFunction<T, R> f, OptionsTuner tune) {
        Objects.requireNonNull(rdd, "rdd");
        Objects.requireNonNull(f, "f: the function each partition runs");
        Objects.requireNonNull(tune, "tune: pass o -> o to keep the options");
        @SuppressWarnings("unchecked")
        ClassTag<R> tag = (ClassTag<R>) (ClassTag<?>) ClassTag$.MODULE$.AnyRef();
        RDD<R> out = rdd.rdd().barrier().mapPartitions(new PartitionTask<>(f, tune), false, tag);
        return JavaRDD.fromRDD(out, tag);
    }

    /** The serializable task body {@link #mapPartitions} hands to Spark. */
    private record PartitionTask<T, R>(PartitionFunction<T, R> f, OptionsTuner tune)
            implements scala.Function1<scala.collection.Iterator<T>, scala.collection.Iterator<R>>, Serializable {
        @Override
        public scala.collection.Iterator<R> apply(scala.collection.Iterator<T> rows) {
            BarrierTaskContext ctx = BarrierTaskContext.get();
            Communicator comm = init(ctx, tune);
            Iterator<R> out;
            try {
                out = f.call(comm, CollectionConverters.asJava(rows));
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Exception e) {
                throw new RuntimeException("partition " + ctx.partitionId() + "'s function failed: " + e, e);
            }
            if (out == null) {
                throw new NullPointerException("partition " + ctx.partitionId() + "'s function returned null: return "
                        + "an iterator (java.util.Collections.emptyIterator() for no rows)");
            }
            return CollectionConverters.asScala(out);
        }
    }

    /**
     * What a task's init opened, tied to the task: Spark's kill interrupts a rendezvous in progress
     * (the task thread is interrupted and the store closed, which ends its waits) or aborts the
     * communicator; a failure of the task aborts it; the task's end closes the communicator, then
     * the store.
     */
    private static final class TaskBinding {
        private final BarrierTaskContext ctx;
        private final int rank;
        private final Thread taskThread = Thread.currentThread();
        private final ScheduledFuture<?> watch;
        volatile TcpStore store;
        volatile Communicator comm;
        private boolean killed;
        /** The task ended: no more interrupts of its (pooled) thread. */
        private boolean ended;

        TaskBinding(BarrierTaskContext ctx, int rank) {
            this.ctx = ctx;
            this.rank = rank;
            this.watch = WATCHER.scheduleWithFixedDelay(this::checkKilled, KILL_POLL_MS, KILL_POLL_MS,
                    TimeUnit.MILLISECONDS);
            ctx.addTaskFailureListener((c, error) -> {
                Communicator cm = comm;
                if (cm != null) {
                    LOG.info(rank, () -> "task failed (" + error + "): aborting its communicator");
                    cm.abort();
                }
            });
            ctx.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) c -> close());
        }

        private synchronized void checkKilled() {
            if (ended || !ctx.isInterrupted()) {
                return;
            }
            String reason = ctx.getKillReason().getOrElse(() -> "no reason given");
            Communicator cm = comm;
            if (cm != null) {
                if (!killed) {
                    LOG.warn(rank, "spark killed this task (" + reason + "): aborting its communicator");
                    cm.abort();
                }
            } else {
                if (!killed) {
                    LOG.warn(rank, "spark killed this task (" + reason + ") during the rendezvous: ending it");
                }
                // again at every poll until the task ends: Spark's own barrier wait swallows interrupts
                taskThread.interrupt();
                TcpStore st = store;
                if (st != null) {
                    st.close();
                }
            }
            killed = true;
        }

        private void close() {
            watch.cancel(false);
            synchronized (this) {
                ended = true;
                if (killed && Thread.currentThread() == taskThread) {
                    Thread.interrupted(); // the executor's next task on this thread starts clean
                }
            }
            try {
                Communicator cm = comm;
                if (cm != null) {
                    cm.close();
                }
            } finally {
                TcpStore st = store;
                if (st != null) {
                    st.close();
                }
            }
        }
    }

    /** The host of a Spark executor address ({@code host:port}, {@code [v6]:port}, or a bare host). */
    static String hostOf(String address) {
        String a = address.strip();
        if (a.startsWith("[")) {
            int end = a.indexOf(']');
            return end > 0 ? a.substring(1, end) : a;
        }
        int colon = a.lastIndexOf(':');
        return colon > 0 && a.indexOf(':') == colon ? a.substring(0, colon) : a;
    }

    private static byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        new SecureRandom().nextBytes(b);
        return b;
    }
}
