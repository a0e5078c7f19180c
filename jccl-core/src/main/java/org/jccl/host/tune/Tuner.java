package org.jccl.host.tune;

import java.util.Locale;

/**
 * Chooses the all-reduce algorithm by message size and rank count; {@code JCCL_ALGO} forces one.
 *
 * <p>Over shared memory ({@link #allReduce}): one-shot (every rank reduces every slot) reads n
 * times the data but synchronises once; reduce-scatter + all-gather reads about twice the data
 * and synchronises twice. At steady state reduce-scatter + all-gather wins from 1 KiB wherever the
 * ranks have cores to spare (on a 32-core host at 4 KiB: 2.0 / 4.2 / 4.9 / 6.2 us on 2 / 4 / 8 /
 * 16 ranks against one-shot's 2.4 / 7.6 / 9.4 / 16 us). With 3 or more ranks one-shot keeps
 * {@value #ONESHOT_MAX_BYTES_MANY} bytes and less; the JIT warm-up at creation runs one-shot at
 * that top size as well as the reduce-scatter step's sizes, so that the first calls of each run
 * compiled code (with a 32 KiB limit and the warm-up's mid size one-shot, lowering the limit alone
 * made one-shot's first calls 10-1000x slower: docs/BENCHMARKS.md, "a lower one-shot limit").
 * Two ranks keep one-shot to {@value #ONESHOT_MAX_BYTES} bytes, {@value #ONESHOT_MAX_BYTES_FEW_CPUS}
 * with fewer than two CPUs each: on a 2-core machine the second synchronisation costs more than
 * the reading saves (64 KiB: 12 us against 26). {@code JCCL_ONESHOT_MAX_BYTES} replaces these
 * limits with one for every rank count.
 *
 * <p>Over TCP ({@link #tcpAllReduce}): one-shot up to {@value #TCP_ONESHOT_MAX_BYTES} bytes ({@value
 * #TCP_ONESHOT_MAX_BYTES_2} with 2 ranks: it sends no more than the others then), recursive halving-doubling up
 * to {@value #TCP_RHD_MAX_BYTES} bytes on more than 2 ranks of distinct hosts (2 log2 n rounds
 * instead of the ring's 2(n-1)), the pipelined ring above (and whenever several ranks share a
 * host, where ring neighbours mostly talk over loopback). A forced {@code rsag} means the ring over
 * TCP; a forced {@code ring} or {@code rhd} means {@code rsag} over shared memory.
 */
public final class Tuner {
    /** The all-reduce algorithms. */
    public enum AllReduceAlgo {
        /** Every rank reduces every slot. */
        ONESHOT,
        /** Reduce-scatter then all-gather through the slots. */
        RSAG,
        /** TCP: pipelined ring (reduce-scatter then all-gather around the ring). */
        RING,
        /** TCP: recursive halving-doubling (Rabenseifner). */
        RHD
    }

    /** Largest shared-memory all-reduce the tuner gives one-shot with 2 ranks on fewer than 4 CPUs. */
    public static final long ONESHOT_MAX_BYTES_FEW_CPUS = 64 << 10;
    /** Largest shared-memory all-reduce the tuner gives one-shot with 2 ranks. */
    public static final long ONESHOT_MAX_BYTES = 32 << 10;
    /**
     * Largest shared-memory all-reduce the tuner gives one-shot with 3 or more ranks: from 2 KiB
     * the reduce-scatter step took 0.24-0.68x one-shot's time at 4-16 ranks (32 KiB at 16 ranks: 20
     * us against 84), provided the JIT warm-up runs both algorithms at the sizes each gets.
     */
    public static final long ONESHOT_MAX_BYTES_MANY = 1 << 10;

    /** Largest TCP all-reduce the tuner sends one-shot (more than 2 ranks). */
    public static final long TCP_ONESHOT_MAX_BYTES = 16 << 10;
    /**
     * Largest TCP all-reduce the tuner sends one-shot with 2 ranks: it sends as many bytes as the
     * ring then (the whole vector each way) in one step instead of two dependent ones (measured
     * on 2 cores over veth at 128 KiB: 30-42 us against 42-54 us for the ring; the ring wins from
     * 256 KiB, where one-shot's reduction of the whole vector costs more than the step saves).
     */
    public static final long TCP_ONESHOT_MAX_BYTES_2 = 128 << 10;
    /** Largest TCP all-reduce the tuner gives to recursive halving-doubling. */
    public static final long TCP_RHD_MAX_BYTES = 1 << 20;

    private final AllReduceAlgo forced;
    private final long oneShotMaxBytes;
    private final int cpus;

    /**
     * A tuner; {@code algo} is the JCCL_ALGO value or null, {@code oneShotMaxBytes} the largest
     * shared-memory one-shot all-reduce at any rank count, or -1 for the measured limits.
     */
    public Tuner(String algo, long oneShotMaxBytes) {
        this(algo, oneShotMaxBytes, org.jccl.internal.Affinity.cpus());
    }

    /** A tuner for a machine of {@code cpus} CPUs (the others count this JVM's). */
    public Tuner(String algo, long oneShotMaxBytes, int cpus) {
        this.forced = parse(algo);
        this.oneShotMaxBytes = oneShotMaxBytes;
        this.cpus = cpus;
    }

    /** Reads JCCL_ALGO and JCCL_ONESHOT_MAX_BYTES. */
    public static Tuner fromEnv() {
        String max = org.jccl.internal.Settings.get("JCCL_ONESHOT_MAX_BYTES");
        long m = -1;
        if (max != null && !max.isBlank()) {
            try {
                m = Long.parseLong(max.trim());
            } catch (NumberFormatException e) {
                throw badOneShotMax(max);
            }
            if (m < 0) {
                throw badOneShotMax(max);
            }
        }
        return new Tuner(org.jccl.internal.Settings.get("JCCL_ALGO"), m);
    }

    private static IllegalArgumentException badOneShotMax(String value) {
        return new IllegalArgumentException("JCCL_ONESHOT_MAX_BYTES=" + value + " is not a number of bytes >= 0 "
                + "(unset it for the measured limits by rank count)");
    }

    static AllReduceAlgo parse(String algo) {
        if (algo == null || algo.isBlank()) {
            return null;
        }
        return switch (algo.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> null; // as on GPU communicators: the tuner chooses
            case "oneshot", "one-shot", "one_shot" -> AllReduceAlgo.ONESHOT;
            case "rsag", "reducescatter-allgather", "reduce_scatter_all_gather" -> AllReduceAlgo.RSAG;
            case "ring" -> AllReduceAlgo.RING;
            case "rhd", "halving-doubling", "recursive-halving-doubling" -> AllReduceAlgo.RHD;
            default -> throw new IllegalArgumentException("JCCL_ALGO=" + algo
                    + " is not a host engine algorithm: use one of oneshot, rsag (shared memory), ring, rhd (TCP) "
                    + "(or auto, or unset it, to let the tuner choose)");
        };
    }

    /** The algorithm for an all-reduce of {@code bytes} over {@code ranks}. */
    public AllReduceAlgo allReduce(long bytes, int ranks) {
        if (forced != null) {
            return forced;
        }
        return bytes <= oneShotMaxBytes(ranks) ? AllReduceAlgo.ONESHOT : AllReduceAlgo.RSAG;
    }

    /** The largest shared-memory all-reduce (bytes) that goes one-shot over {@code ranks} unless JCCL_ALGO forces one. */
    public long oneShotMaxBytes(int ranks) {
        return oneShotMaxBytes >= 0 ? oneShotMaxBytes
                : ranks <= 2 ? (cpus < 2 * ranks ? ONESHOT_MAX_BYTES_FEW_CPUS : ONESHOT_MAX_BYTES) : ONESHOT_MAX_BYTES_MANY;
    }

    /**
     * Largest total of the ranks' inputs (bytes x ranks) a shared-memory reduce of 3 or more ranks
     * gives one-shot.
     */
    public static final long REDUCE_ONESHOT_MAX_TOTAL_BYTES = 4 << 10;

    /** {@link #REDUCE_ONESHOT_MAX_TOTAL_BYTES} for 2 ranks. */
    public static final long REDUCE_ONESHOT_MAX_TOTAL_BYTES_2 = 128 << 10;

    /**
     * From this many bytes a rank, a 2-rank shared-memory reduce goes one-shot again: its chunks
     * pipeline (the other rank copies chunk c + 1 into the ring while the root reduces chunk c), and
     * the root reads the other's input once. Measured (docs/BENCHMARKS.md, "reduce on 2 ranks"):
     * 1.3-1.5x faster than the reduce-scatter step from 1 MiB on a 16-core host and on a 2-core VM,
     * slower at 256 KiB (one ring entry: nothing to pipeline).
     */
    public static final long REDUCE_ONESHOT_MIN_BYTES_2 = 1 << 20;

    /**
     * Whether a shared-memory reduce of {@code bytes} per rank over {@code ranks} goes one-shot
     * (the root reduces every rank's input alone; the others post and return) rather than through
     * the reduce-scatter step: while the root reads at most {@value #REDUCE_ONESHOT_MAX_TOTAL_BYTES}
     * bytes in all ({@value #REDUCE_ONESHOT_MAX_TOTAL_BYTES_2} with 2 ranks). Measured on a
     * 32-core host at 4, 8 and 16 ranks (docs/BENCHMARKS.md, "reduce: one-shot or the
     * reduce-scatter step"): one-shot wins at 256 B a rank, ties at 1 KiB, and from 4 KiB the root
     * alone reading every rank's input (lines the other cores just wrote) takes 1.3-2x the
     * reduce-scatter step, where every rank reduces a part. 2 ranks: one-shot up to 64 KiB a rank
     * and from {@value #REDUCE_ONESHOT_MIN_BYTES_2} bytes (measured on a 16-core host and a 2-core
     * VM: 64 KiB 1.4x faster, 256 KiB 0.85x, 1-16 MiB 1.3-1.5x). JCCL_ALGO=oneshot or rsag forces
     * either.
     */
    public boolean reduceOneShot(long bytes, int ranks) {
        if (forced == AllReduceAlgo.ONESHOT || forced == AllReduceAlgo.RSAG) {
            return forced == AllReduceAlgo.ONESHOT;
        }
        if (ranks == 2 && bytes >= REDUCE_ONESHOT_MIN_BYTES_2) {
            return true;
        }
        long max = ranks <= 2 ? REDUCE_ONESHOT_MAX_TOTAL_BYTES_2 : REDUCE_ONESHOT_MAX_TOTAL_BYTES;
        return bytes <= max / Math.max(1, ranks);
    }

    /**
     * The algorithm for a TCP all-reduce of {@code bytes} over {@code ranks} ranks on {@code hosts}
     * hosts: {@link AllReduceAlgo#ONESHOT}, {@link AllReduceAlgo#RING} or {@link AllReduceAlgo#RHD}.
     */
    public AllReduceAlgo tcpAllReduce(long bytes, int ranks, int hosts) {
        if (forced != null) {
            return forced == AllReduceAlgo.ONESHOT ? AllReduceAlgo.ONESHOT
                    : forced == AllReduceAlgo.RHD ? AllReduceAlgo.RHD : AllReduceAlgo.RING;
        }
        if (bytes <= (ranks <= 2 ? TCP_ONESHOT_MAX_BYTES_2 : TCP_ONESHOT_MAX_BYTES)) {
            return AllReduceAlgo.ONESHOT;
        }
        if (ranks > 2 && bytes <= TCP_RHD_MAX_BYTES && hosts >= ranks) {
            return AllReduceAlgo.RHD;
        }
        return AllReduceAlgo.RING;
    }
}
