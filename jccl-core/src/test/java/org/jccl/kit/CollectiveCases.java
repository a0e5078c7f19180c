package org.jccl.kit;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * Every collective x type x operator x count, in and out of place, every root, against {@link
 * Reference}. Counts: 0, 1, 2, a prime; for the main types also the algorithm and chunk
 * thresholds of the host engine and TCP (16 KiB .. 1 MiB) +-1 element and a large prime count.
 */
final class CollectiveCases {
    private CollectiveCases() {
    }

    private static final long[] SMALL = {0, 1, 2, 1009};
    private static final long[] THRESHOLD_BYTES = {16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20};

    /**
     * Counts for type t: small ones always; for the main types of a full run the thresholds +-1
     * (per block when {@code perBlock}: the collectives whose buffers hold size() blocks) and
     * {@code largeBytes} worth of elements (a prime count for 4-byte types).
     */
    static long[] counts(Ctx ctx, DataType t, ReduceOp op, long largeBytes, boolean perBlock) {
        boolean main = (t == DataType.FLOAT32 || t == DataType.INT8) && (op == null || op.kind() == ReduceOp.Kind.SUM
                || op.kind() == ReduceOp.Kind.MAX && t == DataType.INT8);
        List<Long> out = new ArrayList<>();
        for (long c : SMALL) {
            out.add(c);
        }
        if (main) {
            if (ctx.full()) {
                for (long b : THRESHOLD_BYTES) {
                    long e = b / t.byteSize() / (perBlock ? ctx.size() : 1);
                    out.add(e - 1);
                    out.add(e);
                    out.add(e + 1);
                }
            }
            out.add(largeBytes / t.byteSize());
        } else if (t == DataType.FLOAT32 || t == DataType.INT8 || t == DataType.BFLOAT16) {
            out.add(7919L); // a mid prime: several chunks of the shared-memory mailbox for 1-byte types
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    private static final long LARGE = 4_000_037; // bytes: a 4-byte prime count of about 1 M elements

    /** The seeds of a collective's calls: ctx.seed() + 1, + 2, ... in the order of the calls. */
    private static final class Seeds {
        private long sd;

        Seeds(Ctx ctx) {
            sd = ctx.seed();
        }

        long next() {
            return ++sd;
        }
    }

    /** A collective's case: type t, operator op (null for data movement), count n. */
    private interface Case {
        void run(DataType t, ReduceOp op, long n, Seeds seeds);
    }

    /**
     * Runs {@code body} for every type x (when {@code withOps}, every operator of the type) x count
     * of {@link #counts}, in that order, the seeds going on from case to case.
     */
    private static void forCases(Ctx ctx, boolean withOps, long largeBytes, boolean perBlock, Case body) {
        Seeds seeds = new Seeds(ctx);
        for (DataType t : ctx.types()) {
            for (ReduceOp op : withOps ? ctx.ops(t) : java.util.Collections.<ReduceOp>singletonList(null)) {
                for (long n : counts(ctx, t, op, largeBytes, perBlock)) {
                    body.run(t, op, n, seeds);
                }
            }
        }
    }

    /** A rooted data movement's case: type t, count n, root rt, its seed s1. */
    private interface RootedCase {
        void run(DataType t, long n, int rt, long s1);
    }

    /**
     * {@link #forCases} without operators, and for each case every root (FLOAT32 and count 1) or
     * the last rank only, each root with the next seed.
     */
    private static void forRootedCases(Ctx ctx, long largeBytes, boolean perBlock, RootedCase body) {
        forCases(ctx, false, largeBytes, perBlock, (t, op, n, seeds) -> {
            for (int rt : roots(ctx, t == DataType.FLOAT32 || n == 1)) {
                body.run(t, n, rt, seeds.next());
            }
        });
    }

    /** The roots to try: every rank when {@code everyRoot}, else the last only. */
    private static int[] roots(Ctx ctx, boolean everyRoot) {
        return java.util.stream.IntStream.range(everyRoot ? 0 : ctx.size() - 1, ctx.size()).toArray();
    }

    /**
     * Checks block p (n elements at p * n) of {@code recv} (out of place) and of {@code b} (in
     * place) against {@code want.apply(p)}, for every rank p; {@code whose} says "of" or "from".
     */
    private static void checkBlocks(Ctx ctx, String what, String whose, Buffer recv, Buffer b, long n,
                                    java.util.function.IntFunction<MemorySegment> want) {
        for (int p = 0; p < ctx.size(); p++) {
            int pp = p;
            MemorySegment w = want.apply(p);
            ctx.checkBytes(() -> what + ": block " + whose + " rank " + pp, recv, p * n, w);
            ctx.checkBytes(() -> what + " in place: block " + whose + " rank " + pp, b, p * n, w);
        }
    }

    static void allReduce(Ctx ctx) {
        Communicator c = ctx.comm();
        forCases(ctx, true, LARGE, false, (t, op, n, seeds) -> {
            long s1 = seeds.next();
            String what = "allReduce " + t + " " + op + " count " + n;
            Buffer send = ctx.buffer(t, op, s1, ctx.rank(), n);
            Buffer recv = ctx.poisoned(t, n);
            c.allReduce(send, recv, op);
            ctx.checkReduced(() -> what, recv, 0, t, op, s1, 0, n);
            ctx.checkBytes(() -> what + ": send buffer changed", send, 0, ctx.input(t, op, s1, ctx.rank(), n));
            c.allReduce(send, op);
            ctx.checkReduced(() -> what + " in place", send, 0, t, op, s1, 0, n);
        });
    }

    static void reduce(Ctx ctx) {
        Communicator c = ctx.comm();
        forCases(ctx, true, LARGE / 4, false, (t, op, n, seeds) -> {
            // every root for the main type, root size-1 otherwise
            for (int rt : roots(ctx, t == DataType.FLOAT32 && op.kind() == ReduceOp.Kind.SUM)) {
                long s1 = seeds.next();
                String what = "reduce " + t + " " + op + " count " + n + " root " + rt;
                Buffer send = ctx.buffer(t, op, s1, ctx.rank(), n);
                Buffer recv = ctx.rank() == rt ? ctx.poisoned(t, n) : (n == 1 ? null : ctx.poisoned(t, n));
                c.reduce(send, recv, op, rt);
                if (ctx.rank() == rt) {
                    ctx.checkReduced(() -> what, recv, 0, t, op, s1, 0, n);
                }
                MemorySegment mine = ctx.input(t, op, s1, ctx.rank(), n);
                ctx.checkBytes(() -> what + ": send buffer changed", send, 0, mine);
                c.reduce(send, op, rt);
                if (ctx.rank() == rt) {
                    ctx.checkReduced(() -> what + " in place", send, 0, t, op, s1, 0, n);
                } else {
                    ctx.checkBytes(() -> what + " in place: a non-root's buffer changed", send, 0, mine);
                }
            }
        });
    }

    static void broadcast(Ctx ctx) {
        Communicator c = ctx.comm();
        forRootedCases(ctx, LARGE, false, (t, n, rt, s1) -> {
            String what = "broadcast " + t + " count " + n + " root " + rt;
            MemorySegment want = ctx.input(t, ReduceOp.SUM, s1, rt, n);
            Buffer send = ctx.rank() == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n) : ctx.poisoned(t, n);
            Buffer recv = ctx.poisoned(t, n);
            c.broadcast(send, recv, rt);
            ctx.checkBytes(() -> what, recv, 0, want);
            Buffer b = ctx.rank() == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n) : ctx.poisoned(t, n);
            c.broadcast(b, rt);
            ctx.checkBytes(() -> what + " in place", b, 0, want);
        });
    }

    static void allGather(Ctx ctx) {
        Communicator c = ctx.comm();
        int size = ctx.size();
        forCases(ctx, false, LARGE / 4, true, (t, op, n, seeds) -> {
            long s1 = seeds.next();
            String what = "allGather " + t + " count " + n;
            Buffer send = ctx.buffer(t, ReduceOp.SUM, s1, ctx.rank(), n);
            Buffer recv = ctx.poisoned(t, n * size);
            c.allGather(send, recv);
            Buffer b = ctx.poisoned(t, n * size);
            ctx.mem().write(b.slice(ctx.rank() * n, n), ctx.input(t, ReduceOp.SUM, s1, ctx.rank(), n));
            c.allGather(b);
            checkBlocks(ctx, what, "of", recv, b, n, p -> ctx.input(t, ReduceOp.SUM, s1, p, n));
        });
    }

    static void reduceScatter(Ctx ctx) {
        Communicator c = ctx.comm();
        int size = ctx.size();
        forCases(ctx, true, LARGE / 4, true, (t, op, n, seeds) -> {
            long s1 = seeds.next();
            String what = "reduceScatter " + t + " " + op + " count " + n;
            long first = ctx.rank() * n;
            Buffer send = ctx.buffer(t, op, s1, ctx.rank(), n * size);
            Buffer recv = ctx.poisoned(t, n);
            c.reduceScatter(send, recv, op);
            ctx.checkReduced(() -> what, recv, 0, t, op, s1, first, n);
            c.reduceScatter(send, op);
            ctx.checkReduced(() -> what + " in place", send, first, t, op, s1, first, n);
        });
    }

    static void allToAll(Ctx ctx) {
        Communicator c = ctx.comm();
        int size = ctx.size();
        forCases(ctx, false, LARGE / 4, true, (t, op, n, seeds) -> {
            long s1 = seeds.next();
            String what = "allToAll " + t + " count " + n;
            Buffer send = ctx.buffer(t, ReduceOp.SUM, s1, ctx.rank(), n * size);
            Buffer recv = ctx.poisoned(t, n * size);
            c.allToAll(send, recv);
            Buffer b = ctx.buffer(t, ReduceOp.SUM, s1, ctx.rank(), n * size);
            c.allToAll(b);
            long bs = n * t.byteSize();
            checkBlocks(ctx, what, "from", recv, b, n,
                    p -> ctx.input(t, ReduceOp.SUM, s1, p, n * size).asSlice(ctx.rank() * bs, bs));
        });
    }

    static void gather(Ctx ctx) {
        Communicator c = ctx.comm();
        int size = ctx.size();
        forRootedCases(ctx, LARGE / 4, true, (t, n, rt, s1) -> {
            String what = "gather " + t + " count " + n + " root " + rt;
            Buffer send = ctx.buffer(t, ReduceOp.SUM, s1, ctx.rank(), n);
            Buffer recv = ctx.rank() == rt ? ctx.poisoned(t, n * size) : (n == 1 ? null : ctx.poisoned(t, n * size));
            c.gather(send, recv, rt);
            if (ctx.rank() == rt) {
                for (int p = 0; p < size; p++) {
                    int pp = p;
                    ctx.checkBytes(() -> what + ": block of rank " + pp, recv, p * n, ctx.input(t, ReduceOp.SUM, s1, p, n));
                }
            }
            // In place: the root's send is its own block of recv (the others' calls as before)
            if (ctx.rank() == rt) {
                Buffer b = ctx.poisoned(t, n * size);
                ctx.mem().write(b.slice(rt * n, n), ctx.input(t, ReduceOp.SUM, s1, rt, n));
                c.gather(b.slice(rt * n, n), b, rt);
                for (int p = 0; p < size; p++) {
                    int pp = p;
                    ctx.checkBytes(() -> what + " in place: block of rank " + pp, b, p * n,
                            ctx.input(t, ReduceOp.SUM, s1, p, n));
                }
            } else {
                c.gather(send, recv, rt);
            }
        });
    }

    static void scatter(Ctx ctx) {
        Communicator c = ctx.comm();
        int size = ctx.size();
        forRootedCases(ctx, LARGE / 4, true, (t, n, rt, s1) -> {
            String what = "scatter " + t + " count " + n + " root " + rt;
            Buffer send = ctx.rank() == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n * size) : (n == 1 ? null : ctx.poisoned(t, n * size));
            Buffer recv = ctx.poisoned(t, n);
            c.scatter(send, recv, rt);
            long bs = n * t.byteSize();
            ctx.checkBytes(() -> what, recv, 0, ctx.input(t, ReduceOp.SUM, s1, rt, n * size).asSlice(ctx.rank() * bs, bs));
            // In place: the root's recv is its own block of send (the others' calls as before)
            Buffer again = ctx.rank() == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n * size) : ctx.poisoned(t, n);
            c.scatter(ctx.rank() == rt ? again : send, ctx.rank() == rt ? again.slice(rt * n, n) : again, rt);
            ctx.checkBytes(() -> what + " in place", again, ctx.rank() == rt ? rt * n : 0,
                    ctx.input(t, ReduceOp.SUM, s1, rt, n * size).asSlice(ctx.rank() * bs, bs));
        });
    }

    /**
     * Streams of 40 small rooted calls of one kind and root (gather, broadcast, scatter, reduce),
     * each stream followed by an all-reduce too large for a small slot; every result is checked.
     * The ranks that post and return (a gather's and a reduce's non-roots, a broadcast's and a
     * scatter's root) may run ahead, up to as many calls as the transport lets them: over shared
     * memory the small gathers, broadcasts and scatters (and reduces, up to 4 ranks) take a ring of
     * 32 slots of their own, which a stream wraps, and the root reads every call's slots before they
     * are written again (up to 4 ranks, non-roots that find it full wait paced and a gather's or
     * reduce's root fetches the next calls' posts ahead).
     */
    static void rootedRunAhead(Ctx ctx) {
        Communicator c = ctx.comm();
        int size = ctx.size();
        int r = ctx.rank();
        DataType t = DataType.FLOAT32;
        long n = 7;
        long seed = ctx.seed();
        for (int i = 0; i < 160; i++) {
            int kind = i / 40;
            int rt = (size - 1 + kind) % size;
            long s1 = seed + 31L * i;
            String what = "call " + i + " of streams of small rooted calls: ";
            switch (kind) {
                case 0 -> {
                    Buffer recv = ctx.poisoned(t, n * size);
                    c.gather(ctx.buffer(t, ReduceOp.SUM, s1, r, n), recv, rt);
                    if (r == rt) {
                        for (int p = 0; p < size; p++) {
                            int pp = p;
                            ctx.checkBytes(() -> what + "gather root " + rt + ", block of rank " + pp, recv, p * n,
                                    ctx.input(t, ReduceOp.SUM, s1, p, n));
                        }
                    }
                }
                case 1 -> {
                    Buffer b = r == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n) : ctx.poisoned(t, n);
                    c.broadcast(b, rt);
                    ctx.checkBytes(() -> what + "broadcast root " + rt, b, 0, ctx.input(t, ReduceOp.SUM, s1, rt, n));
                }
                case 2 -> {
                    Buffer send = r == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n * size) : ctx.poisoned(t, n * size);
                    Buffer recv = ctx.poisoned(t, n);
                    c.scatter(send, recv, rt);
                    long bs = n * t.byteSize();
                    ctx.checkBytes(() -> what + "scatter root " + rt, recv, 0,
                            ctx.input(t, ReduceOp.SUM, s1, rt, n * size).asSlice(r * bs, bs));
                }
                default -> {
                    Buffer recv = ctx.poisoned(t, n);
                    c.reduce(ctx.buffer(t, ReduceOp.SUM, s1, r, n), recv, ReduceOp.SUM, rt);
                    if (r == rt) {
                        ctx.checkReduced(() -> what + "reduce root " + rt, recv, 0, t, ReduceOp.SUM, s1, 0, n);
                    }
                }
            }
            if (i % 40 == 39) {
                long big = 2003; // 8012 bytes: more than a small slot
                Buffer b = ctx.buffer(t, ReduceOp.SUM, s1, r, big);
                c.allReduce(b, ReduceOp.SUM);
                ctx.checkReduced(() -> what + "the all-reduce after it", b, 0, t, ReduceOp.SUM, s1, 0, big);
            }
        }
    }

    /** A barrier returns only once every rank entered it: the last rank enters 300 ms late. */
    static void barrier(Ctx ctx) throws Exception {
        Communicator c = ctx.comm();
        for (int i = 0; i < 10; i++) {
            c.barrier();
        }
        c.barrierAsync().await();
        if (ctx.size() < 2) {
            return;
        }
        c.barrier();
        long t0 = System.nanoTime();
        if (ctx.rank() == ctx.size() - 1) {
            Thread.sleep(300);
        }
        c.barrier();
        long ms = (System.nanoTime() - t0) / 1_000_000;
        ctx.check(ms >= 250, () -> "barrier returned after " + ms + " ms although the last rank entered it 300 ms late");
    }

    /**
     * Floats that do not sum exactly: every rank gets bitwise the same all-reduce result, and the
     * same call gives the same bits again.
     */
    static void bitwiseIdentity(Ctx ctx) {
        if (!ctx.traits().bitwiseIdentical()) {
            return;
        }
        Communicator c = ctx.comm();
        for (DataType t : List.of(DataType.FLOAT32, DataType.FLOAT64, DataType.BFLOAT16, DataType.FLOAT16)) {
            if (!ctx.types().contains(t)) {
                continue;
            }
            for (long n : new long[] {1009, 300_007}) {
                String what = "bitwiseIdentity " + t + " count " + n;
                MemorySegment in = ctx.host(t, n);
                java.util.SplittableRandom rnd = new java.util.SplittableRandom(ctx.seed() * 31 + ctx.rank());
                for (long i = 0; i < n; i++) {
                    double v = (rnd.nextDouble() - 0.5) * Math.pow(2, rnd.nextInt(-20, 20));
                    switch (t) {
                        case FLOAT32 -> in.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) v);
                        case FLOAT64 -> in.setAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED, i, v);
                        case FLOAT16 -> in.setAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, i, Float.floatToFloat16((float) v));
                        default -> in.setAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, i,
                                (short) (Float.floatToRawIntBits((float) v) >>> 16));
                    }
                }
                Buffer send = ctx.mem().allocate(t, n);
                ctx.mem().write(send, in);
                Buffer r1 = ctx.poisoned(t, n);
                Buffer r2 = ctx.poisoned(t, n);
                c.allReduce(send, r1, ReduceOp.SUM);
                c.allReduce(send, r2, ReduceOp.SUM);
                MemorySegment first = ctx.host(t, n);
                first.copyFrom(ctx.mem().read(r1).asSlice(0, first.byteSize()));
                ctx.checkBytes(() -> what + ": the same call gave other bits the second time", r2, 0, first);
                Buffer all = ctx.poisoned(t, n * ctx.size());
                c.allGather(r1, all);
                for (int p = 0; p < ctx.size(); p++) {
                    int pp = p;
                    ctx.checkBytes(() -> what + ": rank " + pp + "'s result differs from this rank's", all, p * n, first);
                }
            }
        }
    }
}
