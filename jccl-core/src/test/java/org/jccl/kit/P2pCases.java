package org.jccl.kit;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.Work;

/**
 * Point to point: blocking pairs, ring shifts both ways with async pairs (the pattern of {@code
 * jccl perf sendrecv}), several outstanding messages of different sizes and types per pair, a
 * long stream of small async messages around the ring, sendRecv, all-pairs async, self send/recv, and send/recv interleaved with collectives. Messages between
 * a pair match in posting order.
 */
final class P2pCases {
    private P2pCases() {
    }

    /** Seed of the message from rank {@code from} to {@code to}, number {@code k}. */
    private static long msgSeed(Ctx ctx, int from, int to, int k) {
        return ctx.seed() * 7 + from * 1_000L + to * 10L + k;
    }

    /** The rank {@code step} places after this one around the ring (before it, for a negative step). */
    private static int neighbour(Ctx ctx, int step) {
        return Math.floorMod(ctx.rank() + step, ctx.size());
    }

    /** Whether a ring of p2p messages cannot run: one rank, and the backend cannot send to itself. */
    private static boolean noRing(Ctx ctx) {
        return ctx.size() == 1 && !ctx.traits().selfP2p();
    }

    private static Buffer message(Ctx ctx, DataType t, long n, int from, int to, int k) {
        return ctx.buffer(t, ReduceOp.SUM, msgSeed(ctx, from, to, k), from, n);
    }

    private static void checkMessage(Ctx ctx, String what, Buffer got, DataType t, long n, int from, int to, int k) {
        MemorySegment want = ctx.input(t, ReduceOp.SUM, msgSeed(ctx, from, to, k), from, n);
        ctx.checkBytes(() -> what, got, 0, want);
    }

    static void pairs(Ctx ctx) {
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int k = 0;
        for (DataType t : List.of(DataType.FLOAT32, DataType.INT8, DataType.FLOAT64)) {
            for (long n : new long[] {0, 1, 1009, 70_001, 300_007}) {
                k++;
                // even ranks send to the next odd rank, then the other way
                for (int dir = 0; dir < 2; dir++) {
                    boolean sender = (r % 2 == 0) == (dir == 0);
                    int peer = r % 2 == 0 ? r + 1 : r - 1;
                    if (peer >= ctx.size()) {
                        continue;
                    }
                    String what = "pairs " + t + " count " + n + " dir " + dir;
                    if (sender) {
                        c.send(message(ctx, t, n, r, peer, k * 2 + dir), peer);
                    } else {
                        Buffer b = ctx.poisoned(t, n);
                        c.recv(b, peer);
                        checkMessage(ctx, what, b, t, n, peer, r, k * 2 + dir);
                    }
                }
            }
        }
    }

    static void ringShift(Ctx ctx) {
        if (noRing(ctx)) {
            return;
        }
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int k = 0;
        for (int step : new int[] {1, -1}) {
            int next = neighbour(ctx, step);
            int prev = neighbour(ctx, -step);
            for (long n : new long[] {1, 1009, 70_001, 262_147, 1009, 1}) {
                for (int iter = 0; iter < 3; iter++) {
                    k++;
                    String what = "ring shift " + step + " count " + n + " iteration " + iter;
                    Buffer out = message(ctx, DataType.FLOAT32, n, r, next, k);
                    Buffer in = ctx.poisoned(DataType.FLOAT32, n);
                    Work s = c.sendAsync(out, next);
                    Work v = c.recvAsync(in, prev);
                    s.await();
                    v.await();
                    checkMessage(ctx, what, in, DataType.FLOAT32, n, prev, r, k);
                }
            }
        }
    }

    private record Msg(DataType type, long count) {
    }

    private static final List<Msg> BURST = List.of(new Msg(DataType.INT32, 70_001), new Msg(DataType.INT32, 5),
            new Msg(DataType.FLOAT64, 1009), new Msg(DataType.INT8, 0), new Msg(DataType.UINT8, 131_073),
            new Msg(DataType.BFLOAT16, 3));

    /** Rank r sends a burst of messages to r+1 and receives one from r-1, all posted at once. */
    static void severalOutstanding(Ctx ctx) {
        if (ctx.size() < 2) {
            return;
        }
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int next = neighbour(ctx, 1);
        int prev = neighbour(ctx, -1);
        for (int round = 0; round < 3; round++) {
            if (round == 1 && !ctx.traits().recvBeforeSend()) {
                continue;
            }
            List<Work> works = new ArrayList<>();
            List<Buffer> ins = new ArrayList<>();
            for (int i = 0; i < BURST.size(); i++) {
                Msg m = BURST.get(i);
                // round 1 posts the receives first, round 2 interleaves them
                if (round == 1) {
                    Buffer in = ctx.poisoned(m.type(), m.count());
                    ins.add(in);
                    works.add(c.recvAsync(in, prev));
                }
            }
            for (int i = 0; i < BURST.size(); i++) {
                Msg m = BURST.get(i);
                works.add(c.sendAsync(message(ctx, m.type(), m.count(), r, next, round * 100 + i), next));
                if (round != 1) {
                    Buffer in = ctx.poisoned(m.type(), m.count());
                    ins.add(in);
                    works.add(c.recvAsync(in, prev));
                }
            }
            Collections.reverse(works);
            for (Work w : works) {
                w.await();
            }
            for (int i = 0; i < BURST.size(); i++) {
                Msg m = BURST.get(i);
                checkMessage(ctx, "burst round " + round + " message " + i + " (" + m + ")", ins.get(i), m.type(),
                        m.count(), prev, r, round * 100 + i);
            }
        }
    }

    /**
     * A long stream of small async messages around the ring, all posted before any is awaited
     * (sends and receives interleaved, counts from 0 to 54 elements): every message arrives whole
     * and in posting order, however many wait in the runtime at once.
     */
    static void longAsyncStream(Ctx ctx) {
        if (noRing(ctx)) {
            return;
        }
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int next = neighbour(ctx, 1);
        int prev = neighbour(ctx, -1);
        int messages = 300;
        List<Work> works = new ArrayList<>();
        List<Buffer> ins = new ArrayList<>();
        for (int k = 0; k < messages; k++) {
            long n = streamCount(k);
            works.add(c.sendAsync(message(ctx, DataType.FLOAT32, n, r, next, 1_000 + k), next));
            Buffer in = ctx.poisoned(DataType.FLOAT32, n);
            ins.add(in);
            works.add(c.recvAsync(in, prev));
        }
        for (Work w : works) {
            w.await();
        }
        for (int k = 0; k < messages; k++) {
            checkMessage(ctx, "stream message " + k + " of " + messages, ins.get(k), DataType.FLOAT32, streamCount(k), prev, r,
                    1_000 + k);
        }
    }

    private static long streamCount(int k) {
        return (k % 5) * 13L + k % 3; // 0 to 54 elements, 0 when k is a multiple of 15
    }

    static void allPairs(Ctx ctx) {
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int size = ctx.size();
        List<Work> works = new ArrayList<>();
        Buffer[] ins = new Buffer[size];
        for (int i = 1; i < size; i++) {
            int to = (r + i) % size;
            int from = Math.floorMod(r - i, size);
            long nTo = 1000L + 37 * (r + to);
            long nFrom = 1000L + 37 * (from + r);
            works.add(c.sendAsync(message(ctx, DataType.INT64, nTo, r, to, 0), to));
            ins[from] = ctx.poisoned(DataType.INT64, nFrom);
            works.add(c.recvAsync(ins[from], from));
        }
        Collections.shuffle(works, new java.util.Random(ctx.seed() + r));
        for (Work w : works) {
            w.await();
        }
        for (int from = 0; from < size; from++) {
            if (from != r) {
                checkMessage(ctx, "all pairs: message from rank " + from, ins[from], DataType.INT64, 1000L + 37 * (from + r), from, r, 0);
            }
        }
    }

    static void self(Ctx ctx) {
        if (!ctx.traits().selfP2p()) {
            return;
        }
        Communicator c = ctx.comm();
        int r = ctx.rank();
        for (long n : new long[] {1, 70_001}) {
            Buffer in = ctx.poisoned(DataType.FLOAT32, n);
            Work s = c.sendAsync(message(ctx, DataType.FLOAT32, n, r, r, (int) n), r);
            Work v = c.recvAsync(in, r);
            v.await();
            s.await();
            checkMessage(ctx, "self send/recv count " + n, in, DataType.FLOAT32, n, r, r, (int) n);
        }
    }

    /**
     * sendRecv (MPI_Sendrecv): ring shifts both ways, blocking and async, counts 0 to large, and
     * receives of another type and count than the same call's send; to itself on one rank.
     */
    static void sendRecv(Ctx ctx) {
        if (noRing(ctx)) {
            return;
        }
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int k = 5_000;
        for (int step : new int[] {1, -1}) {
            int next = neighbour(ctx, step);
            int prev = neighbour(ctx, -step);
            for (long n : new long[] {0, 1, 1009, 70_001, 262_147}) {
                for (boolean async : new boolean[] {false, true}) {
                    k++;
                    String what = (async ? "sendRecvAsync" : "sendRecv") + " ring shift " + step + " count " + n;
                    Buffer in = ctx.poisoned(DataType.FLOAT32, n);
                    Buffer out = message(ctx, DataType.FLOAT32, n, r, next, k);
                    if (async) {
                        c.sendRecvAsync(out, next, in, prev).await();
                    } else {
                        c.sendRecv(out, next, in, prev);
                    }
                    checkMessage(ctx, what, in, DataType.FLOAT32, n, prev, r, k);
                }
            }
        }
        if (ctx.size() == 1) {
            return;
        }
        // The halves of one call may differ in type and count: FLOAT64 x 11 goes backwards around
        // the ring while INT8 x 5 goes forwards, each call sending one and receiving the other
        // (even ranks first with their previous rank, odd ranks first with their next).
        int next = neighbour(ctx, 1);
        int prev = neighbour(ctx, -1);
        k++;
        Buffer d11 = message(ctx, DataType.FLOAT64, 11, r, prev, k);
        Buffer in11 = ctx.poisoned(DataType.FLOAT64, 11);
        Buffer b5 = message(ctx, DataType.INT8, 5, r, next, k + 1);
        Buffer in5 = ctx.poisoned(DataType.INT8, 5);
        if (r % 2 == 0) {
            c.sendRecv(d11, prev, in5, prev);
            c.sendRecv(b5, next, in11, next);
        } else {
            c.sendRecv(b5, next, in11, next);
            c.sendRecv(d11, prev, in5, prev);
        }
        checkMessage(ctx, "sendRecv FLOAT64 x 11 from the next rank", in11, DataType.FLOAT64, 11, next, r, k);
        checkMessage(ctx, "sendRecv INT8 x 5 from the previous rank", in5, DataType.INT8, 5, prev, r, k + 1);
    }

    /** Async sends/recvs around collectives, awaited out of order. */
    static void withCollectives(Ctx ctx) {
        if (noRing(ctx)) {
            return;
        }
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int next = neighbour(ctx, 1);
        int prev = neighbour(ctx, -1);
        for (int iter = 0; iter < 4; iter++) {
            long n = iter % 2 == 0 ? 1009 : 100_003;
            long sd = ctx.seed() + 1000 + iter;
            Buffer in1 = ctx.poisoned(DataType.FLOAT32, n);
            Buffer in2 = ctx.poisoned(DataType.INT32, 17);
            Buffer ar = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, sd, r, n);
            Buffer bc = r == 0 ? ctx.buffer(DataType.INT64, ReduceOp.SUM, sd, 0, 33) : ctx.poisoned(DataType.INT64, 33);
            List<Work> works = new ArrayList<>();
            works.add(c.sendAsync(message(ctx, DataType.FLOAT32, n, r, next, iter), next));
            works.add(c.recvAsync(in1, prev));
            works.add(c.allReduceAsync(ar, ReduceOp.SUM));
            works.add(c.sendAsync(message(ctx, DataType.INT32, 17, r, next, 50 + iter), next));
            works.add(c.recvAsync(in2, prev));
            works.add(c.broadcastAsync(bc, 0));
            if (iter == 3) {
                c.barrier();
            }
            Collections.shuffle(works, new java.util.Random(sd));
            for (Work w : works) {
                w.await();
            }
            checkMessage(ctx, "p2p with collectives: first message, iteration " + iter, in1, DataType.FLOAT32, n, prev, r, iter);
            checkMessage(ctx, "p2p with collectives: second message, iteration " + iter, in2, DataType.INT32, 17, prev, r, 50 + iter);
            ctx.checkReduced(() -> "p2p with collectives: the all-reduce between them", ar, 0, DataType.FLOAT32, ReduceOp.SUM, sd, 0, n);
            ctx.checkBytes(() -> "p2p with collectives: the broadcast between them", bc, 0, ctx.input(DataType.INT64, ReduceOp.SUM, sd, 0, 33));
        }
    }
}
