package org.jccl.host;

import java.lang.foreign.Arena;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.internal.Log;
import org.jccl.internal.WarmupSetting;

/**
 * Runs the host engine's hot paths at communicator creation until the JIT has compiled them, so
 * that the caller's first collectives run compiled code (JCCL_WARMUP).
 *
 * <p>Why: before C2 has compiled them, the reduction kernels (Vector API code, which only C2
 * turns into SIMD instructions) run hundreds of times slower, and a rank spinning in an
 * interpreted wait competes with the compiler threads for the cores, so a cold JVM's first
 * collectives of each size ran many times slower than later ones. Warming inside the library moves
 * that cost to creation, once per JVM: a JVM whose code is already compiled leaves after the
 * first quiet stretch.
 *
 * <p>What runs: blocks of float32 SUM all-reduces (a small, a mid and a large size, each through
 * the algorithm the tuner gives it, and one-shot's largest size where the mid one is past it; out
 * of place and in place, and one of every count from 1 to {@value #TAILS} in turn, so that the
 * kernels' tails have run every remainder) and a small all-reduce with each other float reduction
 * in turn, plus a small broadcast and reduce (both placements), all-gather, reduce-scatter,
 * all-to-all, gather, scatter (the root taking turns), a barrier, send/recv ring steps and a
 * blocking send and receive between pairs of ranks; every {@code LARGE_EVERY} blocks of a set a
 * large broadcast, send/recv and one of the other collectives in turn (their zero-copy and
 * single-copy paths; an all-to-all and a reduce every other time in place), and, in the shared
 * blocks, what a caller does now and then (an async call, an in-place call, a one-chunk rooted call
 * too large for the small ring, sends ahead of a late receiver, calls of no elements, the health
 * check of a parked wait: see {@code Buffers.rarer}); every {@value #LATE_EVERY} one rank comes
 * late to one call, so that the others' waits yield and park; blocks alternate between buffers of a
 * confined and of a shared arena (each output below its input in one, above it in the other), the
 * shared ones add a few asynchronous calls (a burst of four queued, then awaited in order, as jccl perf
 * issues them), and every {@value #RESTART_EVERY} blocks the numbering
 * restarts. What a caller's first calls do that the warm-up never did (a branch never taken, a
 * type never seen) makes C2 throw away the compiled call path, kernels inlined in it included, and
 * run it in the interpreter until it is compiled again. After each block the ranks
 * agree, through one small all-reduce, whether any rank's JIT finished a compilation in the last
 * 60 ms; the warm-up ends once none did and the warm-ups of this JVM made at least {@link WarmupSetting#MIN_CALLS}
 * collectives, or once {@code JCCL_WARMUP} seconds have passed on any rank. Every rank runs the same
 * calls, so the sequence numbers stay aligned; at the end every rank restarts the numbering
 * ({@link org.jccl.host.engine.EngineCommunicator#restartNumbering}), so error messages and the
 * flight recorder count the caller's collectives from #1.
 */
final class JitWarmup {
    private static final Log LOG = Log.get(JitWarmup.class);

    // Counts that are no multiple of a vector (up to 16 floats): the kernels' vector loops and
    // their scalar tails both run, so a later count of another remainder finds both compiled.
    private static final int SMALL = 7;
    private static final int MID = 4099;
    /**
     * The mid-size send/recv: MID floats, or fewer where they would reach the default single-copy
     * threshold, so that it warms the mailbox path (the large one warms the single copy). With the
     * 16 KiB threshold MID took the single copy, and the mailbox path lost its mid-size warm-up.
     */
    private static final int P2P_MID = (int) Math.min(MID, HostCommunicator.SINGLE_COPY_BYTES / Float.BYTES - 1);
    private static final int LARGE = 65541;
    /**
     * Just over the block from which a 2-rank broadcast, scatter, all-gather or all-to-all of one
     * chunk posts its buffer's address for the peer to read (Chunks.READ_POSTER_MIN_BYTES, 32 KiB):
     * without these calls a caller's first such call (a 64 KiB all-gather, say) took branches the
     * compiled calls had never seen and threw them away.
     */
    private static final int POSTED = (32 << 10) / Float.BYTES + 3;
    /**
     * A block between a slot's share and the zero-copy threshold (128 KiB + 12 B: 2 chunks at 2
     * ranks, 3 at 4): the copy path of several chunks, which the all-gather, gather, scatter,
     * reduce-scatter and all-to-all take only at such sizes (a caller's first 4-rank scatter of
     * 512 KiB took the rooted branch of that loop for the first time).
     */
    private static final int MULTI = (128 << 10) / Float.BYTES + 3;
    /**
     * Counts 1 to this many take turns, one per block: every length of the two-input float tail,
     * whose code has one case per length.
     */
    private static final int TAILS = org.jccl.host.kernel.Reductions.FLOAT_TAIL_MAX;

    /**
     * Every this many blocks the warm-up restarts the numbering (as it does at its end), so that
     * the code after a restart (the flight recorder's first entry) is profiled too: a branch the
     * warm-up never took sent the whole compiled call path back to the interpreter at the
     * caller's first collective.
     */
    static final int RESTART_EVERY = 16;
    /**
     * Every this many blocks of a set one rank comes {@link #LATE_NANOS} late to one of the block's
     * calls (the call and the rank take turns), so that the others wait long enough to yield and
     * to park. A wait that long is common in a caller's steps (a rank still computing) and never
     * happened in a warm-up of back-to-back calls: the park branch of the idle strategy, inlined in
     * every wait, was a trap that sent the caller's first long wait's compiled code back to the
     * interpreter. (The health check of a parked wait, which on a virtual machine's slow spins comes
     * only after tens of milliseconds, is run directly instead: {@code Buffers.rarer}.)
     */
    static final int LATE_EVERY = 128;
    /** How late: past the spins and yields of a wait ({@code BackoffIdleStrategy.forRanks}, 1-2.5 ms) into its parks. */
    static final long LATE_NANOS = 4_000_000;
    /** The calls of a block that a late rank may be late to (see {@code Buffers.block}). */
    private static final int LATE_SITES = 4;

    /** Collectives the warm-ups of this JVM made (every thread rank counts its own). */
    static final java.util.concurrent.atomic.AtomicLong CALLS = new java.util.concurrent.atomic.AtomicLong();

    /** Warm-ups run in this JVM (one per rank), for tests. */
    static final java.util.concurrent.atomic.AtomicInteger RUNS = new java.util.concurrent.atomic.AtomicInteger();

    private JitWarmup() {
    }


    /**
     * Warms {@code comm}'s paths for at most {@code maxSeconds} (collective: every rank calls it
     * with its new communicator). Returns the number of blocks run.
     */
    static int run(Communicator comm, double maxSeconds) {
        int n = comm.size();
        if (maxSeconds <= 0 || n < 2) {
            return 0;
        }
        long t0 = System.nanoTime();
        long limit = (long) (maxSeconds * 1e9);
        int blocks = 0;
        try (Arena confined = Arena.ofConfined(); Arena shared = Arena.ofShared()) {
            // Both kinds of arena: a confined segment's accesses check the owner thread, a shared
            // one's do not, and code profiled on one kind only traps and recompiles on the other.
            // And both orders of a call's buffers in memory (output below or above the input), so
            // that no branch of the argument checks (overlap tests) is left unprofiled.
            // The largest one-shot all-reduce the tuner gives: where that is below MID, one more size
            // warms one-shot near its top (its kernels' vector loop, not only the small size's tail).
            // Other communicators (hierarchical: shared memory inside each host) warm the limit of 3+ ranks.
            long oneShotMax = comm instanceof HostCommunicator h ? h.oneShotMaxBytes()
                    : org.jccl.host.tune.Tuner.ONESHOT_MAX_BYTES_MANY;
            // (none where MID is one-shot already, nor where not even SMALL is: JCCL_ONESHOT_MAX_BYTES=0)
            int top = oneShotMax >= (long) MID * Float.BYTES || oneShotMax <= (long) SMALL * Float.BYTES ? 0
                    : (int) ((oneShotMax / Float.BYTES - 1) | 1);
            Buffers[] sets = {new Buffers(confined, n, false, top), new Buffers(shared, n, true, top)};
            // {busy, out of time, a bit that differs between ranks and blocks}: the last one takes
            // the integer maximum's comparison both ways, so that the final vote (busy turning
            // from 1 to 0) is no branch the compiled reduction never took
            int[] vote = new int[3];
            HostBuffer voteBuf = HostBuffer.of(vote);
            // the quiet stretch counts from the start, so it also is the shortest warm-up
            long compiled = WarmupSetting.jitActivity();
            boolean watch = compiled >= 0;
            long lastCompile = t0;
            while (true) {
                long b0 = System.nanoTime();
                sets[blocks & 1].block(comm, (blocks & 1) == 1);
                blocks++;
                long now = System.nanoTime();
                int bk = blocks;
                LOG.trace(comm.rank(), () -> "JIT warm-up block " + bk + ": " + (now - b0) / 1000 + " us, "
                        + CALLS.get() + " calls in this JVM");
                long total = WarmupSetting.jitActivity();
                if (total != compiled) {
                    compiled = total;
                    lastCompile = now;
                }
                long elapsed = now - t0;
                vote[0] = WarmupSetting.busy(watch, now, lastCompile, CALLS.get()) ? 1 : 0;
                vote[1] = elapsed >= limit ? 1 : 0;
                vote[2] = (blocks + comm.rank()) & 1;
                comm.allReduce(voteBuf, voteBuf, ReduceOp.MAX);
                if (vote[0] == 0 || vote[1] == 1) {
                    break;
                }
                if (blocks % RESTART_EVERY == 0) {
                    restartNumbering(comm); // every rank at the same point, after the vote
                }
            }
        }
        restartNumbering(comm);
        RUNS.incrementAndGet();
        long ms = (System.nanoTime() - t0) / 1_000_000;
        int r = comm.rank();
        int k = blocks;
        long up = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime();
        LOG.info(r, () -> "JIT warm-up: " + k + " blocks in " + ms + " ms, ending " + up
                + " ms after the JVM started (JCCL_WARMUP=0 turns it off)");
        return blocks;
    }

    private static void restartNumbering(Communicator comm) {
        if (comm instanceof org.jccl.host.engine.EngineCommunicator<?> e) {
            e.restartNumbering();
        }
    }

    /** The buffers of one block, allocated once. */
    private static final class Buffers {
        final HostBuffer smallIn, smallOut, midIn, midOut, largeIn, largeOut;
        /**
         * What the in-place calls pass as their second buffer: the output itself in one set, in the
         * other a second HostBuffer over the same memory (as a caller's view of it would be), so
         * the overlap checks see buffers that overlap without being the same object.
         */
        final HostBuffer smallSame, midSame, largeSame;
        /** MID's buffers cut to {@link #P2P_MID}. */
        final HostBuffer p2pMidIn, p2pMidOut;
        final HostBuffer blockIn, gathered, exchanged;
        /** No elements: the zero-count calls of {@link #rarer}. */
        final HostBuffer empty, emptyOut;
        /** {@link #LARGE} floats a rank: the large all-gather's output, the all-to-all's input and output. */
        final HostBuffer largeAll, largeAll2;
        /**
         * 2 ranks only (else null): zeros of just over the size from which a 2-rank reduce goes
         * one-shot ({@link org.jccl.host.tune.Tuner#REDUCE_ONESHOT_MIN_BYTES_2}), for an in-place
         * reduce now and then: the tuner's branch for it was new to a caller's first 1 MiB reduce.
         */
        final HostBuffer huge;
        /** The one-shot top size's buffers (null when MID is one-shot already). */
        final HostBuffer topIn, topOut, topSame;
        /** {@code tailIn[c]}, {@code tailOut[c]}: {@code c} floats, for c from 1 to {@value #TAILS}. */
        final HostBuffer[] tailIn = new HostBuffer[TAILS + 1], tailOut = new HostBuffer[TAILS + 1];
        /** The blocks this set ran. */
        private int blocks;

        /**
         * {@code outFirst}: each output lies below its input in memory, else above; {@code top}: floats
         * of the one-shot top size, 0 for none.
         */
        Buffers(Arena arena, int n, boolean outFirst, int top) {
            if (top > 0) {
                HostBuffer[] t = pair(arena, top, outFirst);
                topIn = fill(t[0]);
                topOut = t[1];
                topSame = outFirst ? topOut.slice(0, top) : topOut;
            } else {
                topIn = null;
                topOut = null;
                topSame = null;
            }
            HostBuffer[] small = pair(arena, SMALL, outFirst);
            HostBuffer[] mid = pair(arena, MID, outFirst);
            HostBuffer[] large = pair(arena, LARGE, outFirst);
            smallIn = fill(small[0]);
            smallOut = small[1];
            midIn = fill(mid[0]);
            midOut = mid[1];
            largeIn = fill(large[0]);
            largeOut = large[1];
            smallSame = outFirst ? smallOut.slice(0, SMALL) : smallOut;
            midSame = outFirst ? midOut.slice(0, MID) : midOut;
            p2pMidIn = midIn.slice(0, P2P_MID);
            p2pMidOut = midOut.slice(0, P2P_MID);
            largeSame = outFirst ? largeOut.slice(0, LARGE) : largeOut;
            blockIn = fill(HostBuffer.allocate(DataType.FLOAT32, SMALL, arena));
            empty = smallIn.slice(0, 0);
            emptyOut = smallOut.slice(0, 0);
            HostBuffer[] tail = pair(arena, TAILS, outFirst);
            fill(tail[0]);
            for (int c = 1; c <= TAILS; c++) {
                tailIn[c] = tail[0].slice(0, c);
                tailOut[c] = tail[1].slice(0, c);
            }
            // Native memory only: kernels compiled after a warm-up that mixed heap arrays in ran
            // large all-reduces 1.3-2x slower on native buffers (docs/BENCHMARKS.md, host engine on
            // the 32-core host); a heap array's first calls recompile them for both kinds.
            largeAll = HostBuffer.allocate(DataType.FLOAT32, (long) LARGE * n, arena);
            largeAll2 = HostBuffer.allocate(DataType.FLOAT32, (long) LARGE * n, arena);
            huge = n == 2 ? HostBuffer.allocate(DataType.FLOAT32,
                    org.jccl.host.tune.Tuner.REDUCE_ONESHOT_MIN_BYTES_2 / Float.BYTES + 3, arena) : null;
            gathered = HostBuffer.allocate(DataType.FLOAT32, (long) SMALL * n, arena);
            exchanged = HostBuffer.allocate(DataType.FLOAT32, (long) SMALL * n, arena);
        }

        /** {input, output} of {@code count} floats, the one allocated first lying lower. */
        private static HostBuffer[] pair(Arena arena, int count, boolean outFirst) {
            HostBuffer first = HostBuffer.allocate(DataType.FLOAT32, count, arena);
            HostBuffer second = HostBuffer.allocate(DataType.FLOAT32, count, arena);
            boolean firstLower = first.segment().address() < second.segment().address();
            return firstLower != outFirst ? new HostBuffer[] {first, second} : new HostBuffer[] {second, first};
        }

        private static HostBuffer fill(HostBuffer b) {
            for (long i = 0; i < b.count(); i++) {
                b.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 1f);
            }
            return b;
        }

        /** Messages a rank sends ahead of its partner in {@link #rarer}: one more than a mailbox holds. */
        private static final int AHEAD = 5;
        /**
         * How late the partner comes to them: long enough for the sender to find its mailbox full
         * (and the eager side of the ring-ahead calls the small ring).
         */
        private static final long AHEAD_LATE_NANOS = 200_000;

        /**
         * Every {@link #LARGE_EVERY} shared blocks, what a caller does now and then and no other
         * call of the warm-up does, each of which took the compiled call path a branch it had never
         * seen and threw it away at the caller's first such call: the async form of one collective
         * in turn (with a non-root's null buffer), one in place in turn (the overlap checks'
         * other side), a rooted call of one chunk too large for the small ring in turn, a
         * send/recv pair whose sender finds its mailbox full, small rooted calls whose eager side
         * finds the small ring full, and the health check of a parked wait. {@code e}: this event's number.
         */
        private void rarer(Communicator c, int e, int root) {
            int n = c.size();
            int r = c.rank();
            CALLS.addAndGet(3); // the async, the in-place and the one-chunk rooted call
            HostBuffer mine = gathered.slice((long) r * SMALL, SMALL);
            switch (e % 6) {
                case 0 -> c.reduceAsync(smallIn, smallOut, ReduceOp.SUM, root).await();
                case 1 -> c.gatherAsync(blockIn, exchanged, root).await();
                case 2 -> c.scatterAsync(gathered, smallOut, root).await();
                case 3 -> c.allGatherAsync(blockIn, exchanged).await();
                case 4 -> c.reduceScatterAsync(gathered, smallOut, ReduceOp.SUM).await();
                default -> c.allToAllAsync(gathered, exchanged).await();
            }
            switch (e % 4) {
                case 0 -> c.gather(mine, gathered, root);
                case 1 -> c.allGather(mine, gathered);
                case 2 -> c.scatter(gathered, mine, root);
                default -> c.reduceScatter(gathered, mine, ReduceOp.SUM);
            }
            HostBuffer midAll = largeAll.slice(0, (long) MID * n);
            switch (e % 4) {
                case 0 -> c.broadcast(midIn, midOut, root);
                case 1 -> c.reduce(midIn, midOut, ReduceOp.SUM, root);
                case 2 -> c.gather(midIn, midAll, root);
                default -> c.scatter(midAll, midOut, root);
            }
            // Pairs of ranks, shifted by one every other event so that an odd rank count leaves
            // out another rank each time; in each pair the two take turns as the sender
            int shift = e & 1;
            int q = (r - shift + n) % n;
            if ((q ^ 1) < n) {
                int partner = ((q ^ 1) + shift) % n;
                CALLS.addAndGet(AHEAD);
                if ((q & 1) == ((e >> 1) & 1)) {
                    for (int i = 0; i < AHEAD; i++) {
                        c.send(smallIn, partner); // small: posted in the mailbox, not waiting for the receive
                    }
                } else {
                    busy(AHEAD_LATE_NANOS);
                    for (int i = 0; i < AHEAD; i++) {
                        c.recv(smallOut, partner);
                    }
                }
            }
            // A ring ahead: a loop of small gathers whose root is late, then of small broadcasts whose
            // receivers are late, so that the eager side finds the small ring full and waits (a
            // caller's such loop took a branch of the chunk's start the compiled code had never seen)
            int ring = org.jccl.host.shm.ShmSegmentDescriptor.SMALL_SLOTS + 2;
            CALLS.addAndGet(2 * ring);
            if (r == root) {
                busy(AHEAD_LATE_NANOS);
            }
            for (int i = 0; i < ring; i++) {
                c.gather(blockIn, exchanged, root);
            }
            if (r != root) {
                busy(AHEAD_LATE_NANOS);
            }
            for (int i = 0; i < ring; i++) {
                c.broadcast(smallIn, smallOut, root);
            }
            // Calls of no elements (a caller's size that splits into empty parts makes them too):
            // the kernels' checks of an empty range. (Not the all-gather's and all-to-all's: their
            // copy loop's profile, mixed with empty copies, made C2 hoist a check that then failed
            // on a caller's first non-empty ones.)
            CALLS.addAndGet(2);
            if (e % 2 == 0) {
                c.allReduce(empty, emptyOut, ReduceOp.SUM);
                c.reduceScatter(empty, emptyOut, ReduceOp.SUM);
            } else {
                c.broadcast(empty, emptyOut, root);
                c.reduce(empty, emptyOut, ReduceOp.SUM, root);
            }
            if (c instanceof HostCommunicator h) {
                h.warmParkedCheck();
            }
        }

        /**
         * Keeps this rank busy for {@link #LATE_NANOS} when {@code now}, so that the others' next
         * wait spins, yields and parks (busy rather than asleep: on few cores a sleeping rank would
         * leave its core to the waiters' spinning instead of making them wait).
         */
        private static void late(boolean now) {
            if (now) {
                busy(LATE_NANOS);
            }
        }

        /**
         * The 2-rank calls of one chunk whose blocks the sender posts by address ({@link #POSTED}
         * floats a rank), the root taking turns: a broadcast out of place and in place, a scatter, a
         * gather, an all-gather, and an all-to-all out of place and in place (which posts no address).
         */
        private void posted(Communicator c, int e) {
            CALLS.addAndGet(7);
            int root = e % 2;
            HostBuffer in = largeIn.slice(0, POSTED);
            HostBuffer out = largeOut.slice(0, POSTED);
            HostBuffer all = largeAll.slice(0, 2L * POSTED);
            c.broadcast(in, out, root);
            c.broadcast(out, 1 - root);
            c.scatter(all, out, root);
            c.gather(in, all, 1 - root);
            c.allGather(in, all);
            c.allToAll(all, largeAll2.slice(0, 2L * POSTED));
            c.allToAll(all, all);
        }

        /**
         * The copy path of several chunks ({@link #MULTI} floats a rank), the root taking turns: a
         * scatter, a gather, an all-gather, a reduce-scatter and an all-to-all.
         */
        private void multi(Communicator c, int e) {
            CALLS.addAndGet(5);
            int n = c.size();
            HostBuffer in = largeIn.slice(0, MULTI);
            HostBuffer out = largeOut.slice(0, MULTI);
            HostBuffer all = largeAll.slice(0, (long) n * MULTI);
            c.scatter(all, out, e % n);
            c.gather(in, all, (e + 1) % n);
            c.allGather(in, all);
            c.reduceScatter(all, out, ReduceOp.SUM);
            c.allToAll(all, largeAll2.slice(0, (long) n * MULTI));
        }

        /** Keeps this rank busy (spinning, not asleep) for {@code nanos}. */
        private static void busy(long nanos) {
            long end = System.nanoTime() + nanos;
            while (System.nanoTime() - end < 0) {
                Thread.onSpinWait();
            }
        }

        /** The float reductions other than SUM, one per block in turn (see {@link #block}). */
        private static final ReduceOp[] OTHER_OPS = {ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD, ReduceOp.AVG,
            ReduceOp.preMulSum(0.5)};

        /** Every this many blocks of a set, the large paths of the other collectives (see {@link #block}). */
        private static final int LARGE_EVERY = 8;

        /** Async all-reduces issued back to back in each shared block, then awaited. */
        private static final int BURST = 4;
        private final org.jccl.Work[] burst = new org.jccl.Work[BURST];

        /**
         * One block: about a millisecond of calls once compiled; {@code async} adds calls through
         * the worker thread (Work-returning calls, which need buffers of a shared arena).
         */
        void block(Communicator c, boolean async) {
            CALLS.addAndGet((async ? 51 + BURST : 48) + (topIn != null ? 16 : 0)); // with the vote that follows each block
            int b = blocks++;
            int t = 1 + b % TAILS;
            // this block's late event (-1: none): which call, and which rank is late to it
            int event = b % LATE_EVERY == LATE_EVERY - 1 ? b / LATE_EVERY : -1;
            int lateSite = event < 0 ? -1 : event % LATE_SITES;
            boolean lateHere = event >= 0 && c.rank() == (event / LATE_SITES) % c.size();
            c.allReduce(tailIn[t], tailOut[t], ReduceOp.SUM);
            c.allReduce(tailOut[t], tailOut[t], ReduceOp.SUM);
            // The other float reductions, one a block in turn, so that the kernels' dispatch has
            // seen every one: a caller's first MAX (say) took a branch the compiled call path had
            // never seen, which threw it away, and SUMs ran 2-3x slower for thousands of calls after
            c.allReduce(smallIn, smallOut, OTHER_OPS[b % OTHER_OPS.length]);
            late(lateHere && lateSite == 0);
            for (int i = 0; i < 8; i++) {
                c.allReduce(smallIn, smallOut, ReduceOp.SUM);
                c.allReduce(smallOut, smallSame, ReduceOp.SUM);
                if (topIn != null) {
                    c.allReduce(topIn, topOut, ReduceOp.SUM);
                    c.allReduce(topOut, topSame, ReduceOp.SUM);
                }
                late(lateHere && lateSite == 1 && i == 0);
                c.allReduce(midIn, midOut, ReduceOp.SUM);
                c.allReduce(midOut, midSame, ReduceOp.SUM);
            }
            c.allReduce(largeIn, largeOut, ReduceOp.SUM);
            c.allReduce(largeOut, largeSame, ReduceOp.SUM);
            late(lateHere && lateSite == 2);
            // The rooted calls' root takes turns: in a JVM whose rank was always the root, a caller's
            // first gather, scatter or reduce to another rank took the others' branches for the first time
            int root = b % c.size();
            c.broadcast(smallIn, smallOut, root);
            c.reduce(smallIn, smallOut, ReduceOp.SUM, root);
            // In place too: a small reduce's root reads its own input where its output goes, a
            // branch of the kernels' overlap check that no other call takes (without it the
            // caller's first in-place reduce threw the compiled reduction away)
            c.reduce(smallOut, ReduceOp.SUM, root);
            c.broadcast(smallOut, root);
            if (b % LARGE_EVERY == LARGE_EVERY - 1) { // (run() warms 2 ranks or more only)
                // Now and then the large paths of the collectives other than all-reduce (zero copy,
                // from JCCL_SHM_ZERO_COPY_BYTES a rank) and of a send/recv (a single copy, from
                // JCCL_SHM_SINGLE_COPY_BYTES): a caller's first 1 MiB broadcast, all-gather,
                // reduce-scatter, reduce or send/recv took branches the compiled code had never seen
                int n = c.size();
                int e = b / LARGE_EVERY;
                CALLS.addAndGet(3);
                c.broadcast(largeIn, largeOut, e % n);
                c.broadcast(largeOut, (e + 1) % n);
                // and one of the other collectives' large paths in turn
                switch (e % 6) {
                    case 0 -> c.allGather(largeIn, largeAll);
                    case 1 -> c.reduceScatter(largeAll, largeOut, ReduceOp.SUM);
                    // (every other time in place: the zero-copy paths decline it, and the chunked
                    // fallback's branch was new to a caller's first in-place 1 MiB all-to-all)
                    case 2 -> c.allToAll(largeAll, (e / 6) % 2 == 0 ? largeAll2 : largeAll);
                    case 3 -> c.gather(largeIn, largeAll, e % n);
                    case 4 -> {
                        if ((e / 6) % 3 == 0) {
                            c.reduce(largeIn, largeOut, ReduceOp.SUM, e % n);
                        } else if ((e / 6) % 3 == 1 || huge == null) {
                            c.reduce(largeOut, ReduceOp.SUM, e % n);
                        } else {
                            c.reduce(huge, ReduceOp.SUM, e % n); // (zeros: the sums stay zeros)
                        }
                    }
                    default -> c.scatter(largeAll, largeOut, e % n);
                }
                if (async) {
                    // (shared buffers only, as the other send/recv below)
                    c.sendRecv(largeIn, (c.rank() + 1) % n, largeOut, (c.rank() + n - 1) % n);
                }
                if (n == 2) {
                    posted(c, e);
                }
                multi(c, e);
            }
            if (async && b % LARGE_EVERY == LARGE_EVERY / 2) {
                rarer(c, b / LARGE_EVERY, root);
            }
            c.allGather(blockIn, gathered);
            c.reduceScatter(gathered, smallOut, ReduceOp.SUM);
            c.allToAll(gathered, exchanged);
            // Gather and scatter share the all-gather's and broadcast's code, with the branches
            // of a root and of the others: without them a caller's first gather threw that away.
            c.gather(blockIn, exchanged, root);
            c.scatter(gathered, smallOut, root);
            late(lateHere && lateSite == 3);
            c.barrier();
            if (async) {
                // A burst, as jccl perf and nccl-tests issue them: several queued, then awaited in
                // order (the waiting thread runs them while the later ones wait in the queue)
                for (int i = 0; i < burst.length; i++) {
                    burst[i] = c.allReduceAsync(smallIn, smallOut, ReduceOp.SUM);
                }
                for (org.jccl.Work w : burst) {
                    w.await();
                }
                c.allReduceAsync(smallIn, smallOut, ReduceOp.SUM).await();
                c.allReduceAsync(midOut, ReduceOp.SUM).await();
                c.broadcastAsync(smallOut, 0).await();
                int n = c.size();
                if (n > 1) {
                    // Send/recv (in the shared blocks: a hierarchical communicator moves its local
                    // halves through async calls, and would stage confined buffers through copies the
                    // caller's path does not take): a ring step of each size, on the calling thread,
                    // and an async pair through the worker's send/recv batch
                    int next = (c.rank() + 1) % n;
                    int prev = (c.rank() + n - 1) % n;
                    c.sendRecv(smallIn, next, smallOut, prev);
                    // and a blocking send and receive between pairs of ranks (0 and 1, 2 and 3, ...)
                    int partner = c.rank() ^ 1;
                    if (partner < n) {
                        if ((c.rank() & 1) == 0) {
                            c.send(smallIn, partner);
                            c.recv(smallOut, partner);
                        } else {
                            c.recv(smallOut, partner);
                            c.send(smallIn, partner);
                        }
                    }
                    c.sendRecv(p2pMidIn, next, p2pMidOut, prev);
                    org.jccl.Work sent = c.sendAsync(p2pMidIn, next);
                    c.recvAsync(p2pMidOut, prev).await();
                    sent.await();
                }
            }
        }
    }
}
