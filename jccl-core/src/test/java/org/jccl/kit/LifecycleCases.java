package org.jccl.kit;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.InvalidUsageException;
import org.jccl.ReduceOp;
import org.jccl.Work;

/**
 * Split (MPI_Comm_split ordering, opting out, disjoint splits used at once, closing while peers
 * finish), async works awaited out of order, and calls after close.
 */
final class LifecycleCases {
    private LifecycleCases() {
    }

    /** Sum over the members' old ranks, through the sub-communicator. */
    private static void checkSum(Ctx ctx, Communicator sub, List<Integer> members, String what) {
        long[] v = {ctx.rank()};
        Buffer b = ctx.mem().allocate(DataType.INT64, 1);
        ctx.mem().write(b, java.lang.foreign.MemorySegment.ofArray(v));
        sub.allReduce(b, ReduceOp.SUM);
        long got = ctx.mem().read(b).get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 0);
        long want = members.stream().mapToLong(Integer::longValue).sum();
        ctx.check(got == want, () -> what + ": all-reduce of the old ranks gave " + got + ", want " + want);
    }

    /** Colors by parity; keys reverse the order; a second split with equal keys keeps the old order. */
    static void splitOrdering(Ctx ctx) {
        int r = ctx.rank();
        int size = ctx.size();
        for (boolean reverse : new boolean[] {true, false}) {
            int color = r % 2;
            int key = reverse ? size - r : 0;
            List<Integer> members = new ArrayList<>();
            for (int p = 0; p < size; p++) {
                if (p % 2 == color) {
                    members.add(p);
                }
            }
            if (reverse) {
                Collections.reverse(members);
            }
            try (Communicator sub = ctx.comm().split(color, key)) {
                String what = "split(color " + color + ", key " + key + ")";
                ctx.check(sub != null && sub.size() == members.size() && sub.rank() == members.indexOf(r),
                        () -> what + " gave " + (sub == null ? "null" : "rank " + sub.rank() + " of " + sub.size())
                                + ", want rank " + members.indexOf(r) + " of " + members.size() + " (order " + members + ")");
                if (sub != null) {
                    checkSum(ctx, sub, members, what);
                }
            }
        }
    }

    static void splitNoColor(Ctx ctx) {
        int r = ctx.rank();
        List<Integer> members = new ArrayList<>();
        for (int p = 1; p < ctx.size(); p++) {
            members.add(p);
        }
        Communicator sub = ctx.comm().split(r == 0 ? Communicator.NO_COLOR : 7, r);
        if (r == 0) {
            ctx.check(sub == null, () -> "split with NO_COLOR gave a communicator");
        } else {
            try (Communicator s = sub) {
                ctx.check(s != null && s.size() == ctx.size() - 1 && s.rank() == r - 1,
                        () -> "split without rank 0 gave " + (s == null ? "null" : "rank " + s.rank() + " of " + s.size()));
                if (s != null) {
                    checkSum(ctx, s, members, "split without rank 0");
                }
            }
        }
    }

    /** Two overlapping families of splits, both used at once with async calls, awaited out of order. */
    static void disjointAtOnce(Ctx ctx) {
        int r = ctx.rank();
        int size = ctx.size();
        try (Communicator a = ctx.comm().split(r % 2, r); Communicator b = ctx.comm().split(r < size / 2 ? 0 : 1, r)) {
            List<Integer> ma = new ArrayList<>();
            List<Integer> mb = new ArrayList<>();
            for (int p = 0; p < size; p++) {
                if (p % 2 == r % 2) {
                    ma.add(p);
                }
                if ((p < size / 2) == (r < size / 2)) {
                    mb.add(p);
                }
            }
            for (int iter = 0; iter < 10; iter++) {
                long n = iter % 2 == 0 ? 1009 : 70_001;
                long[] va = new long[(int) n];
                long[] vb = new long[(int) n];
                java.util.Arrays.fill(va, r + iter);
                java.util.Arrays.fill(vb, 3L * r + iter);
                Buffer ba = ctx.mem().allocate(DataType.INT64, n);
                Buffer bb = ctx.mem().allocate(DataType.INT64, n);
                ctx.mem().write(ba, java.lang.foreign.MemorySegment.ofArray(va));
                ctx.mem().write(bb, java.lang.foreign.MemorySegment.ofArray(vb));
                Work wa = a.allReduceAsync(ba, ReduceOp.SUM);
                Work wb = b.allReduceAsync(bb, ReduceOp.SUM);
                wb.await();
                wa.await();
                int it = iter;
                long wantA = ma.stream().mapToLong(p -> p + it).sum();
                long wantB = mb.stream().mapToLong(p -> 3L * p + it).sum();
                java.lang.foreign.MemorySegment ga = ctx.mem().read(ba);
                java.lang.foreign.MemorySegment gb = ctx.mem().read(bb);
                for (long i = 0; i < n; i += 997) {
                    long x = ga.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i);
                    long y = gb.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i);
                    long ii = i;
                    ctx.check(x == wantA, () -> "split by parity, iteration " + it + ": element " + ii + " is " + x + ", want " + wantA);
                    ctx.check(y == wantB, () -> "split by halves, iteration " + it + ": element " + ii + " is " + y + ", want " + wantB);
                }
            }
        }
    }

    /**
     * Each rank closes right after its last call, while the others may still be finishing theirs
     * (one broadcast from every root): nobody may see that as a failure.
     */
    static void closeWhilePeersFinish(Ctx ctx) throws Exception {
        Communicator c = ctx.comm();
        int size = ctx.size();
        for (int round = 0; round < 3; round++) {
            try (Communicator sub = c.split(0, ctx.rank())) {
                Buffer mine = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, ctx.seed() + round, ctx.rank(), 64);
                Buffer all = ctx.poisoned(DataType.FLOAT32, 64L * size);
                sub.allGather(mine, all);
                for (int root = 0; root < size; root++) {
                    Buffer b = ctx.rank() == root ? ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, ctx.seed() + root, root, 4)
                            : ctx.poisoned(DataType.FLOAT32, 4);
                    sub.broadcast(b, root);
                    int rt = root;
                    ctx.checkBytes(() -> "broadcast from root " + rt + " before close", b, 0,
                            ctx.input(DataType.FLOAT32, ReduceOp.SUM, ctx.seed() + rt, rt, 4));
                }
                // round 0: everyone closes at once; 1: rank 0 last; 2: rank 0 first
                if (round == 1 && ctx.rank() == 0 || round == 2 && ctx.rank() != 0) {
                    Thread.sleep(100);
                }
            }
        }
        c.barrier();
    }

    /**
     * Blocking collectives right behind async ones, on memory of the caller's own: host buffers of
     * a confined arena, which only the rank's thread may touch (a backend whose worker thread ran
     * a blocking call queued behind async work failed there with WrongThreadException), else the
     * backend's own memory. First without waiting (the blocking call must wait for the async one
     * and still come after it), then many times right after await() returned (a worker that
     * completed the work before it counted it done sent the next blocking call to itself).
     */
    static void asyncThenBlocking(Ctx ctx) {
        Communicator c = ctx.comm();
        int r = ctx.rank();
        long sd = ctx.seed();
        long n = 1009;
        try (java.lang.foreign.Arena confined = java.lang.foreign.Arena.ofConfined()) {
            java.util.function.BiFunction<Long, Long, Buffer> own = (seed, count) -> {
                Buffer probe = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, seed, r, count);
                if (!(probe instanceof org.jccl.HostBuffer)) {
                    return probe;
                }
                org.jccl.HostBuffer h = org.jccl.HostBuffer.allocate(DataType.FLOAT32, count, confined);
                MemorySegment.copy(ctx.input(DataType.FLOAT32, ReduceOp.SUM, seed, r, count), 0, h.segment(), 0, h.byteSize());
                return h;
            };
            Buffer a = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, sd, r, 100_003);
            Buffer b = own.apply(sd + 1, n);
            Work wa = c.allReduceAsync(a, ReduceOp.SUM);
            c.allReduce(b, ReduceOp.SUM);
            wa.await();
            ctx.checkReduced(() -> "async all-reduce before a blocking one", a, 0, DataType.FLOAT32, ReduceOp.SUM, sd, 0, 100_003);
            ctx.checkReduced(() -> "blocking all-reduce on the caller's memory behind an async one", b, 0, DataType.FLOAT32,
                    ReduceOp.SUM, sd + 1, 0, n);
            Buffer x = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, sd + 2, r, 7);
            Buffer y = own.apply(sd + 3, 7L);
            Buffer yOut = y instanceof org.jccl.HostBuffer ? org.jccl.HostBuffer.allocate(DataType.FLOAT32, 7, confined)
                    : ctx.poisoned(DataType.FLOAT32, 7);
            for (int i = 0; i < 300; i++) {
                c.allReduceAsync(x, ReduceOp.MAX).await();
                c.allReduce(y, yOut, ReduceOp.SUM);
            }
            ctx.checkReduced(() -> "blocking all-reduce on the caller's memory right after await()", yOut, 0,
                    DataType.FLOAT32, ReduceOp.SUM, sd + 3, 0, 7);
        }
    }

    /**
     * Issues an in-place async all-reduce ({@code op}) of this rank's input of {@code n} elements
     * of {@code t} from seed {@code sd}, and adds its check against the reference, named {@code
     * what}, to {@code checks}.
     */
    private static Work allReduceAsyncChecked(Ctx ctx, DataType t, ReduceOp op, long sd, long n, String what,
                                              List<Runnable> checks) {
        Buffer b = ctx.buffer(t, op, sd, ctx.rank(), n);
        Work w = ctx.comm().allReduceAsync(b, op);
        checks.add(() -> ctx.checkReduced(() -> what, b, 0, t, op, sd, 0, n));
        return w;
    }

    static void asyncOutOfOrder(Ctx ctx) {
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int size = ctx.size();
        long sd = ctx.seed();
        List<Work> works = new ArrayList<>();
        List<Runnable> checks = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            DataType t = i % 2 == 0 ? DataType.FLOAT32 : DataType.INT32;
            long n = i % 3 == 0 ? 100_003 : 1009;
            works.add(allReduceAsyncChecked(ctx, t, ReduceOp.SUM, sd + i, n, "async all-reduce #" + i, checks));
        }
        long n = 517;
        Buffer gIn = ctx.buffer(DataType.FLOAT64, ReduceOp.SUM, sd + 20, r, n);
        Buffer gOut = ctx.poisoned(DataType.FLOAT64, n * size);
        works.add(c.allGatherAsync(gIn, gOut));
        Buffer bc = r == size - 1 ? ctx.buffer(DataType.UINT8, ReduceOp.SUM, sd + 21, size - 1, n) : ctx.poisoned(DataType.UINT8, n);
        works.add(c.broadcastAsync(bc, size - 1));
        Buffer rsIn = ctx.buffer(DataType.INT64, ReduceOp.MAX, sd + 22, r, n * size);
        Buffer rsOut = ctx.poisoned(DataType.INT64, n);
        works.add(c.reduceScatterAsync(rsIn, rsOut, ReduceOp.MAX));
        Buffer aIn = ctx.buffer(DataType.INT8, ReduceOp.SUM, sd + 23, r, n * size);
        Buffer aOut = ctx.poisoned(DataType.INT8, n * size);
        works.add(c.allToAllAsync(aIn, aOut));
        Buffer rIn = ctx.buffer(DataType.FLOAT32, ReduceOp.MIN, sd + 24, r, n);
        Buffer rOut = ctx.poisoned(DataType.FLOAT32, n);
        works.add(c.reduceAsync(rIn, rOut, ReduceOp.MIN, 0));
        Buffer gaIn = ctx.buffer(DataType.INT32, ReduceOp.SUM, sd + 25, r, n);
        Buffer gaOut = ctx.poisoned(DataType.INT32, n * size);
        works.add(c.gatherAsync(gaIn, gaOut, size - 1));
        Buffer scIn = r == 0 ? ctx.buffer(DataType.INT32, ReduceOp.SUM, sd + 26, 0, n * size) : ctx.poisoned(DataType.INT32, n * size);
        Buffer scOut = ctx.poisoned(DataType.INT32, n);
        works.add(c.scatterAsync(scIn, scOut, 0));
        works.add(c.barrierAsync());
        Collections.shuffle(works, new java.util.Random(sd));
        for (Work w : works) {
            w.await();
            ctx.check(w.isDone() && w.exception() == null, () -> "a work is not done, or failed, after await()");
        }
        checks.forEach(Runnable::run);
        for (int p = 0; p < size; p++) {
            int pp = p;
            ctx.checkBytes(() -> "async all-gather: block of rank " + pp, gOut, p * n, ctx.input(DataType.FLOAT64, ReduceOp.SUM, sd + 20, p, n));
            long bs = n;
            ctx.checkBytes(() -> "async all-to-all: block from rank " + pp, aOut, p * n,
                    ctx.input(DataType.INT8, ReduceOp.SUM, sd + 23, p, n * size).asSlice(r * bs, bs));
            if (r == size - 1) {
                ctx.checkBytes(() -> "async gather: block of rank " + pp, gaOut, p * n, ctx.input(DataType.INT32, ReduceOp.SUM, sd + 25, p, n));
            }
        }
        ctx.checkBytes(() -> "async broadcast", bc, 0, ctx.input(DataType.UINT8, ReduceOp.SUM, sd + 21, size - 1, n));
        ctx.checkReduced(() -> "async reduce-scatter", rsOut, 0, DataType.INT64, ReduceOp.MAX, sd + 22, r * n, n);
        if (r == 0) {
            ctx.checkReduced(() -> "async reduce", rOut, 0, DataType.FLOAT32, ReduceOp.MIN, sd + 24, 0, n);
        }
        ctx.checkBytes(() -> "async scatter", scOut, 0, ctx.input(DataType.INT32, ReduceOp.SUM, sd + 26, 0, n * size).asSlice(r * n * 4, n * 4));
    }

    /**
     * Async works that nobody awaits complete anyway: every rank issues all-reduces (the host
     * engine's worker runs them; other backends progress them) and only polls {@code isDone()},
     * sleeping in between, until each is done; then checks them.
     */
    static void asyncProgressWithoutAwait(Ctx ctx) {
        long sd = ctx.seed();
        List<Work> works = new ArrayList<>();
        List<Runnable> checks = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            long n = i == 1 ? 65_537 : 13;
            works.add(allReduceAsyncChecked(ctx, DataType.FLOAT32, ReduceOp.SUM, sd + 40 + i, n,
                    "async all-reduce #" + i + ", completed without await()", checks));
        }
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (int i = 0; i < works.size(); i++) {
            Work w = works.get(i);
            while (!w.isDone()) {
                if (System.nanoTime() - deadline > 0) {
                    ctx.fail("async all-reduce #" + i + " was not done 60 s after it was issued, with nobody awaiting it");
                    return;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(200_000);
            }
            int ii = i;
            ctx.check(w.exception() == null, () -> "async all-reduce #" + ii + " failed: " + w.exception());
        }
        checks.forEach(Runnable::run);
    }

    /**
     * Async works awaited by another thread than the one that issued them, in reverse order, while
     * the issuing thread issues and awaits more (the host engine lets a thread that awaits run the
     * queued works itself: it must run each once, in posting order); with a send/recv ring step
     * among them where the backend has point to point.
     */
    static void asyncAwaitedByAnotherThread(Ctx ctx) throws InterruptedException {
        Communicator c = ctx.comm();
        int r = ctx.rank();
        int size = ctx.size();
        long sd = ctx.seed();
        List<Work> first = new ArrayList<>();
        List<Runnable> checks = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            DataType t = i % 2 == 0 ? DataType.FLOAT32 : DataType.INT64;
            long n = i % 3 == 0 ? 70_001 : 31;
            first.add(allReduceAsyncChecked(ctx, t, ReduceOp.SUM, sd + 50 + i, n,
                    "async all-reduce #" + i + ", awaited by another thread", checks));
        }
        boolean ring = size > 1 || ctx.traits().selfP2p();
        long n = 1009;
        Buffer out = ctx.buffer(DataType.INT32, ReduceOp.SUM, sd + 60, r, n);
        Buffer in = ctx.poisoned(DataType.INT32, n);
        if (ring) {
            first.add(c.sendRecvAsync(out, (r + 1) % size, in, (r + size - 1) % size));
        }
        java.util.concurrent.atomic.AtomicReference<Throwable> failed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread waiter = Thread.ofPlatform().name("kit-awaiter-r" + r).start(() -> {
            try {
                for (int i = first.size() - 1; i >= 0; i--) {
                    first.get(i).await();
                }
            } catch (Throwable e) {
                failed.set(e);
            }
        });
        // meanwhile this thread goes on with more async calls of its own
        List<Work> second = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            second.add(allReduceAsyncChecked(ctx, DataType.FLOAT32, ReduceOp.MAX, sd + 70 + i, 257,
                    "async all-reduce #" + i + " of the issuing thread", checks));
        }
        for (Work w : second) {
            w.await();
        }
        waiter.join(120_000);
        if (waiter.isAlive()) {
            ctx.fail("the other thread's await() of the first works did not return within 120 s");
            return;
        }
        ctx.check(failed.get() == null, () -> "the other thread's await() failed: " + failed.get());
        for (Work w : first) {
            ctx.check(w.isDone() && w.exception() == null, () -> "a work awaited by another thread is not done, or failed: "
                    + w.exception());
        }
        checks.forEach(Runnable::run);
        if (ring) {
            int from = (r + size - 1) % size;
            ctx.checkBytes(() -> "async send/recv ring step from rank " + from + ", awaited by another thread", in, 0,
                    ctx.input(DataType.INT32, ReduceOp.SUM, sd + 60, from, n));
        }
    }

    /**
     * Every rank but the last shrinks the communicator without it (the leaving rank does not call
     * shrink): ranks keep their order, the new one all-reduces the survivors' ranks, and the
     * parent goes on working.
     */
    static void shrinkExcludingTheLast(Ctx ctx) {
        if (!ctx.traits().shrink() || ctx.size() < 2) {
            return;
        }
        int leaving = ctx.size() - 1;
        Communicator c = ctx.comm();
        if (ctx.rank() != leaving) {
            List<Integer> members = new ArrayList<>();
            for (int p = 0; p < leaving; p++) {
                members.add(p);
            }
            try (Communicator s = c.shrink(java.util.Set.of(leaving))) {
                ctx.check(s.size() == leaving && s.rank() == ctx.rank(), () -> "shrink without rank " + leaving + " gave rank "
                        + s.rank() + " of " + s.size() + ", want rank " + ctx.rank() + " of " + leaving);
                checkSum(ctx, s, members, "shrink without rank " + leaving);
            }
        }
        List<Integer> all = new ArrayList<>();
        for (int p = 0; p < ctx.size(); p++) {
            all.add(p);
        }
        checkSum(ctx, c, all, "the parent after a shrink");
    }

    /**
     * {@code dumpFlightRecord} writes a file that names the collectives this rank ran (every
     * backend keeps a flight recorder).
     */
    static void flightRecordDump(Ctx ctx) throws java.io.IOException {
        Communicator c = ctx.comm();
        Buffer b = ctx.buffer(DataType.FLOAT32, ReduceOp.SUM, ctx.seed(), ctx.rank(), 16);
        c.allReduce(b, ReduceOp.SUM);
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("jccl-kit-flight");
        try {
            java.nio.file.Path f = c.dumpFlightRecord(dir);
            String s = java.nio.file.Files.readString(f);
            ctx.check(s.contains("allReduce"), () -> "the flight record " + f + " does not name the allReduce just run: "
                    + s.substring(0, Math.min(400, s.length())));
        } finally {
            try (var files = java.nio.file.Files.list(dir)) {
                for (java.nio.file.Path p : files.toList()) {
                    java.nio.file.Files.deleteIfExists(p);
                }
            }
            java.nio.file.Files.deleteIfExists(dir);
        }
    }

    static void callsAfterClose(Ctx ctx) {
        Communicator c = ctx.comm();
        c.close();
        c.close();
        Buffer b = ctx.mem().allocate(DataType.FLOAT32, 4);
        ctx.expectThrows(InvalidUsageException.class, "allReduce after close", () -> c.allReduce(b, ReduceOp.SUM));
        ctx.expectThrows(InvalidUsageException.class, "allReduceAsync after close", () -> c.allReduceAsync(b, ReduceOp.SUM));
        ctx.expectThrows(InvalidUsageException.class, "barrier after close", c::barrier);
        ctx.expectThrows(InvalidUsageException.class, "send after close", () -> c.send(b, (ctx.rank() + 1) % ctx.size()));
        ctx.expectThrows(InvalidUsageException.class, "split after close", () -> c.split(0, 0));
    }
}
