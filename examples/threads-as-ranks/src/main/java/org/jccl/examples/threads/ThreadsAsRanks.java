package org.jccl.examples.threads;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.Options;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.jccl.bootstrap.Store;
import org.jccl.bootstrap.TcpStore;
import org.jccl.bootstrap.TcpStoreServer;

/**
 * N ranks as N threads of one JVM, no launcher: the main thread serves the rendezvous store, each
 * thread connects its own client to it and forms its own communicator with
 * {@code Jccl.init(Options.of(rank, n).withStore(client))}. The ranks then run a few collectives
 * and check every result. A communicator belongs to one thread at a time, as with NCCL; threads
 * of one JVM talk over shared memory, as processes of one host do.
 *
 * <pre>
 *   java -cp target/threads-as-ranks.jar org.jccl.examples.threads.ThreadsAsRanks [N]
 * </pre>
 *
 * Exits 0 when every rank found every result right, 1 otherwise.
 */
public final class ThreadsAsRanks {
    private ThreadsAsRanks() {
    }

    /** Entry point: {@code [N]}, the number of ranks (default 4). */
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        Duration timeout = Duration.ofSeconds(60);
        ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        // The store the ranks meet through: 127.0.0.1, a free port, no token (nothing leaves this JVM).
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), null)) {
            String job = "threads-" + ProcessHandle.current().pid(); // names shared-memory files: unique per job
            List<Thread> threads = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                threads.add(Thread.ofPlatform().name("rank-" + rank).start(() -> {
                    try (Store store = TcpStore.connect("127.0.0.1", server.port(), null, timeout);
                         Communicator comm = Jccl.init(Options.of(rank, n).withJobId(job).withStore(store)
                                 .withTimeout(timeout))) {
                        rank(comm, failures);
                    } catch (Throwable t) {
                        failures.add("rank " + rank + ": " + t);
                        t.printStackTrace();
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
        }
        if (failures.isEmpty()) {
            System.out.println("threads-as-ranks: all " + n + " ranks OK");
        } else {
            failures.forEach(f -> System.out.println("FAILED " + f));
            System.exit(1);
        }
    }

    /** What every rank does: a few collectives, each result checked. */
    static void rank(Communicator comm, ConcurrentLinkedQueue<String> failures) {
        int r = comm.rank();
        int n = comm.size();
        Check check = new Check(r, failures);

        // allReduce SUM, in place: rank r contributes r + 1 everywhere
        float[] x = new float[1000];
        Arrays.fill(x, r + 1);
        comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);
        check.all("allReduce SUM", x, n * (n + 1) / 2f);

        // allReduce MAX on longs
        long[] m = {r * 7L};
        comm.allReduce(HostBuffer.of(m), ReduceOp.MAX);
        check.that("allReduce MAX", m[0] == (n - 1) * 7L, m[0]);

        // broadcast from the last rank
        int[] b = new int[16];
        if (r == n - 1) {
            Arrays.fill(b, 42);
        }
        comm.broadcast(HostBuffer.of(b), n - 1);
        check.that("broadcast", Arrays.stream(b).allMatch(v -> v == 42), Arrays.toString(b));

        // allGather: every rank gets [0, 10, 20, ...]
        double[] mine = {10.0 * r};
        double[] all = new double[n];
        comm.allGather(HostBuffer.of(mine), HostBuffer.of(all));
        boolean gathered = true;
        for (int i = 0; i < n; i++) {
            gathered &= all[i] == 10.0 * i;
        }
        check.that("allGather", gathered, Arrays.toString(all));

        // reduceScatter: rank r keeps block r of the sum; block i of every rank holds i
        int[] send = new int[4 * n];
        for (int i = 0; i < send.length; i++) {
            send[i] = i / 4;
        }
        int[] block = new int[4];
        comm.reduceScatter(HostBuffer.of(send), HostBuffer.of(block), ReduceOp.SUM);
        check.that("reduceScatter", Arrays.stream(block).allMatch(v -> v == r * n), Arrays.toString(block));

        // allToAll: element j of rank i goes to rank j; rank r receives i * 100 + r from rank i
        long[] out = new long[n];
        long[] in = new long[n];
        for (int j = 0; j < n; j++) {
            out[j] = r * 100L + j;
        }
        comm.allToAll(HostBuffer.of(out), HostBuffer.of(in));
        boolean exchanged = true;
        for (int i = 0; i < n; i++) {
            exchanged &= in[i] == i * 100L + r;
        }
        check.that("allToAll", exchanged, Arrays.toString(in));

        // async allReduce AVG with a deadline
        double[] avg = {r};
        Work w = comm.allReduceAsync(HostBuffer.of(avg), ReduceOp.AVG);
        w.awaitWithin(Duration.ofSeconds(30));
        check.that("allReduceAsync AVG", avg[0] == (n - 1) / 2.0, avg[0]);

        // split into even and odd ranks; each half sums its ranks
        try (Communicator half = comm.split(r % 2, r)) {
            int[] s = {r};
            half.allReduce(HostBuffer.of(s), ReduceOp.SUM);
            int expected = 0;
            for (int i = r % 2; i < n; i += 2) {
                expected += i;
            }
            check.that("split(" + (r % 2) + ") allReduce", s[0] == expected, s[0]);
        }

        comm.barrier();
        System.out.println("rank " + r + " of " + n + " (thread " + Thread.currentThread().getName() + ", "
                + comm.backend() + " backend): " + check.passed + " collectives checked");
    }

    /** Records failures under the rank's name. */
    static final class Check {
        final int rank;
        final ConcurrentLinkedQueue<String> failures;
        int passed;

        Check(int rank, ConcurrentLinkedQueue<String> failures) {
            this.rank = rank;
            this.failures = failures;
        }

        void that(String what, boolean ok, Object got) {
            if (ok) {
                passed++;
            } else {
                failures.add("rank " + rank + ": " + what + " gave " + got);
            }
        }

        void all(String what, float[] a, float expected) {
            for (float v : a) {
                if (v != expected) {
                    that(what, false, v + " (expected " + expected + ")");
                    return;
                }
            }
            that(what, true, null);
        }
    }
}
