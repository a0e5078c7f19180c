package org.jccl.host;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.testing.Deoptimizations;

/**
 * A fresh JVM for {@link JitWarmupTest}: two thread ranks warm up at creation ({@code JCCL_WARMUP}
 * = args[0] seconds at most), then rank 1 comes {@code args[1]} ms late to a small all-reduce, a
 * mid-size one, a broadcast and a barrier, twice, as a rank still computing would, so that rank 0
 * spins, yields and parks; then a small all-reduce with each float reduction other than SUM, for the
 * first time; then a reduce, gather and scatter to and from rank 1 and a blocking send and receive; then a
 * 1 MiB broadcast, all-gather, reduce-scatter, all-to-all and send/recv; then 2100
 * small all-reduces, past the flight recorder's capacity; before those, 40 small gathers and broadcasts
 * whose eager side fills the small ring, and every collective out of place and in place at 8 B to
 * 512 KiB a rank, as {@code jccl perf all} calls them. Prints every deoptimization (JFR) after the warm-up as {@code DEOPT
 * class.method bci reason}, the results as {@code SUMS ...}, then {@code DONE}.
 */
public final class LateRankMain {
    private LateRankMain() {
    }

    public static void main(String[] args) throws Exception {
        String bound = args[0];
        long lateNanos = Long.parseLong(args[1]) * 1_000_000L;
        AtomicReference<Instant> warm = new AtomicReference<>();
        AtomicReference<List<String>> sums = new AtomicReference<>();
        List<Deoptimizations.Deopt> deopts = Deoptimizations.during(() -> sums.set(
                ThreadRanks.run(2, Duration.ofSeconds(60), Duration.ofSeconds(120),
                    o -> o.withSetting("JCCL_WARMUP", bound), comm -> {
                        try (Arena arena = Arena.ofConfined()) {
                            HostBuffer small = HostBuffer.allocate(DataType.FLOAT32, 5, arena);
                            HostBuffer mid = HostBuffer.allocate(DataType.FLOAT32, 3001, arena);
                            comm.barrier();
                            if (comm.rank() == 0) {
                                warm.set(Instant.now());
                            }
                            comm.barrier();
                            double total = 0;
                            for (int round = 0; round < 2; round++) {
                                fill(small, comm.rank() + 1);
                                late(comm.rank() == 1, lateNanos);
                                comm.allReduce(small, small, ReduceOp.SUM);
                                total += small.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 4);
                                fill(mid, comm.rank() + 1);
                                late(comm.rank() == 1, lateNanos);
                                comm.allReduce(mid, mid, ReduceOp.SUM);
                                total += mid.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 3000);
                                fill(small, comm.rank() == 0 ? 7 : 0);
                                late(comm.rank() == 1, lateNanos);
                                comm.broadcast(small, small, 0);
                                total += small.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0);
                                late(comm.rank() == 1, lateNanos);
                                comm.barrier();
                            }
                            // The float reductions other than SUM, each for the first time
                            for (ReduceOp op : new ReduceOp[] {ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD, ReduceOp.AVG}) {
                                fill(small, comm.rank() + 1);
                                comm.allReduce(small, small, op);
                                total += small.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 1);
                            }
                            // Rooted calls to rank 1 and a blocking send and receive, each first
                            total += rankOneCalls(comm, arena);
                            // The large paths (zero copy, single copy) of the other collectives, each first
                            total += largeCalls(comm, arena);
                            // What a caller does now and then: an async reduce, an in-place gather
                            // and scatter, a one-chunk broadcast too large for the small ring, sends
                            // ahead of a late receiver, each first
                            total += rarerCalls(comm);
                            // A ring ahead: small rooted calls whose eager side fills the small ring
                            total += ringAhead(comm);
                            // What jccl perf all does: every collective out of place and in place at
                            // 8 B to 512 KiB a rank, each size's first calls
                            total += sweepCalls(comm, arena);
                            // Past the flight recorder's capacity (2000 by default), whose first wrap
                            // the warm-up (which clears the recorder) never reaches
                            fill(small, comm.rank() == 0 ? 1 : 0);
                            for (int i = 0; i < 2100; i++) {
                                // (in place, rank 1 adding zeros: the result stays 1)
                                if (comm.rank() == 1 && i > 0) {
                                    fill(small, 0);
                                }
                                comm.allReduce(small, small, ReduceOp.SUM);
                            }
                            total += small.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 2);
                            return Double.toString(total);
                        }
                    })));
        for (Deoptimizations.Deopt d : deopts) {
            if (warm.get() != null && d.at().isAfter(warm.get())) {
                System.out.println("DEOPT " + d.where());
            }
        }
        System.out.println("SUMS " + String.join(" ", sums.get()));
        System.out.println("DONE");
    }

    /**
     * A 1 MiB broadcast, all-gather, reduce-scatter, all-to-all and send/recv (2 ranks): 1 for each
     * whose result is right, 1000 for each that is not.
     */
    private static double largeCalls(org.jccl.Communicator comm, Arena arena) {
        int r = comm.rank();
        long m = 1 << 18; // floats: 1 MiB
        HostBuffer a = HostBuffer.allocate(DataType.FLOAT32, m, arena);
        HostBuffer b = HostBuffer.allocate(DataType.FLOAT32, m, arena);
        HostBuffer all = HostBuffer.allocate(DataType.FLOAT32, 2 * m, arena);
        HostBuffer all2 = HostBuffer.allocate(DataType.FLOAT32, 2 * m, arena);
        double score = 0;
        fill(a, r == 0 ? 3 : 0);
        comm.broadcast(a, b, 0);
        score += at(b, m - 1) == 3 ? 1 : 1000;
        fill(a, r + 1);
        comm.allGather(a, all);
        score += at(all, 0) == 1 && at(all, 2 * m - 1) == 2 ? 1 : 1000;
        fill(all, 1);
        comm.reduceScatter(all, b, ReduceOp.SUM);
        score += at(b, 0) == 2 && at(b, m - 1) == 2 ? 1 : 1000;
        for (long i = 0; i < 2 * m; i++) {
            all.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 10 * r + (i < m ? 0 : 1));
        }
        comm.allToAll(all, all2); // block p of rank q goes to rank p: rank r receives 10 * q + r from q
        score += at(all2, 0) == r && at(all2, 2 * m - 1) == 10 + r ? 1 : 1000;
        fill(a, r + 1);
        comm.sendRecv(a, 1 - r, b, 1 - r);
        score += at(b, m - 1) == 2 - r ? 1 : 1000;
        return score;
    }

    /**
     * A reduce (in place), gather and scatter to and from rank 1, and a blocking send and receive
     * (2 ranks): 1 for each whose result is right on this rank, 1000 for each that is not.
     */
    private static double rankOneCalls(org.jccl.Communicator comm, Arena arena) {
        int r = comm.rank();
        HostBuffer x = HostBuffer.allocate(DataType.FLOAT32, 5, arena);
        HostBuffer both = HostBuffer.allocate(DataType.FLOAT32, 10, arena);
        double score = 0;
        fill(x, r + 1);
        comm.reduce(x, ReduceOp.SUM, 1);
        score += r == 0 || at(x, 4) == 3 ? 1 : 1000;
        fill(x, r + 1);
        comm.gather(x, both, 1);
        score += r == 0 || at(both, 0) == 1 && at(both, 9) == 2 ? 1 : 1000;
        for (int i = 0; i < 10; i++) {
            both.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, i < 5 ? 7 : 8);
        }
        comm.scatter(both, x, 1);
        score += at(x, 4) == 7 + r ? 1 : 1000;
        fill(x, r + 1);
        HostBuffer y = HostBuffer.allocate(DataType.FLOAT32, 5, arena);
        if (r == 0) {
            comm.send(x, 1);
            comm.recv(y, 1);
        } else {
            comm.recv(y, 0);
            comm.send(x, 0);
        }
        score += at(y, 0) == 2 - r ? 1 : 1000;
        return score;
    }

    /**
     * Every collective out of place and in place, root 0, at 2 to 131072 floats a rank (x4 each
     * step): what {@code jccl perf all} calls, each size for the first time; each size class
     * (the small ring, one chunk, one posted by address between two ranks, several chunks, zero
     * copy) meets every form. 0 when every result is right on this rank, 1000 for each that is not
     * (2 ranks).
     */
    private static double sweepCalls(org.jccl.Communicator comm, Arena arena) {
        int r = comm.rank();
        int n = comm.size();
        double score = 0;
        for (long c = 2; c <= 1 << 17; c *= 4) {
            HostBuffer a = HostBuffer.allocate(DataType.FLOAT32, c, arena);
            HostBuffer b = HostBuffer.allocate(DataType.FLOAT32, c, arena);
            HostBuffer all = HostBuffer.allocate(DataType.FLOAT32, n * c, arena);
            HostBuffer all2 = HostBuffer.allocate(DataType.FLOAT32, n * c, arena);
            HostBuffer mine = all.slice(r * c, c);
            long last = c - 1;
            fill(a, r + 1);
            comm.allReduce(a, b, ReduceOp.SUM);
            comm.allReduce(a, a, ReduceOp.SUM);
            score += at(b, last) == 3 && at(a, 0) == 3 ? 0 : 1000;
            fill(a, r == 0 ? 5 : 0);
            comm.broadcast(a, b, 0);
            comm.broadcast(b, 0);
            score += at(b, last) == 5 ? 0 : 1000;
            fill(a, r + 1);
            comm.reduce(a, b, ReduceOp.SUM, 0);
            comm.reduce(a, ReduceOp.SUM, 0);
            score += r != 0 || at(b, last) == 3 && at(a, 0) == 3 ? 0 : 1000;
            fill(a, r + 1);
            comm.allGather(a, all);
            score += at(all, 0) == 1 && at(all, n * c - 1) == n ? 0 : 1000;
            fill(mine, r + 7);
            comm.allGather(mine, all);
            score += at(all, 0) == 7 && at(all, n * c - 1) == 6 + n ? 0 : 1000;
            fill(all, 1);
            comm.reduceScatter(all, b, ReduceOp.SUM);
            comm.reduceScatter(all, mine, ReduceOp.SUM);
            score += at(b, last) == n && at(all, r * c + last) == n ? 0 : 1000;
            for (long i = 0; i < n * c; i++) {
                all.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 10 * r + i / c);
            }
            comm.allToAll(all, all2); // rank r receives 10 * q + r from rank q
            comm.allToAll(all, all); // in place, the same
            score += at(all2, 0) == r && at(all2, n * c - 1) == 10 * (n - 1) + r
                    && at(all, 0) == r && at(all, n * c - 1) == 10 * (n - 1) + r ? 0 : 1000;
            fill(a, r + 1);
            comm.gather(a, all, 0);
            score += r != 0 || at(all, 0) == 1 && at(all, n * c - 1) == n ? 0 : 1000;
            fill(mine, r + 3);
            comm.gather(mine, all, 0);
            score += r != 0 || at(all, 0) == 3 && at(all, n * c - 1) == 2 + n ? 0 : 1000;
            for (long i = 0; i < n * c; i++) {
                all.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, r == 0 ? i / c + 20 : 0);
            }
            comm.scatter(all, b, 0);
            comm.scatter(all, mine, 0);
            score += at(b, last) == 20 + r && at(mine, 0) == 20 + r ? 0 : 1000;
            fill(a, r + 1);
            comm.sendRecv(a, (r + 1) % n, b, (r + n - 1) % n);
            score += at(b, last) == (r + n - 1) % n + 1 ? 0 : 1000;
        }
        return score;
    }

    /**
     * 40 small gathers to rank 0 while rank 0 is 300 us late (rank 1, eager, fills the small ring and
     * waits), then 40 small broadcasts from rank 0 while rank 1 is late (rank 0 fills it): 0 when every
     * result is right on this rank, 1000 for each that is not (2 ranks).
     */
    private static double ringAhead(org.jccl.Communicator comm) {
        int r = comm.rank();
        double score = 0;
        try (Arena arena = Arena.ofConfined()) {
            HostBuffer x = HostBuffer.allocate(DataType.FLOAT32, 3, arena);
            HostBuffer both = HostBuffer.allocate(DataType.FLOAT32, 6, arena);
            late(r == 0, 300_000);
            for (int i = 0; i < 40; i++) {
                fill(x, r + i);
                comm.gather(x, both, 0);
                score += r != 0 || at(both, 0) == i && at(both, 5) == 1 + i ? 0 : 1000;
            }
            late(r == 1, 300_000);
            for (int i = 0; i < 40; i++) {
                fill(x, r == 0 ? i : -1);
                comm.broadcast(x, 0);
                score += at(x, 2) == i ? 0 : 1000;
            }
        }
        return score;
    }

    private static float at(HostBuffer b, long i) {
        return b.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i);
    }

    /**
     * An async reduce to rank 0 (rank 1's recv is none), an in-place gather to rank 1 and scatter
     * from rank 0, an 8 KiB broadcast, and five small sends from rank 0 to rank 1, which comes
     * 200 us late to receive them (its mailbox holds four): 1 for each whose result is right on
     * this rank, 1000 for each that is not (2 ranks).
     */
    private static double rarerCalls(org.jccl.Communicator comm) {
        int r = comm.rank();
        double score = 0;
        try (Arena shared = Arena.ofShared()) {
            HostBuffer a = HostBuffer.allocate(DataType.FLOAT32, 3, shared);
            HostBuffer b = HostBuffer.allocate(DataType.FLOAT32, 3, shared);
            fill(a, r + 1);
            comm.reduceAsync(a, r == 0 ? b : null, ReduceOp.SUM, 0).await();
            score += r != 0 || b.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 2) == 3f ? 1 : 1000;
            HostBuffer all = HostBuffer.allocate(DataType.FLOAT32, 6, shared);
            HostBuffer mine = all.slice(3L * r, 3);
            fill(mine, r + 5);
            comm.gather(mine, all, 1);
            boolean gathered = r != 1 || all.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 1) == 5f
                    && all.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 4) == 6f;
            if (r == 0) {
                fill(all, 9);
            }
            comm.scatter(all, mine, 0);
            score += gathered && mine.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0)
                    == 9f ? 1 : 1000;
            HostBuffer mid = HostBuffer.allocate(DataType.FLOAT32, 2048, shared);
            fill(mid, r == 0 ? 4 : 0);
            comm.broadcast(mid, mid, 0);
            score += mid.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 2047) == 4f ? 1 : 1000;
            boolean ok = true;
            for (int i = 0; i < 5; i++) {
                if (r == 0) {
                    fill(a, i);
                    comm.send(a, 1);
                } else {
                    late(i == 0, 200_000);
                    comm.recv(b, 0);
                    ok &= b.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0) == i;
                }
            }
            score += ok ? 1 : 1000;
        }
        return score;
    }

    private static void fill(HostBuffer b, float v) {
        for (long i = 0; i < b.count(); i++) {
            b.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, v);
        }
    }

    /** Busy for {@code nanos} when {@code now} (a rank still computing). */
    private static void late(boolean now, long nanos) {
        if (now) {
            long end = System.nanoTime() + nanos;
            while (System.nanoTime() - end < 0) {
                Thread.onSpinWait();
            }
        }
    }
}
