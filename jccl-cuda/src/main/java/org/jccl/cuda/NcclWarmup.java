package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.LongStream;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.ReduceOp;
import org.jccl.internal.Log;
import org.jccl.internal.WarmupSetting;

/**
 * Runs the NCCL backend's launch path at communicator creation until the JIT has compiled it, so
 * that the caller's first collectives run compiled code ({@code JCCL_WARMUP}, as the host engine's
 * {@code JitWarmup}).
 *
 * <p>Why: the launch path (argument checks, {@link NcclLaunch}, the {@link WorkRing}, event record
 * and poll, the FFM downcalls, {@link CustomAllReduce}'s kernel launch) runs in the interpreter or
 * C1 for the first thousands of calls: on 2x H100, {@code jccl perf} with 5 warm-up and 20 timed
 * calls per size measured 41-121 us per small all-reduce, against 11-14 us once compiled (1000
 * calls of NcclBench). Warming inside the library moves that cost to creation, once per JVM.
 *
 * <p>What runs, in blocks, on the communicator's own stream and a few small device buffers (one
 * allocation, about 2 MiB, freed at the end): float32 SUM all-reduces of 7 and 4099 elements (jccl's
 * own kernels where they are attached), of sizes the tuner gives jccl's other kernels ({@link
 * #kernelCounts}), of sizes the tuner gives to NCCL ({@link #ncclSizedCounts}),
 * bfloat16, float16 and int32 ones; broadcast, reduce, all-gather, reduce-scatter, barrier, and up
 * to 8 ranks all-to-all, gather and scatter ({@link #pointToPoint}); a send/recv ring step in one
 * {@link NcclGroup} and, with an even rank count, blocking send/recv pairs; out of place (the output above
 * its input in even blocks, below it in odd ones) and in place (through the same object in even blocks, through a second view of the
 * memory in odd ones), the root moving from rank to rank, every other block starting with no CUDA context current on the
 * thread ({@link #withoutContext}), once in {@value #RESTART_EVERY} blocks one rank late so that the
 * others wait long ({@link #lateRank}), blocking calls, a burst of asynchronous
 * ones (some on the communicator's stream passed as the caller's) awaited before going on, and a
 * call through a {@code withTimeout} view. One block in {@value #RESTART_EVERY} runs with jccl's
 * kernels detached, so that the all-reduce's NCCL branch for communicators without them (split
 * children, {@code JCCL_ALGO=nccl}) is compiled too, and every {@value #RESTART_EVERY} blocks the
 * numbering restarts, so that the path after a restart is compiled. What a caller's first calls do
 * that the warm-up never did (a branch never taken) makes C2 throw away the compiled call path,
 * and it runs in the interpreter until compiled again: hence the variety.
 *
 * <p>When it stops: after each block the ranks agree through one int32 MAX all-reduce of {busy,
 * over time} on a device buffer, copied back to the host, so that every rank runs the same calls
 * (they are real NCCL collectives: a rank that stopped earlier would leave the others waiting).
 * A rank is busy while its JIT finished a compilation in the last 60 ms or the warm-ups of this JVM
 * made fewer than {@value WarmupSetting#MIN_CALLS} calls (C2 compiles a method after about 15 000 calls: before
 * that a quiet JIT only means nothing was due yet); over time once {@code JCCL_WARMUP} seconds
 * passed. In a JVM whose warm-ups already made that minimum, the quiet stretch counts from before
 * the first block, so a later communicator leaves after one block unless a compilation ended in it.
 *
 * <p>At the end, with every work complete, the numbering restarts on every rank
 * ({@link NcclCommunicator#restartNumbering}): the caller's first collective is #1 in error
 * messages, in JCCL_CHECK's fingerprints and in the flight recorder, and the collectives a timeout
 * reports are the caller's.
 *
 * <p>JCCL_CHECK: the warm-up's collectives skip the fingerprint exchange. Through the store it
 * costs tens of microseconds per call and peer, which would cut the warm-up to a few thousand
 * calls; its keys are numbered by collective, so after the restart the caller's collective #1
 * could read a peer's stale key of the warm-up's #1 (a false mismatch, or a false match); and the
 * warm-up's calls are the same on every rank by construction, so there is nothing to check. A
 * checked communicator's caller runs the checked path, which the warm-up leaves cold: it is a
 * debugging mode, and everything after the exchange is the path the warm-up compiled.
 *
 * <p>Every creation runs it: {@link NcclCommunicator#create} and {@link NcclBackend} (after the
 * heartbeat watch is set, so a death fails the warm-up as it would a collective),
 * {@link NcclCommunicator#initAll} (one thread per communicator, joined: NCCL collectives of one
 * process's GPUs must be issued concurrently), split and shrink (on the new communicator, once the
 * parent's lock is released): in a warm JVM that costs one block, and it makes the child's first
 * calls (its first NCCL kernels, its ring's events) part of its creation. A failure (a deadline, a
 * dead peer, an NCCL error) fails the creation with the collective's error, prefixed with what
 * happened; the buffers then go with the communicator's own, after NCCL's teardown.
 */
final class NcclWarmup {
    private static final Log LOG = NcclCommunicator.LOG;

    /** Every this many blocks the numbering restarts and one block runs without jccl's kernels. */
    static final int RESTART_EVERY = 16;
    // Counts that are no multiple of a vector or of a 16-byte pack: the kernels' main loops and tails both run.
    static final int SMALL = 7;
    static final int MID = 4099;
    /** Alignment of each buffer inside the warm-up's one allocation (cuMemAlloc's own is 256 bytes). */
    static final long ALIGN = 256;
    /** Most ranks for which the warm-up runs all-to-all, gather and scatter ({@link #pointToPoint}). */
    static final int MAX_POINT_TO_POINT_RANKS = 8;
    /** Asynchronous all-reduces issued back to back in each block, then awaited (as jccl perf does). */
    private static final int BURST = 4;

    /** Collectives the warm-ups of this JVM made (every rank counts its own, threads of one process together). */
    static final AtomicLong CALLS = new AtomicLong();
    /** Warm-ups run to their end in this JVM (one per rank), for tests. */
    static final AtomicInteger RUNS = new AtomicInteger();

    private NcclWarmup() {
    }

    // ------------------------------------------------------------------ the plan (pure, unit tested)

    /**
     * Float32 SUM all-reduce counts that the tuner ({@link CustomAllReduce#choose}) gives to NCCL by
     * their size on {@code n} ranks, for a communicator with jccl's kernels: just above the kernels'
     * largest size when it is below a slot (every rank count but 2), and just above a slot. Without
     * the kernels they run on NCCL anyway.
     */
    static long[] ncclSizedCounts(int n) {
        long kernels = CustomAllReduce.kernelsMax(n);
        long overSlot = CustomAllReduce.SLOT_BYTES / 4 + 5;
        if (kernels < CustomAllReduce.SLOT_BYTES) {
            return new long[] {kernels / 4 + 3, overSlot};
        }
        return new long[] {overSlot};
    }

    /**
     * Float32 SUM counts the tuner gives jccl's kernels other than LL on {@code n} ranks (LL runs
     * {@link #SMALL}, and {@link #MID} where it reaches that far): just above each of the tuner's
     * limits that leads to another kernel, with a tail after the 16-byte packs; none where LL reaches
     * as far as the kernels go.
     */
    static long[] kernelCounts(int n) {
        return LongStream.of(CustomAllReduce.llMax(n), CustomAllReduce.lamportMax(n))
                .map(limit -> limit / 4 + 5)
                .filter(c -> {
                    int algo = CustomAllReduce.choose(CustomAllReduce.AUTO, n, c, DataType.FLOAT32, ReduceOp.Kind.SUM.ncclValue());
                    return algo != CustomAllReduce.NCCL && algo != CustomAllReduce.LL;
                })
                .distinct().sorted().toArray();
    }

    /**
     * Every float32 all-reduce count of a block: {@link #SMALL}, {@link #MID}, {@link
     * #kernelCounts}, then {@link #ncclSizedCounts}.
     */
    static long[] allReduceCounts(int n) {
        return LongStream.concat(LongStream.of(SMALL, MID),
                LongStream.concat(LongStream.of(kernelCounts(n)),
                        LongStream.of(ncclSizedCounts(n)))).toArray();
    }

    /**
     * Offsets of consecutive regions of {@code bytes} in one allocation, each aligned to
     * {@link #ALIGN}; the last element is the allocation's size.
     */
    static long[] offsets(long[] bytes) {
        long[] off = new long[bytes.length + 1];
        long at = 0;
        for (int i = 0; i < bytes.length; i++) {
            off[i] = at;
            at = (at + bytes[i] + ALIGN - 1) / ALIGN * ALIGN;
        }
        off[bytes.length] = at;
        return off;
    }

    /**
     * When the quiet stretch starts: at {@code t0} (so it also is the shortest warm-up), or a
     * whole quiet stretch before it in a JVM whose warm-ups made their minimum.
     */
    static long initialLastCompile(long t0, long jvmCalls) {
        return jvmCalls >= WarmupSetting.MIN_CALLS ? t0 - WarmupSetting.QUIET_NANOS : t0;
    }

    /**
     * Whether a block runs all-to-all, gather and scatter on {@code n} ranks: NCCL runs them as
     * point-to-point transfers and connects every pair of ranks at the first one (buffers for each
     * peer, and over the network a connection each), which a job of many ranks may never need; up
     * to 8 ranks (a host's GPUs) that cost is bounded and the warm-up pays it.
     */
    static boolean pointToPoint(int n) {
        return n <= MAX_POINT_TO_POINT_RANKS;
    }

    /** Whether block {@code number} (1-based) runs with jccl's kernels detached. */
    static boolean withoutKernels(int number) {
        return number % RESTART_EVERY == RESTART_EVERY / 2;
    }

    /**
     * How long the late rank of a block ({@link #lateRank}) holds back its first all-reduce: past
     * {@link CudaDevice#gpuWait}'s spin (50 us) and yield (2 ms) phases and {@link NcclWork}'s
     * periodic check (1 ms), so the others' wait runs every branch of it.
     */
    static final long LATE_NANOS = 3_000_000;

    /**
     * The rank that starts block {@code block} (0-based) {@link #LATE_NANOS} late, or -1: block 2
     * of every {@value #RESTART_EVERY}, the rank moving by one each time (every process of a job
     * of processes waits long in its own JVM). Why: a compiled wait that never waited past its spin
     * phase has that branch compiled as a trap (C2's {@code unstable_if}); the caller's first long
     * wait (a slower peer, a large size) would throw that code away and run the call path in the
     * interpreter until it is compiled again, during the first timed calls.
     */
    static int lateRank(int block, int n) {
        return block % RESTART_EVERY == 2 ? (block / RESTART_EVERY) % n : -1;
    }

    /**
     * Whether block {@code block} (0-based) starts with no CUDA context current on the thread: odd
     * blocks. The caller's thread is often not the one that created the communicator (a thread per
     * GPU made by someone else, a thread driving several GPUs, CUDA code of the caller between
     * collectives), and its first collective then finds another context current: that branch of
     * the context check must be compiled, not a trap (see {@link #lateRank}).
     */
    static boolean withoutContext(int block) {
        return (block & 1) == 1;
    }

    /** Whether the numbering restarts after {@code blocks} blocks (when the warm-up goes on). */
    static boolean restartAfter(int blocks) {
        return blocks % RESTART_EVERY == 0;
    }

    // ------------------------------------------------------------------ running it

    /**
     * The warm-up of a communicator of create, split or shrink, on this thread, for at most
     * {@code seconds} (collective: every rank of {@code c} calls it). On failure it throws and the
     * caller aborts and closes {@code c}.
     */
    static void atCreation(NcclCommunicator c, double seconds) {
        run(c, seconds);
    }

    /**
     * The warm-ups of the communicators of {@link NcclCommunicator#initAll}, one thread each, joined.
     * On the first failure the other communicators are aborted (their threads wait in collectives the
     * failed one will never make) and that failure is thrown; the caller then aborts and closes them all.
     */
    static void atCreationAll(List<NcclCommunicator> comms, double seconds) {
        int n = comms.size();
        if (seconds <= 0 || n < 2) {
            return;
        }
        AtomicReference<Throwable> first = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>(n);
        long longest = 0;
        for (NcclCommunicator c : comms) {
            longest = Math.max(longest, c.timeout().toNanos());
            threads.add(Thread.ofPlatform().daemon().name("jccl-nccl-warmup-r" + c.rank()).unstarted(() -> {
                try {
                    run(c, seconds);
                } catch (RuntimeException | Error e) {
                    if (first.compareAndSet(null, e)) {
                        abortAll(comms, c);
                    }
                }
            }));
        }
        threads.forEach(Thread::start);
        // A backstop: every collective of a warm-up has the communicator's deadline and the blocks stop
        // after `seconds`; a warm-up still running well past both is stuck where no deadline reaches.
        long bound = (long) (seconds * 1e9) + Math.min(longest, Long.MAX_VALUE / 4) + 10_000_000_000L;
        long deadline = System.nanoTime() + bound;
        boolean interrupted = false;
        boolean late = false;
        for (Thread t : threads) {
            try {
                long left = deadline - System.nanoTime();
                if (left <= 0 || !t.join(Duration.ofNanos(left))) {
                    late = true;
                    break;
                }
            } catch (InterruptedException e) {
                interrupted = true;
                break;
            }
        }
        if (late || interrupted) {
            abortAll(comms, null);
            for (Thread t : threads) {
                try {
                    if (!t.join(Duration.ofSeconds(10))) {
                        LOG.warn(-1, "the JIT warm-up thread " + t.getName() + " did not end 10 s after its communicator "
                                + "was aborted");
                    }
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
                throw new AbortedException("initAll was interrupted during the JIT warm-up of its " + n
                        + " communicators (JCCL_WARMUP=0 turns it off): they were aborted");
            }
            throw new CollectiveTimeoutException("the JIT warm-up of initAll's " + n + " communicators did not end within "
                    + Duration.ofNanos(bound).toSeconds() + " s (JCCL_WARMUP plus their deadline plus 10 s; "
                    + "JCCL_WARMUP=0 turns it off): they were aborted", List.of());
        }
        Throwable f = first.get();
        if (f instanceof RuntimeException r) {
            throw r;
        }
        if (f instanceof Error e) {
            throw e;
        }
    }

    private static void abortAll(List<NcclCommunicator> comms, NcclCommunicator except) {
        for (NcclCommunicator o : comms) {
            if (o != except) {
                try {
                    o.abort();
                } catch (RuntimeException e) {
                    LOG.warn(o.rank(), "aborting " + o.describe() + " after a failed JIT warm-up failed: " + e);
                }
            }
        }
    }

    /**
     * Warms {@code c}'s paths for at most {@code seconds} (collective: every rank calls it with its
     * new communicator, from the thread that uses it or one thread per communicator of a process).
     * Returns the number of blocks run (0 when off or with one rank).
     */
    static int run(NcclCommunicator c, double seconds) {
        int n = c.size();
        if (seconds <= 0 || n < 2) {
            return 0;
        }
        long t0 = System.nanoTime();
        long limit = (long) (seconds * 1e9);
        long compiled = WarmupSetting.jitActivity();
        boolean monitored = compiled >= 0;
        long lastCompile = initialLastCompile(t0, CALLS.get());
        int blocks = 0;
        Buffers b = null;
        c.warmingUp = true;
        try (Arena arena = Arena.ofConfined()) {
            b = new Buffers(c);
            HostBuffer vote = HostBuffer.allocate(DataType.INT32, 2, arena);
            while (true) {
                long b0 = System.nanoTime();
                long s0 = c.sequenceNumber();
                CustomAllReduce kernels = c.car;
                boolean detach = kernels != null && withoutKernels(blocks + 1);
                if (detach) {
                    // Every rank detaches in the same block, with nothing of theirs in flight (the previous
                    // block's works and vote are complete), so every all-reduce of it runs on NCCL everywhere.
                    c.car = null;
                }
                try {
                    b.block(blocks);
                } finally {
                    if (detach) {
                        c.car = kernels;
                    }
                }
                blocks++;
                CALLS.addAndGet(c.sequenceNumber() - s0 + 1); // with the vote that follows
                long now = System.nanoTime();
                long total = WarmupSetting.jitActivity();
                if (total != compiled) {
                    compiled = total;
                    lastCompile = now;
                }
                vote.segment().setAtIndex(JAVA_INT, 0, WarmupSetting.busy(monitored, now, lastCompile, CALLS.get()) ? 1 : 0);
                vote.segment().setAtIndex(JAVA_INT, 1, now - t0 >= limit ? 1 : 0);
                b.vote.copyFrom(vote);
                c.allReduce(b.vote, b.vote, ReduceOp.MAX);
                b.vote.copyTo(vote);
                int k = blocks;
                LOG.trace(c.rank(), () -> "JIT warm-up block " + k + ": " + (now - b0) / 1000 + " us, " + CALLS.get()
                        + " calls in this JVM");
                if (vote.segment().getAtIndex(JAVA_INT, 0) == 0 || vote.segment().getAtIndex(JAVA_INT, 1) != 0) {
                    break;
                }
                if (restartAfter(blocks)) {
                    c.restartNumbering(); // every rank at the same point, after the vote
                }
            }
            // Every rank's vote is in, so every rank's earlier collectives are complete on its GPU (a
            // stream runs in order): no peer still reads these buffers, and they can go.
            c.lock.lock();
            try {
                c.ensureOpen();
                c.ring.prefillEvents(c.device);
            } finally {
                c.lock.unlock();
            }
            c.restartNumbering();
            Buffers done = b;
            b = null;
            done.close();
        } catch (RuntimeException e) {
            if (b != null) {
                b.retire(); // freed with the communicator's own buffers, after NCCL's teardown
            }
            throw failed(c.describe(), blocks, e);
        } catch (Error e) {
            if (b != null) {
                b.retire();
            }
            throw e;
        } finally {
            c.warmingUp = false;
        }
        c.warmupBlocks = blocks;
        RUNS.incrementAndGet();
        long ms = (System.nanoTime() - t0) / 1_000_000;
        int k = blocks;
        LOG.info(c.rank(), () -> "JIT warm-up: " + k + " blocks in " + ms + " ms (JCCL_WARMUP=0 turns it off)");
        return blocks;
    }

    /**
     * {@code e}, the failure of a warm-up collective in block {@code blocks + 1} on the communicator
     * {@code comm} describes, as a failure of its creation: the same kind, saying so.
     */
    static RuntimeException failed(String comm, int blocks, RuntimeException e) {
        String m = "the JIT warm-up at the creation of " + comm + " failed in block " + (blocks + 1)
                + " (JCCL_WARMUP=0 turns it off): " + e.getMessage();
        if (e instanceof CollectiveTimeoutException t) {
            CollectiveTimeoutException x = new CollectiveTimeoutException(m, t.missingRanks());
            x.initCause(e);
            return x;
        }
        if (e instanceof PeerFailureException p) {
            return new PeerFailureException(p.rank(), m, e);
        }
        if (e instanceof AbortedException) {
            AbortedException x = new AbortedException(m);
            x.initCause(e);
            return x;
        }
        if (e instanceof JcclException) {
            return new JcclException(m, e);
        }
        return e; // not a failure of a collective (a bug): unchanged
    }

    /**
     * The device memory of the warm-up: one allocation sliced into every buffer a block uses, and
     * the vote. Pairs of buffers of each all-reduce count lie one below the other; even blocks send
     * from the lower to the upper, odd ones the other way, so both orders are seen without more
     * memory.
     */
    private static final class Buffers implements AutoCloseable {
        private final NcclCommunicator c;
        private final int n;
        private final boolean pointToPoint;
        private final DeviceBuffer all;
        final DeviceBuffer vote;
        /** [block parity][count index]: inputs, outputs, and the second buffer of an in-place call. */
        private final DeviceBuffer[][] in = new DeviceBuffer[2][];
        private final DeviceBuffer[][] out = new DeviceBuffer[2][];
        private final DeviceBuffer[][] same = new DeviceBuffer[2][];
        /** One rank's part below and above {@link #whole}; the second whole buffer. */
        private final DeviceBuffer partLo, partHi, whole, whole2, wholeMine;
        /** Views of the small pair as other types: bfloat16 / float16 (14 elements) and int32. */
        private final DeviceBuffer[] half = new DeviceBuffer[2], bf16 = new DeviceBuffer[2], bf16Same = new DeviceBuffer[2],
                i32Same = new DeviceBuffer[2];
        /** The same communicator through a withTimeout view of its own deadline. */
        private final Communicator view;
        private final List<NcclWork> works = new ArrayList<>();

        Buffers(NcclCommunicator c) {
            this.c = c;
            this.n = c.size();
            this.pointToPoint = pointToPoint(n);
            long[] counts = allReduceCounts(n);
            int k = counts.length;
            long[] bytes = new long[2 * k + 4];
            for (int i = 0; i < k; i++) {
                bytes[2 * i] = counts[i] * 4;
                bytes[2 * i + 1] = counts[i] * 4;
            }
            bytes[2 * k] = SMALL * 4L;
            bytes[2 * k + 1] = (long) SMALL * n * 4;
            bytes[2 * k + 2] = SMALL * 4L;
            bytes[2 * k + 3] = (long) SMALL * n * 4;
            long[] off = offsets(bytes);
            DeviceBuffer a = c.device.allocate(DataType.UINT8, off[bytes.length]);
            DeviceBuffer v = null;
            try {
                v = c.device.allocate(DataType.INT32, 2);
                a.clear(); // zeros: every sum stays 0, no value ever overflows
            } catch (RuntimeException | Error e) {
                if (v != null) {
                    v.close();
                }
                a.close(); // nothing ran on it yet
                throw e;
            }
            all = a;
            vote = v;
            for (int s = 0; s < 2; s++) {
                in[s] = new DeviceBuffer[k];
                out[s] = new DeviceBuffer[k];
                same[s] = new DeviceBuffer[k];
            }
            for (int i = 0; i < k; i++) {
                DeviceBuffer lo = floats(off[2 * i], counts[i]);
                DeviceBuffer hi = floats(off[2 * i + 1], counts[i]);
                in[0][i] = lo;
                out[0][i] = hi;
                same[0][i] = hi; // in place through the same object
                in[1][i] = hi;
                out[1][i] = lo;
                same[1][i] = lo.slice(0, counts[i]); // in place through another view of the memory
            }
            partLo = floats(off[2 * k], SMALL);
            whole = floats(off[2 * k + 1], (long) SMALL * n);
            partHi = floats(off[2 * k + 2], SMALL);
            whole2 = floats(off[2 * k + 3], (long) SMALL * n);
            wholeMine = whole.slice((long) c.rank() * SMALL, SMALL);
            for (int s = 0; s < 2; s++) {
                half[s] = in[s][0].reinterpret(DataType.FLOAT16);
                bf16[s] = in[s][0].reinterpret(DataType.BFLOAT16);
                bf16Same[s] = s == 0 ? out[s][0].reinterpret(DataType.BFLOAT16) : out[s][0].slice(0, SMALL)
                        .reinterpret(DataType.BFLOAT16);
                i32Same[s] = out[s][0].reinterpret(DataType.INT32);
            }
            view = c.withTimeout(c.timeout());
        }

        private DeviceBuffer floats(long offset, long count) {
            return all.slice(offset, count * 4).reinterpret(DataType.FLOAT32);
        }

        /** Block {@code block} (0-based): about a millisecond of calls once compiled. */
        void block(int block) {
            int s = block & 1;
            int root = block % n;
            DeviceBuffer[] i = in[s];
            DeviceBuffer[] o = out[s];
            DeviceBuffer[] x = same[s];
            ReduceOp sum = ReduceOp.SUM;
            if (withoutContext(block)) {
                CudaDriver.setCurrent(0L); // the first collective makes the device's context current again
            }
            if (lateRank(block, n) == c.rank()) {
                long until = System.nanoTime() + LATE_NANOS; // the others wait long in the first all-reduce
                for (long left = LATE_NANOS; left > 0; left = until - System.nanoTime()) {
                    LockSupport.parkNanos(left);
                }
            }
            for (int r = 0; r < 8; r++) {
                c.allReduce(i[0], o[0], sum);
                c.allReduce(o[0], x[0], sum);
                c.allReduce(i[1], o[1], sum);
                c.allReduce(o[1], x[1], sum);
            }
            for (int k = 2; k < i.length; k++) { // one-shot, then NCCL by the tuner's size limits
                c.allReduce(i[k], o[k], sum);
                c.allReduce(o[k], x[k], sum);
            }
            c.allReduce(bf16[s], o[0].reinterpret(DataType.BFLOAT16), sum);
            c.allReduce(bf16Same[s], bf16Same[s], sum);
            c.allReduce(half[s], o[0].reinterpret(DataType.FLOAT16), sum);
            c.allReduce(i32Same[s], i32Same[s], sum); // a type the kernels do not take: NCCL
            view.allReduce(i[0], o[0], sum);
            DeviceBuffer part = s == 0 ? partLo : partHi; // below the whole buffer, or above it
            c.broadcast(i[0], o[0], root);
            c.broadcast(o[0], x[0], root);
            c.reduce(i[0], o[0], sum, root);
            c.reduce(o[0], x[0], sum, root);
            c.allGather(part, whole);
            c.allGather(wholeMine, whole);
            c.reduceScatter(whole, part, sum);
            c.reduceScatter(whole, wholeMine, sum);
            if (pointToPoint) {
                c.allToAll(s == 0 ? whole : whole2, s == 0 ? whole2 : whole);
                c.allToAll(whole2, whole2); // in place: staged through the communicator's scratch
                c.gather(part, whole2, root);
                c.scatter(whole2, part, root);
            }
            c.barrier();
            // Send/recv: a ring step in one group (as jccl perf sendrecv and nccl-tests issue it), and
            // with an even rank count blocking pairs (even ranks send first, odd ranks receive first).
            if (n > 1) {
                int next = (c.rank() + 1) % n;
                int prev = (c.rank() + n - 1) % n;
                DeviceBuffer other = s == 0 ? partHi : partLo;
                works.clear();
                try (NcclGroup g = NcclGroup.start()) {
                    works.add(c.sendAsync(part, next));
                    works.add(c.recvAsync(other, prev));
                }
                for (NcclWork w : works) {
                    w.await();
                }
                if (n % 2 == 0) {
                    int peer = c.rank() ^ 1;
                    if ((c.rank() & 1) == 0) {
                        c.send(part, peer);
                        c.recv(other, peer);
                    } else {
                        c.recv(other, peer);
                        c.send(part, peer);
                    }
                }
            }
            // Asynchronous calls, awaited before anything else runs.
            works.clear();
            for (int r = 0; r < BURST; r++) {
                works.add(c.allReduceAsync(i[0], o[0], sum));
                works.add(c.allReduceAsync(i[1], o[1], sum));
            }
            works.add(c.allReduceAsync(o[1], sum));
            works.add(c.allReduceAsync(i[0], o[0], sum, c.stream()));
            works.add(c.broadcastAsync(i[0], o[0], root));
            works.add(c.reduceAsync(i[0], o[0], sum, root));
            works.add(c.allGatherAsync(part, whole));
            works.add(c.reduceScatterAsync(whole, part, sum));
            if (pointToPoint) {
                works.add(c.allToAllAsync(s == 0 ? whole2 : whole, s == 0 ? whole : whole2));
            }
            works.add(c.barrierAsync());
            for (NcclWork w : works) {
                w.await();
                w.completeLate(); // the path of a thread that lost the race to complete it (see completeLate)
            }
            works.clear();
        }

        /** Frees the memory: every work on it is complete, on every rank. */
        @Override
        public void close() {
            all.close();
            vote.close();
        }

        /** After a failure: the memory goes when the communicator's own buffers go, after NCCL's teardown. */
        void retire() {
            c.lock.lock();
            try {
                c.retiredScratch.add(all);
                c.retiredScratch.add(vote);
            } finally {
                c.lock.unlock();
            }
        }
    }
}
