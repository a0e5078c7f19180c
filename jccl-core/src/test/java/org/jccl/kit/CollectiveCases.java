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

    static List<KitCase> cases() {
        return List.of(
                KitCase.of("allReduce", CollectiveCases::allReduce),
                KitCase.of("reduce", CollectiveCases::reduce),
                KitCase.of("broadcast", CollectiveCases::broadcast),
                KitCase.of("allGather", CollectiveCases::allGather),
                KitCase.of("reduceScatter", CollectiveCases::reduceScatter),
                KitCase.of("allToAll", CollectiveCases::allToAll),
                KitCase.of("gather", CollectiveCases::gather),
                KitCase.of("scatter", CollectiveCases::scatter),
                KitCase.of("barrier", CollectiveCases::barrier),
                KitCase.of("bitwiseIdentity", CollectiveCases::bitwiseIdentity));
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

    static void allReduce(Ctx ctx) {
        Communicator c = ctx.comm();
        long sd = ctx.seed();
        for (DataType t : ctx.types()) {
            for (ReduceOp op : ctx.ops(t)) {
                for (long n : counts(ctx, t, op, LARGE, false)) {
                    long s1 = ++sd;
                    String what = "allReduce " + t + " " + op + " count " + n;
                    Buffer send = ctx.buffer(t, op, s1, ctx.rank(), n);
                    Buffer recv = ctx.poisoned(t, n);
                    c.allReduce(send, recv, op);
                    ctx.checkReduced(() -> what, recv, 0, t, op, s1, 0, n);
                    ctx.checkBytes(() -> what + ": send buffer changed", send, 0, ctx.input(t, op, s1, ctx.rank(), n));
                    c.allReduce(send, op);
                    ctx.checkReduced(() -> what + " in place", send, 0, t, op, s1, 0, n);
                }
            }
        }
    }

    static void reduce(Ctx ctx) {
        Communicator c = ctx.comm();
        long sd = ctx.seed();
        for (DataType t : ctx.types()) {
            for (ReduceOp op : ctx.ops(t)) {
                for (long n : counts(ctx, t, op, LARGE / 4, false)) {
                    // every root for the main type, root size-1 otherwise
                    boolean everyRoot = t == DataType.FLOAT32 && op.kind() == ReduceOp.Kind.SUM;
                    for (int root = everyRoot ? 0 : ctx.size() - 1; root < ctx.size(); root++) {
                        int rt = root;
                        long s1 = ++sd;
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
                }
            }
        }
    }

    static void broadcast(Ctx ctx) {
        Communicator c = ctx.comm();
        long sd = ctx.seed();
        for (DataType t : ctx.types()) {
            for (long n : counts(ctx, t, null, LARGE, false)) {
                boolean everyRoot = t == DataType.FLOAT32 || n == 1;
                for (int root = everyRoot ? 0 : ctx.size() - 1; root < ctx.size(); root++) {
                    int rt = root;
                    long s1 = ++sd;
                    String what = "broadcast " + t + " count " + n + " root " + rt;
                    MemorySegment want = ctx.input(t, ReduceOp.SUM, s1, rt, n);
                    Buffer send = ctx.rank() == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n) : ctx.poisoned(t, n);
                    Buffer recv = ctx.poisoned(t, n);
                    c.broadcast(send, recv, rt);
                    ctx.checkBytes(() -> what, recv, 0, want);
                    Buffer b = ctx.rank() == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n) : ctx.poisoned(t, n);
                    c.broadcast(b, rt);
                    ctx.checkBytes(() -> what + " in place", b, 0, want);
                }
            }
        }
    }

    static void allGather(Ctx ctx) {
        Communicator c = ctx.comm();
        long sd = ctx.seed();
        int size = ctx.size();
        for (DataType t : ctx.types()) {
            for (long n : counts(ctx, t, null, LARGE / 4, true)) {
                long s1 = ++sd;
                String what = "allGather " + t + " count " + n;
                Buffer send = ctx.buffer(t, ReduceOp.SUM, s1, ctx.rank(), n);
                Buffer recv = ctx.poisoned(t, n * size);
                c.allGather(send, recv);
                Buffer b = ctx.poisoned(t, n * size);
                ctx.mem().write(b.slice(ctx.rank() * n, n), ctx.input(t, ReduceOp.SUM, s1, ctx.rank(), n));
                c.allGather(b);
                for (int p = 0; p < size; p++) {
                    int pp = p;
                    MemorySegment want = ctx.input(t, ReduceOp.SUM, s1, p, n);
                    ctx.checkBytes(() -> what + ": block of rank " + pp, recv, p * n, want);
                    ctx.checkBytes(() -> what + " in place: block of rank " + pp, b, p * n, want);
                }
            }
        }
    }

    static void reduceScatter(Ctx ctx) {
        Communicator c = ctx.comm();
        long sd = ctx.seed();
        int size = ctx.size();
        for (DataType t : ctx.types()) {
            for (ReduceOp op : ctx.ops(t)) {
                for (long n : counts(ctx, t, op, LARGE / 4, true)) {
                    long s1 = ++sd;
                    String what = "reduceScatter " + t + " " + op + " count " + n;
                    long first = ctx.rank() * n;
                    Buffer send = ctx.buffer(t, op, s1, ctx.rank(), n * size);
                    Buffer recv = ctx.poisoned(t, n);
                    c.reduceScatter(send, recv, op);
                    ctx.checkReduced(() -> what, recv, 0, t, op, s1, first, n);
                    c.reduceScatter(send, op);
                    ctx.checkReduced(() -> what + " in place", send, first, t, op, s1, first, n);
                }
            }
        }
    }

    static void allToAll(Ctx ctx) {
        Communicator c = ctx.comm();
        long sd = ctx.seed();
        int size = ctx.size();
        for (DataType t : ctx.types()) {
            for (long n : counts(ctx, t, null, LARGE / 4, true)) {
                long s1 = ++sd;
                String what = "allToAll " + t + " count " + n;
                Buffer send = ctx.buffer(t, ReduceOp.SUM, s1, ctx.rank(), n * size);
                Buffer recv = ctx.poisoned(t, n * size);
                c.allToAll(send, recv);
                Buffer b = ctx.buffer(t, ReduceOp.SUM, s1, ctx.rank(), n * size);
                c.allToAll(b);
                long bs = n * t.byteSize();
                for (int p = 0; p < size; p++) {
                    int pp = p;
                    MemorySegment want = ctx.input(t, ReduceOp.SUM, s1, p, n * size).asSlice(ctx.rank() * bs, bs);
                    ctx.checkBytes(() -> what + ": block from rank " + pp, recv, p * n, want);
                    ctx.checkBytes(() -> what + " in place: block from rank " + pp, b, p * n, want);
                }
            }
        }
    }

    static void gather(Ctx ctx) {
        Communicator c = ctx.comm();
        long sd = ctx.seed();
        int size = ctx.size();
        for (DataType t : ctx.types()) {
            for (long n : counts(ctx, t, null, LARGE / 4, true)) {
                boolean everyRoot = t == DataType.FLOAT32 || n == 1;
                for (int root = everyRoot ? 0 : size - 1; root < size; root++) {
                    int rt = root;
                    long s1 = ++sd;
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
                }
            }
        }
    }

    static void scatter(Ctx ctx) {
        Communicator c = ctx.comm();
        long sd = ctx.seed();
        int size = ctx.size();
        for (DataType t : ctx.types()) {
            for (long n : counts(ctx, t, null, LARGE / 4, true)) {
                boolean everyRoot = t == DataType.FLOAT32 || n == 1;
                for (int root = everyRoot ? 0 : size - 1; root < size; root++) {
                    int rt = root;
                    long s1 = ++sd;
                    String what = "scatter " + t + " count " + n + " root " + rt;
                    Buffer send = ctx.rank() == rt ? ctx.buffer(t, ReduceOp.SUM, s1, rt, n * size) : (n == 1 ? null : ctx.poisoned(t, n * size));
                    Buffer recv = ctx.poisoned(t, n);
                    c.scatter(send, recv, rt);
                    long bs = n * t.byteSize();
                    ctx.checkBytes(() -> what, recv, 0, ctx.input(t, ReduceOp.SUM, s1, rt, n * size).asSlice(ctx.rank() * bs, bs));
                }
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
