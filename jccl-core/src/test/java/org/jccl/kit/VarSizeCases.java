package org.jccl.kit;

import java.lang.foreign.MemorySegment;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * The variable-size collectives (allGatherV, reduceScatterV, allToAllV, gatherV, scatterV) against
 * {@link Reference}: every type (and operator, for reduceScatterV), counts that differ per rank
 * with some ranks at zero, built on 0, 1, a prime and (for FLOAT32) a large count; blocks packed
 * (null displacements) and blocks in reverse rank order with gaps, whose elements must stay
 * untouched; in place, out of place, blocking and async; every root for FLOAT32.
 */
final class VarSizeCases {
    private VarSizeCases() {
    }

    private static final long[] SMALL = {0, 1, 1009};
    private static final long LARGE_BYTES = 1_000_003L; // a 4-byte prime count of about 250 K elements a call

    /** The counts to build on for type t: the small ones, and for FLOAT32 a large one split over the ranks. */
    private static long[] bases(Ctx ctx, DataType t) {
        if (t != DataType.FLOAT32) {
            return SMALL;
        }
        long[] out = java.util.Arrays.copyOf(SMALL, SMALL.length + 1);
        out[SMALL.length] = LARGE_BYTES / 4 / ctx.size();
        return out;
    }

    /** Rank r's count on base n: zero for every third rank from 1, else n + r (all zero for n = 0). */
    static long count(long n, int r) {
        return n == 0 || r % 3 == 1 ? 0 : n + r;
    }

    /** Counts of every rank on base n. */
    static long[] counts(int size, long n) {
        long[] c = new long[size];
        for (int r = 0; r < size; r++) {
            c[r] = count(n, r);
        }
        return c;
    }

    /** Displacements putting the blocks in reverse rank order, 2 elements apart and 2 from the start. */
    static long[] gapped(long[] counts) {
        long[] d = new long[counts.length];
        long at = 2;
        for (int r = counts.length - 1; r >= 0; r--) {
            d[r] = at;
            at += counts[r] + 2;
        }
        return d;
    }

    /** The elements a buffer of these blocks needs. */
    static long extent(long[] counts, long[] displs) {
        long end = 0;
        for (int r = 0; r < counts.length; r++) {
            end = Math.max(end, displs == null ? end + counts[r] : displs[r] + counts[r] + 2);
        }
        return end;
    }

    /** Packed displacements (what null stands for). */
    static long[] packed(long[] counts) {
        long[] d = new long[counts.length];
        for (int r = 1; r < counts.length; r++) {
            d[r] = d[r - 1] + counts[r - 1];
        }
        return d;
    }

    /**
     * The bytes a receive buffer of {@code total} elements must hold: the poison marker
     * everywhere, block r ({@code counts[r]} at {@code displs[r]}) from {@code block.apply(r)}.
     */
    private static MemorySegment expected(Ctx ctx, DataType t, long total, long[] counts, long[] displs,
                                          java.util.function.IntFunction<MemorySegment> block) {
        MemorySegment want = ctx.host(t, total);
        want.fill((byte) 0x5a);
        long es = t.byteSize();
        for (int r = 0; r < counts.length; r++) {
            if (counts[r] > 0) {
                MemorySegment.copy(block.apply(r), 0, want, displs[r] * es, counts[r] * es);
            }
        }
        return want;
    }

    /** A type x count x layout case: count base n, gapped (true) or packed displacements, seed s1. */
    private interface Case {
        void run(DataType t, long n, boolean gaps, long s1);
    }

    /** Runs {@code body} for every type x base count x layout, the seeds going on from case to case. */
    private static void forCases(Ctx ctx, Case body) {
        long sd = ctx.seed();
        for (DataType t : ctx.types()) {
            for (long n : bases(ctx, t)) {
                for (boolean gaps : new boolean[] {false, true}) {
                    body.run(t, n, gaps, ++sd);
                }
            }
        }
    }

    static void allGatherV(Ctx ctx) {
        Communicator c = ctx.comm();
        int me = ctx.rank();
        forCases(ctx, (t, n, gaps, s1) -> {
            long[] counts = counts(ctx.size(), n);
            long[] displs = gaps ? gapped(counts) : null;
            long[] at = gaps ? displs : packed(counts);
            long total = extent(counts, displs);
            String what = "allGatherV " + t + " base " + n + (gaps ? " gapped" : " packed");
            MemorySegment want = expected(ctx, t, total, counts, at, r -> ctx.input(t, ReduceOp.SUM, s1, r, counts[r]));
            Buffer send = ctx.buffer(t, ReduceOp.SUM, s1, me, counts[me]);
            Buffer recv = ctx.poisoned(t, total);
            c.allGatherV(send, recv, counts, displs);
            ctx.checkBytes(() -> what, recv, 0, want);
            Buffer b = ctx.poisoned(t, total);
            ctx.mem().write(b.slice(at[me], counts[me]), ctx.input(t, ReduceOp.SUM, s1, me, counts[me]));
            if (gaps) {
                c.allGatherVAsync(b.slice(at[me], counts[me]), b, counts, displs).await();
            } else {
                c.allGatherV(b, counts, displs);
            }
            ctx.checkBytes(() -> what + " in place", b, 0, want);
        });
    }

    static void reduceScatterV(Ctx ctx) {
        Communicator c = ctx.comm();
        int me = ctx.rank();
        long sd0 = ctx.seed();
        long[] sd = {sd0};
        for (DataType t : ctx.types()) {
            for (ReduceOp op : ctx.ops(t)) {
                boolean main = t == DataType.FLOAT32 && op.kind() == ReduceOp.Kind.SUM;
                for (long n : main ? bases(ctx, t) : SMALL) {
                    long s1 = ++sd[0];
                    long[] counts = counts(ctx.size(), n);
                    long[] off = packed(counts);
                    long total = off[ctx.size() - 1] + counts[ctx.size() - 1];
                    String what = "reduceScatterV " + t + " " + op + " base " + n;
                    Buffer send = ctx.buffer(t, op, s1, me, total);
                    Buffer recv = ctx.poisoned(t, counts[me]);
                    c.reduceScatterV(send, recv, counts, op);
                    ctx.checkReduced(() -> what, recv, 0, t, op, s1, off[me], counts[me]);
                    ctx.checkBytes(() -> what + ": send buffer changed", send, 0, ctx.input(t, op, s1, me, total));
                    if (n == 1) {
                        c.reduceScatterVAsync(send, send.slice(off[me], counts[me]), counts, op).await();
                    } else {
                        c.reduceScatterV(send, counts, op);
                    }
                    ctx.checkReduced(() -> what + " in place", send, off[me], t, op, s1, off[me], counts[me]);
                }
            }
        }
    }

    /** Rank i's count to rank j on base n (some pairs zero, most different). */
    static long pairCount(long n, int i, int j) {
        return n == 0 || (i + j) % 3 == 1 ? 0 : n + i + 2L * j;
    }

    static void allToAllV(Ctx ctx) {
        Communicator c = ctx.comm();
        int me = ctx.rank();
        int size = ctx.size();
        forCases(ctx, (t, n, gaps, s1) -> {
            long[] sc = new long[size];
            long[] rc = new long[size];
            for (int p = 0; p < size; p++) {
                sc[p] = pairCount(n, me, p);
                rc[p] = pairCount(n, p, me);
            }
            long[] sdis = gaps ? gapped(sc) : null;
            long[] rdis = gaps ? gapped(rc) : null;
            long[] rat = gaps ? rdis : packed(rc);
            String what = "allToAllV " + t + " base " + n + (gaps ? " gapped" : " packed");
            Buffer send = ctx.buffer(t, ReduceOp.SUM, s1, me, extent(sc, sdis));
            Buffer recv = ctx.poisoned(t, extent(rc, rdis));
            MemorySegment want = expected(ctx, t, extent(rc, rdis), rc, rat, p -> {
                // rank p's send buffer, as p laid it out, and p's block for this rank in it
                long[] psc = new long[size];
                for (int q = 0; q < size; q++) {
                    psc[q] = pairCount(n, p, q);
                }
                long[] pdis = gaps ? gapped(psc) : packed(psc);
                long bs = t.byteSize();
                return ctx.input(t, ReduceOp.SUM, s1, p, extent(psc, gaps ? pdis : null)).asSlice(pdis[me] * bs, psc[me] * bs);
            });
            if (gaps) {
                c.allToAllVAsync(send, sc, sdis, recv, rc, rdis).await();
            } else {
                c.allToAllV(send, sc, sdis, recv, rc, rdis);
            }
            ctx.checkBytes(() -> what, recv, 0, want);
        });
    }

    /** Every root for FLOAT32 and base 1, the last rank otherwise. */
    private static int[] roots(Ctx ctx, DataType t, long n) {
        boolean every = t == DataType.FLOAT32 || n == 1;
        return java.util.stream.IntStream.range(every ? 0 : ctx.size() - 1, ctx.size()).toArray();
    }

    static void gatherV(Ctx ctx) {
        rooted(ctx, true);
    }

    static void scatterV(Ctx ctx) {
        rooted(ctx, false);
    }

    /**
     * Gather-v ({@code gather}: block r of the root's buffer = rank r's input) or scatter-v (rank
     * r's buffer = block r of the root's input); the counts and displacements on the root only.
     */
    private static void rooted(Ctx ctx, boolean gather) {
        Communicator c = ctx.comm();
        int me = ctx.rank();
        forCases(ctx, (t, n, gaps, s1) -> {
            for (int rt : roots(ctx, t, n)) {
                long[] counts = counts(ctx.size(), n);
                long[] displs = gaps ? gapped(counts) : null;
                long[] at = gaps ? displs : packed(counts);
                long total = extent(counts, displs);
                long[] rc = me == rt ? counts : null;
                long[] rd = me == rt ? displs : null;
                String what = (gather ? "gatherV " : "scatterV ") + t + " base " + n + (gaps ? " gapped" : " packed")
                        + " root " + rt;
                // the root's buffer of every block, and this rank's own
                Buffer all = me != rt ? null : gather ? ctx.poisoned(t, total) : ctx.buffer(t, ReduceOp.SUM, s1, rt, total);
                Buffer mine = gather ? ctx.buffer(t, ReduceOp.SUM, s1, me, counts[me]) : ctx.poisoned(t, counts[me]);
                if (gather && gaps) {
                    c.gatherVAsync(mine, all, rc, rd, rt).await();
                } else if (gather) {
                    c.gatherV(mine, all, rc, rd, rt);
                } else if (gaps) {
                    c.scatterVAsync(all, rc, rd, mine, rt).await();
                } else {
                    c.scatterV(all, rc, rd, mine, rt);
                }
                long bs = t.byteSize();
                if (!gather) {
                    ctx.checkBytes(() -> what, mine, 0,
                            ctx.input(t, ReduceOp.SUM, s1, rt, total).asSlice(at[me] * bs, counts[me] * bs));
                } else if (me == rt) {
                    ctx.checkBytes(() -> what, all, 0, expected(ctx, t, total, counts, at,
                            r -> ctx.input(t, ReduceOp.SUM, s1, r, counts[r])));
                }
            }
        });
    }

    /** Bad counts and displacements fail on every rank before any byte moves; the communicator stays usable. */
    static void badArguments(Ctx ctx) {
        Communicator c = ctx.comm();
        int size = ctx.size();
        int me = ctx.rank();
        Class<IllegalArgumentException> iae = IllegalArgumentException.class;
        long[] ones = counts(size, 1);
        long[] fours = new long[size];
        java.util.Arrays.fill(fours, 4);
        Buffer f4 = ctx.mem().allocate(DataType.FLOAT32, 4);
        Buffer all = ctx.mem().allocate(DataType.FLOAT32, 4L * size);
        Buffer other = ctx.mem().allocate(DataType.FLOAT32, 4L * size);
        ctx.expectThrows(iae, "allGatherV with one count too few", () -> c.allGatherV(f4, all,
                java.util.Arrays.copyOf(fours, size - 1), null));
        long[] negative = fours.clone();
        negative[size - 1] = -1;
        ctx.expectThrows(iae, "allGatherV with a negative count", () -> c.allGatherV(f4, all, negative, null));
        ctx.expectThrows(iae, "allGatherV into a too small recv", () -> c.allGatherV(f4, all.slice(0, 4L * size - 1),
                fours, null));
        ctx.expectThrows(iae, "allGatherV with a send of another count than this rank's",
                () -> c.allGatherV(all.slice(0, 3), all, fours, null));
        if (size > 1) {
            long[] overlapping = packed(fours);
            overlapping[1] = 2;
            ctx.expectThrows(iae, "allGatherV with overlapping blocks", () -> c.allGatherV(f4, other, fours,
                    overlapping));
        }
        ctx.expectThrows(iae, "reduceScatterV from a send shorter than the counts' sum",
                () -> c.reduceScatterV(all.slice(0, 4L * size - 1), f4, fours, ReduceOp.SUM));
        ctx.expectThrows(iae, "reduceScatterV with a null op", () -> c.reduceScatterV(all, f4, fours, null));
        ctx.expectThrows(iae, "allToAllV in place", () -> c.allToAllV(all, fours, null, all, fours, null));
        ctx.expectThrows(iae, "allToAllV with null recvCounts", () -> c.allToAllV(all, fours, null, other, null, null));
        ctx.expectThrows(iae, "gatherV with root = size", () -> c.gatherV(f4, all, fours, null, size));
        if (me == 0) {
            ctx.expectThrows(iae, "gatherV at the root without counts", () -> c.gatherV(f4, all, null, null, 0));
        }
        ctx.expectThrows(iae, "scatterV from a null send at the root",
                () -> c.scatterV(null, ones, null, ctx.mem().allocate(DataType.FLOAT32, ones[me]), me));
        // nothing moved and the communicator still works
        long sd = ctx.seed();
        long[] counts = counts(size, 5);
        Buffer recv = ctx.poisoned(DataType.FLOAT32, extent(counts, null));
        c.allGatherV(ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, sd, me, counts[me]), recv, counts, null);
        ctx.checkBytes(() -> "allGatherV after the rejected calls", recv, 0, expected(ctx, DataType.FLOAT32,
                extent(counts, null), counts, packed(counts), r -> ctx.input(DataType.FLOAT32, ReduceOp.SUM, sd, r,
                        counts[r])));
    }
}
