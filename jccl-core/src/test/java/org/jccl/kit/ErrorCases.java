package org.jccl.kit;

import java.time.Duration;
import java.util.List;
import org.jccl.Buffer;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.ReduceOp;

/**
 * The error contract: bad arguments fail before any byte moves and leave the communicator usable;
 * every rank of a mismatched call fails in that call with a CollectiveMismatchException naming
 * both calls (where the backend promises it, {@link Traits#mismatchesInCall}); a timeout names the
 * caller's collective and the rank that did not arrive.
 */
final class ErrorCases {
    private ErrorCases() {
    }

    static List<KitCase> cases() {
        return List.of(
                KitCase.of("errors.badArguments", ErrorCases::badArguments),
                KitCase.of("errors.mismatch.op", c -> mismatch(c, Traits.Mismatch.OP, ErrorCases::opMismatch, "MAX", "SUM")),
                KitCase.of("errors.mismatch.count", c -> mismatch(c, Traits.Mismatch.COUNT, ErrorCases::countMismatch, "x 9", "x 8")),
                KitCase.of("errors.mismatch.type", c -> mismatch(c, Traits.Mismatch.TYPE, ErrorCases::typeMismatch, "INT32", "FLOAT32")),
                KitCase.of("errors.mismatch.rootSmall", c -> mismatch(c, Traits.Mismatch.ROOT_SMALL, rootMismatch(8), "root 0", "root 1")),
                KitCase.of("errors.mismatch.rootChain", c -> mismatch(c, Traits.Mismatch.ROOT_CHAIN, ErrorCases::rootChainMismatch,
                        "root 1", c.size() > 2 ? "root 2" : "root 0")),
                KitCase.of("errors.mismatch.scatterRoot", c -> mismatch(c, Traits.Mismatch.SCATTER_ROOT, ErrorCases::scatterRootMismatch, "root 0", "root 1")),
                KitCase.of("errors.mismatch.gatherRoot", c -> mismatch(c, Traits.Mismatch.GATHER_ROOT, ErrorCases::gatherRootMismatch, "root 0", "root 1")),
                KitCase.of("errors.mismatch.rootLarge", c -> mismatch(c, Traits.Mismatch.ROOT_LARGE, rootMismatch(300_007), "root 0", "root 1")),
                KitCase.of("errors.mismatch.reduceRoot", c -> mismatch(c, Traits.Mismatch.REDUCE_ROOT, ErrorCases::reduceRootMismatch, "root 0", "root 1")),
                KitCase.of("errors.mismatch.collective", c -> mismatch(c, Traits.Mismatch.COLLECTIVE, ErrorCases::collectiveMismatch, "broadcast", "allReduce")),
                // a small broadcast on rank 0 against a large one elsewhere (over shared memory the two take
                // different rings, so neither ever sees the other's post where it waits)
                KitCase.of("errors.mismatch.broadcastSize", c -> mismatch(c, Traits.Mismatch.COLLECTIVE, ErrorCases::broadcastSizeMismatch, "x 8", "x 2003")),
                KitCase.of("errors.mismatch.sendRecvSize", c -> mismatch(c, Traits.Mismatch.SEND_RECV_SIZE, ErrorCases::p2pMismatch, "44", "40")),
                KitCase.of("errors.timeoutNamesTheMissingRank", ErrorCases::timeout));
    }

    private static void badArguments(Ctx ctx) {
        Communicator c = ctx.comm();
        int size = ctx.size();
        Buffer f4 = ctx.mem().allocate(DataType.FLOAT32, 4);
        Buffer f5 = ctx.mem().allocate(DataType.FLOAT32, 5);
        Buffer i4 = ctx.mem().allocate(DataType.INT32, 4);
        Buffer big = ctx.mem().allocate(DataType.FLOAT32, 4L * size);
        Class<IllegalArgumentException> iae = IllegalArgumentException.class;
        ctx.expectThrows(iae, "allReduce with a null send", () -> c.allReduce(null, f4, ReduceOp.SUM));
        ctx.expectThrows(iae, "allReduce with a null op", () -> c.allReduce(f4, f4, null));
        ctx.expectThrows(iae, "allReduce with 4 and 5 elements", () -> c.allReduce(f4, f5, ReduceOp.SUM));
        ctx.expectThrows(iae, "allReduce FLOAT32 into INT32", () -> c.allReduce(f4, i4, ReduceOp.SUM));
        if (ctx.traits().bitwiseOps()) {
            ctx.expectThrows(iae, "allReduce BXOR on FLOAT32", () -> c.allReduce(f4, ReduceOp.BXOR));
        }
        ctx.expectThrows(iae, "broadcast root = size", () -> c.broadcast(f4, size));
        ctx.expectThrows(iae, "reduce root -1", () -> c.reduce(f4, f4, ReduceOp.SUM, -1));
        ctx.expectThrows(iae, "send to peer = size", () -> c.send(f4, size));
        ctx.expectThrows(iae, "recv from peer -1", () -> c.recv(f4, -1));
        ctx.expectThrows(iae, "sendAsync to peer = size", () -> c.sendAsync(f4, size));
        ctx.expectThrows(iae, "sendRecv to dst = size", () -> c.sendRecv(f4, size, f5, 0));
        ctx.expectThrows(iae, "sendRecv from src -1", () -> c.sendRecv(f4, 0, f5, -1));
        ctx.expectThrows(iae, "sendRecvAsync with a null recv", () -> c.sendRecvAsync(f4, 0, null, 0));
        ctx.expectThrows(iae, "sendRecv with send and recv the same buffer", () -> c.sendRecv(f4, 0, f4, 0));
        if (size > 1) {
            ctx.expectThrows(iae, "sendRecvAsync with overlapping buffers",
                    () -> c.sendRecvAsync(big.slice(0, 4), 0, big.slice(2, 4), 0));
        }
        ctx.expectThrows(iae, "allGather into a too small recv", () -> c.allGather(f4, f5));
        ctx.expectThrows(iae, "reduceScatter from a too small send", () -> c.reduceScatter(f5, f4, ReduceOp.SUM));
        ctx.expectThrows(iae, "allToAll with send and recv of different sizes", () -> c.allToAll(big, big.slice(0, 4L * size - 1)));
        ctx.expectThrows(iae, "allReduceAsync with a null recv", () -> c.allReduceAsync(f4, null, ReduceOp.SUM));
        if (size > 1) {
            ctx.expectThrows(iae, "allReduce with partly overlapping buffers",
                    () -> c.allReduce(big.slice(0, 4), big.slice(1, 4), ReduceOp.SUM));
        }
        ctx.expectThrows(iae, "withTimeout(0)", () -> c.withTimeout(Duration.ZERO));
        // nothing moved and the communicator still works
        long sd = ctx.seed();
        Buffer b = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, sd, ctx.rank(), 1009);
        c.allReduce(b, ReduceOp.SUM);
        ctx.checkReduced(() -> "allReduce after the rejected calls", b, 0, DataType.FLOAT32, ReduceOp.SUM, sd, 0, 1009);
    }

    /** What the ranks of a mismatch case call on a fresh communicator. */
    private interface Mismatch {
        void call(Ctx ctx, Communicator c);
    }

    /**
     * Runs a mismatched call on a fresh communicator, five times (the races are in who learns it
     * first). Where the backend catches it in the call, every rank must fail there with a
     * CollectiveMismatchException whose message names both sides; where it is caught by the next
     * call ({@link Traits#mismatchesByNextCall}), a rank that returned normally must fail in its
     * next collective: no rank may go on as if nothing happened.
     */
    private static void mismatch(Ctx ctx, Traits.Mismatch kind, Mismatch body, String one, String other) {
        String what = kind.name().toLowerCase(java.util.Locale.ROOT);
        boolean inCall = ctx.traits().mismatchesInCall().contains(kind);
        if (!inCall && !ctx.traits().mismatchesByNextCall().contains(kind) || ctx.size() < 2) {
            return;
        }
        for (int i = 0; i < 5; i++) {
            try (Communicator c = ctx.fresh()) {
                // a rank that misses the mismatch must not wait for the world's deadline
                Communicator v = ctx.traits().perCallTimeout() ? c.withTimeout(Duration.ofSeconds(10)) : c;
                Throwable got = null;
                try {
                    body.call(ctx, v);
                } catch (Throwable e) {
                    got = e;
                }
                int ii = i;
                Throwable g = got;
                if (inCall) {
                    if (!(g instanceof CollectiveMismatchException)) {
                        ctx.fail(what + " mismatch, try " + ii + ": expected a CollectiveMismatchException in the call, got "
                                + (g == null ? "a normal return" : g.toString()));
                    } else {
                        ctx.check(g.getMessage().contains(one) && g.getMessage().contains(other),
                                () -> what + " mismatch, try " + ii + ": the message does not name both calls ('" + one
                                        + "' and '" + other + "'): " + g.getMessage());
                    }
                } else if (g == null) {
                    Throwable next = null;
                    try {
                        v.allReduce(ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 6, ctx.rank(), 4), ReduceOp.SUM);
                    } catch (Throwable e) {
                        next = e;
                    }
                    Throwable n = next;
                    ctx.check(n instanceof JcclException, () -> what + " mismatch, try " + ii + ": this rank returned "
                            + "normally from the mismatched call and its next collective "
                            + (n == null ? "returned normally too (silent divergence)" : "threw " + n));
                } else {
                    ctx.check(g instanceof JcclException, () -> what + " mismatch, try " + ii + ": failed with " + g);
                }
            }
            ctx.world().barrier();
        }
    }

    private static void opMismatch(Ctx ctx, Communicator c) {
        Buffer b = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 1, ctx.rank(), 8);
        c.allReduce(b, ctx.rank() == 0 ? ReduceOp.MAX : ReduceOp.SUM);
    }

    private static void countMismatch(Ctx ctx, Communicator c) {
        Buffer b = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 1, ctx.rank(), ctx.rank() == ctx.size() - 1 ? 9 : 8);
        c.allReduce(b, ReduceOp.SUM);
    }

    private static void typeMismatch(Ctx ctx, Communicator c) {
        DataType t = ctx.rank() == 0 ? DataType.INT32 : DataType.FLOAT32;
        c.allReduce(ctx.buffer(t, ReduceOp.SUM, 1, ctx.rank(), 8), ReduceOp.SUM);
    }

    /** Rank 0 says root 0, every other rank root 1 (with 2 ranks: each names itself). */
    private static Mismatch rootMismatch(long n) {
        return (ctx, c) -> {
            int root = ctx.rank() == 0 ? 0 : 1;
            c.broadcast(ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 2, ctx.rank(), n), root);
        };
    }

    /**
     * Rank 0 broadcasts 8 floats from root 1, every other rank from root 2: rank 0 waits for a rank
     * that is a receiver itself (with 2 ranks: rank 1 names root 0, and each waits for the other).
     */
    private static void rootChainMismatch(Ctx ctx, Communicator c) {
        int root = ctx.rank() == 0 ? 1 : ctx.size() > 2 ? 2 : 0;
        c.broadcast(ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 2, ctx.rank(), 8), root);
    }

    /** Rank 0 scatters 8 floats per rank from root 0, every other rank from root 1 (with 2 ranks: each from itself). */
    private static void scatterRootMismatch(Ctx ctx, Communicator c) {
        int root = ctx.rank() == 0 ? 0 : 1;
        Buffer send = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 7, ctx.rank(), 8L * ctx.size());
        c.scatter(send, ctx.poisoned(DataType.FLOAT32, 8), root);
    }

    /** Rank 0 gathers 8 floats per rank to root 0, every other rank to root 1 (with 2 ranks: each to itself). */
    private static void gatherRootMismatch(Ctx ctx, Communicator c) {
        int root = ctx.rank() == 0 ? 0 : 1;
        c.gather(ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 8, ctx.rank(), 8), ctx.poisoned(DataType.FLOAT32, 8L * ctx.size()), root);
    }

    /** Rank 0 reduces 8 floats to root 0, every other rank to root 1 (with 2 ranks: each to itself). */
    private static void reduceRootMismatch(Ctx ctx, Communicator c) {
        int root = ctx.rank() == 0 ? 0 : 1;
        Buffer b = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 5, ctx.rank(), 8);
        c.reduce(b, b, ReduceOp.SUM, root);
    }

    /** Rank 0 broadcasts a small buffer from itself; the others all-reduce one as large. */
    private static void collectiveMismatch(Ctx ctx, Communicator c) {
        Buffer b = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 3, ctx.rank(), 8);
        if (ctx.rank() == 0) {
            c.broadcast(b, 0);
        } else {
            c.allReduce(b, ReduceOp.SUM);
        }
    }

    /** Rank 0 broadcasts 8 floats from itself, the others receive 2003 from it. */
    private static void broadcastSizeMismatch(Ctx ctx, Communicator c) {
        c.broadcast(ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 3, ctx.rank(), ctx.rank() == 0 ? 8 : 2003), 0);
    }

        /** Rank 0 sends 10 ints to rank 1, which receives 11. */
    private static void p2pMismatch(Ctx ctx, Communicator c) {
        if (ctx.rank() == 0) {
            c.send(ctx.buffer(DataType.INT32, ReduceOp.SUM, 4, 0, 10), 1);
            // the sender learns of it from the receiver: its next call fails
            c.barrier();
        } else if (ctx.rank() == 1) {
            c.recv(ctx.poisoned(DataType.INT32, 11), 0);
        } else {
            c.barrier();
        }
    }

    /**
     * The last rank does not call; the others' all-reduce through a 300 ms view fails in about
     * that time with an error naming allReduce and the missing rank.
     */
    private static void timeout(Ctx ctx) {
        if (!ctx.traits().perCallTimeout() || ctx.size() < 2) {
            return;
        }
        int missing = ctx.size() - 1;
        try (Communicator c = ctx.fresh()) {
            if (ctx.rank() != missing) {
                Buffer b = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, 5, ctx.rank(), 1000);
                long t0 = System.nanoTime();
                JcclException e = ctx.expectThrows(JcclException.class, "allReduce while rank " + missing + " never calls",
                        () -> c.withTimeout(Duration.ofMillis(300)).allReduce(b, ReduceOp.SUM));
                long ms = (System.nanoTime() - t0) / 1_000_000;
                if (e != null) {
                    String m = e.getMessage();
                    boolean named = e instanceof CollectiveTimeoutException te ? !ctx.traits().namesMissingRanks()
                            || te.missingRanks().contains(missing)
                            : e instanceof PeerFailureException pf && pf.rank() == missing;
                    ctx.check(named, () -> "the error does not name the missing rank " + missing + ": " + e);
                    ctx.check(m.contains("allReduce"), () -> "the error does not name the caller's collective (allReduce): " + m);
                    ctx.check(ms >= 250 && ms < 3000, () -> "the 300 ms deadline fired after " + ms + " ms");
                }
            }
            ctx.world().barrier();
        }
    }
}
