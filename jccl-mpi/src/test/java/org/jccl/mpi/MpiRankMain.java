package org.jccl.mpi;

import static org.jccl.kit.Failures.same;
import static org.jccl.kit.Failures.wrong;

import org.jccl.kit.Reference;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.AbortedException;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.Jccl;
import org.jccl.JcclException;
import org.jccl.Options;
import org.jccl.ReduceOp;
import org.jccl.Work;

/**
 * One rank of an MPI test job, started by mpirun from {@link MpiCollectivesTest}. Forms its
 * communicator with {@code Jccl.init} from Open MPI's variables only (no store). Modes:
 * <ul>
 *   <li>{@code check COUNTS}: every collective x type x operator, blocking and async, in place
 *       and not, heap and native buffers, against {@link Reference}; a split; several async
 *       operations in flight. Prints "OK rank r" or the failures (exit 1).</li>
 *   <li>{@code errors}: bad arguments are refused before anything moves and leave the
 *       communicator usable; MPI errors and count mismatches become exceptions with MPI's text.</li>
 *   <li>{@code timeout}: rank 0 all-reduces alone and must time out within the deadline.</li>
 *   <li>{@code abort}: rank 1 calls abort() while the others wait in an all-reduce.</li>
 *   <li>{@code stuck}: rank 0's all-reduce times out and it exits; the others sleep a minute.</li>
 * </ul>
 */
public final class MpiRankMain {
    private MpiRankMain() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "check";
        List<String> failures = new ArrayList<>();
        int rank;
        try (Communicator comm = Jccl.init()) {
            rank = comm.rank();
            if (!comm.backend().equals("mpi")) {
                throw new AssertionError("backend is " + comm.backend());
            }
            switch (mode) {
                case "check" -> {
                    long[] counts = parseCounts(args.length > 1 ? args[1] : "0,1,1000");
                    check(comm, counts, failures);
                    splits(comm, failures);
                    inFlight(comm, failures);
                }
                case "errors" -> errors(comm, failures);
                case "timeout" -> timeout(comm, failures);
                case "abort" -> abort(comm);
                case "stuck" -> {
                    stuck(comm);
                    return;
                }
                default -> throw new IllegalArgumentException("unknown mode " + mode);
            }
            comm.barrier();
        }
        if (!failures.isEmpty()) {
            System.out.println("FAILURES rank " + rank + ": " + failures.size() + " " + failures);
            System.out.flush();
            System.exit(1);
        }
        System.out.println("OK rank " + rank);
    }

    static long[] parseCounts(String s) {
        String[] p = s.split(",");
        long[] c = new long[p.length];
        for (int i = 0; i < p.length; i++) {
            c[i] = Long.parseLong(p[i].trim());
        }
        return c;
    }

    /** The operators defined for a type (PREMUL_SUM by 3 for integers, by 2 for floats, as the reference's data allow). */
    static List<ReduceOp> ops(DataType t) {
        List<ReduceOp> ops = new ArrayList<>(List.of(ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX,
                ReduceOp.AVG, ReduceOp.preMulSum(t.isInteger() ? 3 : 2)));
        if (t.isInteger()) {
            ops.addAll(List.of(ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR));
        }
        return ops;
    }

    /** How one call is made: the variant number's bits pick async, heap memory and in place. */
    record Way(boolean async, boolean heap, boolean inPlace) {
        static Way of(int v) {
            return new Way((v & 1) != 0, (v & 2) != 0, (v & 4) != 0);
        }

        @Override
        public String toString() {
            return (async ? "async" : "blocking") + "/" + (heap ? "heap" : "native") + "/" + (inPlace ? "in-place" : "out-of-place");
        }
    }

    static HostBuffer alloc(DataType t, long count, boolean heap, Arena arena) {
        if (heap) {
            long bytes = count * t.byteSize();
            return HostBuffer.of(t, MemorySegment.ofArray(new long[(int) ((bytes + 7) / 8)]), count);
        }
        return HostBuffer.allocate(t, count, arena);
    }

    static void run(Work w) {
        if (w != null) {
            w.await();
        }
    }

    static void check(Communicator comm, long[] counts, List<String> failures) {
        int n = comm.size();
        int r = comm.rank();
        long seed = 1000;
        int variant = 0;
        try (Arena arena = Arena.ofShared()) {
            for (DataType t : DataType.values()) {
                for (ReduceOp op : ops(t)) {
                    for (long count : counts) {
                        seed++;
                        Way w = Way.of(variant++);
                        String what = t + " " + op + " x" + count + " " + w;
                        int root = (int) (seed % n);
                        // all-reduce
                        HostBuffer send = alloc(t, count, w.heap(), arena);
                        HostBuffer recv = w.inPlace() ? send : alloc(t, count, w.heap(), arena);
                        Reference.fill(send.segment(), t, op, seed, r, count, n);
                        run(w.async() ? comm.allReduceAsync(send, recv, op) : blockingAllReduce(comm, send, recv, op));
                        wrong(failures, "allReduce " + what, Reference.countWrong(recv.segment(), 0, t, op, seed, n, 0, count));
                        // reduce (recv only on the root)
                        Reference.fill(send.segment(), t, op, seed, r, count, n);
                        HostBuffer rr = r != root ? null : w.inPlace() ? send : alloc(t, count, w.heap(), arena);
                        run(w.async() ? comm.reduceAsync(send, rr, op, root) : blockingReduce(comm, send, rr, op, root));
                        if (r == root) {
                            wrong(failures, "reduce " + what, Reference.countWrong(rr.segment(), 0, t, op, seed, n, 0, count));
                        }
                        // reduce-scatter (in place: the result lands in slice rank of send)
                        HostBuffer big = alloc(t, count * n, w.heap(), arena);
                        Reference.fill(big.segment(), t, op, seed, r, count * n, n);
                        HostBuffer out = w.inPlace() ? big.slice(r * count, count) : alloc(t, count, w.heap(), arena);
                        run(w.async() ? comm.reduceScatterAsync(big, out, op) : blockingReduceScatter(comm, big, out, op));
                        wrong(failures, "reduceScatter " + what,
                                Reference.countWrong(out.segment(), 0, t, op, seed, n, r * count, count));
                    }
                }
                for (long count : counts) {
                    for (int k = 0; k < 2; k++) {
                        seed++;
                        Way w = Way.of(variant++);
                        dataMovement(comm, t, count, seed, w, arena, failures);
                    }
                }
            }
        }
    }

    private static Work blockingAllReduce(Communicator comm, HostBuffer s, HostBuffer r, ReduceOp op) {
        comm.allReduce(s, r, op);
        return null;
    }

    private static Work blockingReduce(Communicator comm, HostBuffer s, HostBuffer r, ReduceOp op, int root) {
        comm.reduce(s, r, op, root);
        return null;
    }

    private static Work blockingReduceScatter(Communicator comm, HostBuffer s, HostBuffer r, ReduceOp op) {
        comm.reduceScatter(s, r, op);
        return null;
    }

    /** Fills {@code b} with rank {@code p}'s data of a job of {@code n} ranks. */
    static void fill(HostBuffer b, long seed, int p, int n) {
        Reference.fill(b.segment(), b.type(), ReduceOp.SUM, seed, p, b.count(), n);
    }

    static void dataMovement(Communicator comm, DataType t, long c, long seed, Way w, Arena arena, List<String> failures) {
        int n = comm.size();
        int r = comm.rank();
        int root = (int) (seed % n);
        String what = t + " x" + c + " " + w;
        // broadcast
        HostBuffer a = alloc(t, c, w.heap(), arena);
        HostBuffer b = w.inPlace() ? a : alloc(t, c, w.heap(), arena);
        fill(a, seed, r, n);
        if (w.async()) {
            comm.broadcastAsync(a, b, root).await();
        } else {
            comm.broadcast(a, b, root);
        }
        HostBuffer e = alloc(t, c, false, arena);
        fill(e, seed, root, n);
        same(failures, "broadcast " + what, b, e);
        // all-gather: every rank's block, in rank order
        HostBuffer expect = alloc(t, c * n, false, arena);
        for (int p = 0; p < n; p++) {
            fill(expect.slice(p * c, c), seed, p, n);
        }
        HostBuffer all = alloc(t, c * n, w.heap(), arena);
        HostBuffer mine = w.inPlace() ? all.slice(r * c, c) : alloc(t, c, w.heap(), arena);
        fill(mine, seed, r, n);
        if (w.async()) {
            comm.allGatherAsync(mine, all).await();
        } else {
            comm.allGather(mine, all);
        }
        same(failures, "allGather " + what, all, expect);
        // gather to the root (in place on the root: its block is already in recv)
        HostBuffer g = r == root ? alloc(t, c * n, w.heap(), arena) : null;
        HostBuffer gs = w.inPlace() && r == root ? g.slice(r * c, c) : alloc(t, c, w.heap(), arena);
        fill(gs, seed, r, n);
        if (w.async()) {
            comm.gatherAsync(gs, g, root).await();
        } else {
            comm.gather(gs, g, root);
        }
        if (r == root) {
            same(failures, "gather " + what, g, expect);
        }
        // scatter from the root: rank i gets block i of the root's vector
        HostBuffer sv = r == root ? alloc(t, c * n, w.heap(), arena) : null;
        if (sv != null) {
            fill(sv, seed + 9, root, n);
        }
        HostBuffer sr = w.inPlace() && r == root ? sv.slice(r * c, c) : alloc(t, c, w.heap(), arena);
        if (w.async()) {
            comm.scatterAsync(sv, sr, root).await();
        } else {
            comm.scatter(sv, sr, root);
        }
        HostBuffer rootVec = alloc(t, c * n, false, arena);
        fill(rootVec, seed + 9, root, n);
        same(failures, "scatter " + what, sr, rootVec.slice(r * c, c));
        // all-to-all: block p of the result is block r of rank p's input
        HostBuffer in = alloc(t, c * n, w.heap(), arena);
        fill(in, seed + 7, r, n);
        HostBuffer res = w.inPlace() ? in : alloc(t, c * n, w.heap(), arena);
        if (w.async()) {
            comm.allToAllAsync(in, res).await();
        } else {
            comm.allToAll(in, res);
        }
        for (int p = 0; p < n; p++) {
            HostBuffer src = alloc(t, c * n, false, arena);
            fill(src, seed + 7, p, n);
            same(failures, "allToAll " + what + " from " + p, res.slice(p * c, c), src.slice(r * c, c));
        }
        // ring send/recv: async pairs always (blocking ones would deadlock a ring); blocking on 2 ranks in order
        HostBuffer got = alloc(t, c, w.heap(), arena);
        int next = (r + 1) % n;
        int prev = (r + n - 1) % n;
        if (w.async() || n != 2) {
            Work ws = comm.sendAsync(mine, next);
            Work wr = comm.recvAsync(got, prev);
            wr.await();
            ws.await();
        } else if (r == 0) {
            comm.send(mine, 1);
            comm.recv(got, 1);
        } else {
            comm.recv(got, 0);
            comm.send(mine, 0);
        }
        same(failures, "send/recv " + what, got, expect.slice(prev * c, c));
    }

    /** A split by parity (ordered by descending rank), a split that leaves rank 0 out, and work on both. */
    static void splits(Communicator comm, List<String> failures) {
        int n = comm.size();
        int r = comm.rank();
        try (Communicator half = comm.split(r % 2, n - r)) {
            int members = (n + 1 - r % 2) / 2;
            if (half.size() != members) {
                failures.add("split: size " + half.size() + " != " + members);
            }
            // key n - r orders by descending old rank
            int expectedRank = 0;
            for (int q = r + 2; q < n; q += 2) {
                expectedRank++;
            }
            if (half.rank() != expectedRank) {
                failures.add("split: rank " + half.rank() + " != " + expectedRank);
            }
            long[] v = {r, 1};
            half.allReduce(HostBuffer.of(v), ReduceOp.SUM);
            long sum = 0;
            for (int q = r % 2; q < n; q += 2) {
                sum += q;
            }
            if (v[0] != sum || v[1] != members) {
                failures.add("split allReduce: " + v[0] + "," + v[1] + " != " + sum + "," + members);
            }
            if (!half.backend().equals("mpi")) {
                failures.add("split backend " + half.backend());
            }
        }
        Communicator rest = comm.split(r == 0 ? Communicator.NO_COLOR : 5, 0);
        if (r == 0) {
            if (rest != null) {
                failures.add("NO_COLOR gave a communicator");
            }
        } else {
            try (rest) {
                if (rest.size() != n - 1 || rest.rank() != r - 1) {
                    failures.add("split without rank 0: rank " + rest.rank() + " of " + rest.size());
                }
                int[] one = {1};
                rest.allReduce(HostBuffer.of(one), ReduceOp.SUM);
                if (one[0] != n - 1) {
                    failures.add("split without rank 0: sum " + one[0]);
                }
            }
        }
        // the parent is still usable
        int[] x = {r};
        comm.allReduce(HostBuffer.of(x), ReduceOp.MAX);
        if (x[0] != n - 1) {
            failures.add("parent after split: max " + x[0]);
        }
    }

    /** Several async operations in flight at once, awaited in reverse order, polled with isDone. */
    static void inFlight(Communicator comm, List<String> failures) {
        int n = comm.size();
        int r = comm.rank();
        int k = 6;
        float[][] bufs = new float[k][4099];
        List<Work> works = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            java.util.Arrays.fill(bufs[i], r + i);
            works.add(comm.allReduceAsync(HostBuffer.of(bufs[i]), ReduceOp.SUM));
        }
        Work bar = comm.barrierAsync();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!works.get(k - 1).isDone() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        for (int i = k - 1; i >= 0; i--) {
            if (!works.get(i).await(Duration.ofSeconds(60))) {
                failures.add("in flight: work " + i + " not done");
            }
            if (works.get(i).exception() != null) {
                failures.add("in flight: work " + i + " failed " + works.get(i).exception());
            }
            float expected = (float) n * (n - 1) / 2 + (float) n * i;
            for (float f : bufs[i]) {
                if (f != expected) {
                    failures.add("in flight: buffer " + i + " has " + f + " != " + expected);
                    break;
                }
            }
        }
        bar.await();
        if (!bar.isDone()) {
            failures.add("barrier not done after await");
        }
        // Works awaited from several threads at once (each polls MPI_Test), one of them twice.
        List<Work> more = new ArrayList<>();
        long[][] vals = new long[8][513];
        for (int i = 0; i < vals.length; i++) {
            java.util.Arrays.fill(vals[i], (long) r * i);
            more.add(comm.allReduceAsync(HostBuffer.of(vals[i]), ReduceOp.MAX));
        }
        List<Thread> threads = new ArrayList<>();
        List<String> sync = java.util.Collections.synchronizedList(failures);
        for (int i = 0; i < vals.length; i++) {
            Work w = more.get(i);
            Work other = more.get((i + 3) % vals.length);
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    w.await();
                    other.await();
                } catch (RuntimeException e) {
                    sync.add("threaded await: " + e);
                }
            }));
        }
        for (Thread th : threads) {
            try {
                th.join(120_000);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
        for (int i = 0; i < vals.length; i++) {
            if (vals[i][512] != (long) (n - 1) * i) {
                sync.add("threaded await: buffer " + i + " has " + vals[i][512]);
            }
        }
    }

    static void errors(Communicator comm, List<String> failures) throws Exception {
        int n = comm.size();
        int r = comm.rank();
        // Bad arguments: refused before anything moves, with the host engine's messages.
        expectIae(failures, "count mismatch", () -> comm.allReduce(HostBuffer.of(new float[4]), HostBuffer.of(new float[5]),
                ReduceOp.SUM), "recv has 5 elements but 4 are needed");
        expectIae(failures, "type mismatch", () -> comm.allReduce(HostBuffer.of(new float[4]), HostBuffer.of(new int[4]),
                ReduceOp.SUM), "send is FLOAT32 but recv is INT32");
        expectIae(failures, "bitwise float", () -> comm.allReduce(HostBuffer.of(new float[4]), ReduceOp.BXOR),
                "not defined for FLOAT32");
        expectIae(failures, "root", () -> comm.broadcast(HostBuffer.of(new int[2]), n), "root is " + n);
        expectIae(failures, "peer", () -> comm.send(HostBuffer.of(new int[2]), -1), "peer is -1");
        expectIae(failures, "null", () -> comm.allGather(null, HostBuffer.of(new int[2])), "send is null");
        expectIae(failures, "allGather count", () -> comm.allGather(HostBuffer.of(new int[2]), HostBuffer.of(new int[2 * n + 1])),
                "needs size() x send.count()");
        int[] shared = new int[8 * n];
        expectIae(failures, "partial overlap", () -> comm.allReduce(HostBuffer.of(shared).slice(0, 4),
                HostBuffer.of(shared).slice(2, 4), ReduceOp.SUM), "overlap");
        expectIae(failures, "null op", () -> comm.allReduce(HostBuffer.of(new int[2]), null), "op is null");
        expectIae(failures, "read-only recv", () -> comm.allReduce(HostBuffer.of(new int[2]),
                HostBuffer.of(DataType.INT32, MemorySegment.ofArray(new int[2]).asReadOnly()), ReduceOp.SUM),
                "recv is a read-only segment");
        expectIae(failures, "read-only recv buffer", () -> comm.recv(
                HostBuffer.of(DataType.INT32, Arena.ofAuto().allocate(8).asReadOnly()), 0), "buffer is a read-only segment");
        // Still usable after all of that.
        int[] one = {1};
        comm.allReduce(HostBuffer.of(one), ReduceOp.SUM);
        if (one[0] != n) {
            failures.add("after bad arguments: sum " + one[0]);
        }
        // A message longer than the receive buffer: MPI_ERR_TRUNCATE, reported with MPI's text.
        try (Communicator c = comm.split(0, r)) {
            if (r == 0) {
                c.send(HostBuffer.of(new int[10]), 1);
            } else if (r == 1) {
                expectFailure(failures, JcclException.class, () -> c.recv(HostBuffer.of(new int[5]), 0),
                        "truncated recv did not fail", "truncate message", "MPI_ERR_TRUNCATE", "recv");
                expectFailure(failures, InvalidUsageException.class, c::barrier,
                        "communicator usable after an MPI error", "broken message", "earlier failure");
            }
        }
        // A shorter message than expected: a mismatch naming both counts.
        try (Communicator c = comm.split(0, r)) {
            if (r == 0) {
                c.send(HostBuffer.of(new long[3]), 1);
            } else if (r == 1) {
                expectFailure(failures, CollectiveMismatchException.class, () -> c.recv(HostBuffer.of(new long[7]), 0),
                        "short recv did not fail", "mismatch message", "held 3 elements but 7 were expected");
            }
        }
        // Closed communicator.
        Communicator c = comm.split(0, r);
        c.close();
        c.close();
        expectFailure(failures, InvalidUsageException.class, c::barrier, "closed communicator usable", "closed message",
                "closed");
        // A second init in the same process is a new communicator on the same MPI.
        try (Communicator again = Jccl.init(Options.fromEnv().withBackend("mpi"))) {
            long[] v = {r};
            again.allReduce(HostBuffer.of(v), ReduceOp.SUM);
            if (v[0] != (long) n * (n - 1) / 2) {
                failures.add("second init: sum " + v[0]);
            }
        }
        // Options whose rank disagrees with MPI's are refused.
        try {
            Jccl.init(Options.of((r + 1) % n, n).withBackend("mpi")).close();
            if (n > 1) {
                failures.add("disagreeing rank accepted");
            }
        } catch (JcclException e) {
            if (!e.getMessage().contains("MPI_COMM_WORLD has this process as rank " + r)) {
                failures.add("disagreeing rank message: " + e.getMessage());
            }
        }
    }

    interface Body {
        void run() throws Exception;
    }

    /**
     * Runs {@code body}, which must throw a {@code type} whose message holds every one of {@code
     * parts}: adds {@code notFailed} when it returns, {@code badMessage: <message>} when a part is
     * missing; other exceptions propagate.
     */
    static void expectFailure(List<String> failures, Class<? extends Exception> type, Body body, String notFailed,
                              String badMessage, String... parts) throws Exception {
        try {
            body.run();
            failures.add(notFailed);
        } catch (Exception e) {
            if (!type.isInstance(e)) {
                throw e;
            }
            for (String part : parts) {
                if (!e.getMessage().contains(part)) {
                    failures.add(badMessage + ": " + e.getMessage());
                    return;
                }
            }
        }
    }

    static void expectIae(List<String> failures, String what, Body body, String words) {
        try {
            body.run();
            failures.add(what + ": no exception");
        } catch (IllegalArgumentException e) {
            if (!e.getMessage().contains(words)) {
                failures.add(what + ": message '" + e.getMessage() + "' lacks '" + words + "'");
            }
        } catch (Exception e) {
            failures.add(what + ": " + e);
        }
    }

    static void timeout(Communicator comm, List<String> failures) throws Exception {
        // Also: a withTimeout view's deadline (300 ms) ends rank 0's lonely call well before the communicator's.
        int r = comm.rank();
        try (Communicator lonely = comm.split(0, r); Communicator lonelier = comm.split(0, r)) {
            if (r == 0) {
                // A withTimeout view's deadline ends one call long before the communicator's.
                long v0 = System.nanoTime();
                try {
                    lonelier.withTimeout(Duration.ofMillis(300)).allReduce(HostBuffer.of(new float[16]), ReduceOp.SUM);
                    failures.add("a lonely allReduce through a view completed");
                } catch (CollectiveTimeoutException e) {
                    double s = (System.nanoTime() - v0) / 1e9;
                    System.out.println("view timed out after " + s + " s: " + e.getMessage());
                    if (s > 1.5) {
                        failures.add("the view's 300 ms deadline took " + s + " s");
                    }
                    if (!e.getMessage().contains("PT0.3S")) {
                        failures.add("view timeout message: " + e.getMessage());
                    }
                }
                long t0 = System.nanoTime();
                try {
                    lonely.allReduce(HostBuffer.of(new float[16]), ReduceOp.SUM);
                    failures.add("a lonely allReduce completed");
                } catch (CollectiveTimeoutException e) {
                    double s = (System.nanoTime() - t0) / 1e9;
                    System.out.println("timed out after " + s + " s: " + e.getMessage());
                    if (s > lonely.timeout().toNanos() / 1e9 + 5) {
                        failures.add("timeout took " + s + " s");
                    }
                    if (!e.getMessage().contains("allReduce (FLOAT32 x 16, SUM) on rank 0")) {
                        failures.add("timeout message: " + e.getMessage());
                    }
                }
                try {
                    lonely.barrier();
                    failures.add("usable after a timeout");
                } catch (InvalidUsageException e) {
                    // expected
                }
                // An async wait that passes its own deadline just returns false.
                Work w = comm.barrierAsync();
                if (w.await(Duration.ofMillis(200))) {
                    failures.add("barrier completed without the others");
                }
                comm.barrier(); // the others arrive now
                w.await();
            } else {
                Thread.sleep(lonely.timeout().toMillis() + 2500); // past rank 0's view (0.3 s), its timeout and its 200 ms wait
                // Arrive late so rank 0's pending operation completes inside MPI before exit.
                comm.barrier();
                comm.barrier();
                lonely.allReduce(HostBuffer.of(new float[16]), ReduceOp.SUM);
                lonelier.allReduce(HostBuffer.of(new float[16]), ReduceOp.SUM);
            }
        }
    }

    /** Rank 0 times out alone and returns from main; the others never join and would sleep a minute. */
    static void stuck(Communicator comm) throws Exception {
        if (comm.rank() == 0) {
            try {
                comm.allReduce(HostBuffer.of(new int[4]), ReduceOp.SUM);
            } catch (CollectiveTimeoutException e) {
                System.out.println("rank 0 timed out; exiting");
                System.out.flush();
            }
        } else {
            System.out.println("rank " + comm.rank() + " sleeping");
            System.out.flush();
            Thread.sleep(60_000);
        }
    }

    static void abort(Communicator comm) throws Exception {
        int r = comm.rank();
        float[] a = new float[1024];
        for (int i = 0; i < 20; i++) {
            comm.allReduce(HostBuffer.of(a), ReduceOp.SUM);
        }
        System.out.println("ready " + r);
        System.out.flush();
        if (r == 1) {
            Thread.sleep(500);
            comm.abort();
        }
        try {
            comm.allReduce(HostBuffer.of(a), ReduceOp.SUM); // waits for rank 1, which is gone
            System.out.println("rank " + r + ": allReduce completed after abort");
        } catch (AbortedException | CollectiveTimeoutException e) {
            System.out.println("rank " + r + ": " + e);
        }
        System.out.flush();
        Thread.sleep(60_000);
    }
}
