package org.jccl.host;

import java.util.Locale;

/**
 * Chooses the all-reduce algorithm by message size and rank count; {@code JCCL_ALGO} forces one.
 * The threshold comes from measurements on 2-16 ranks (docs/BENCHMARKS.md): one-shot reads n
 * times the data but synchronises once, so it wins while the message is small.
 */
public final class Tuner {
    /** The all-reduce algorithms. */
    public enum AllReduceAlgo {
        /** Every rank reduces every slot. */
        ONESHOT,
        /** Reduce-scatter then all-gather through the slots. */
        RSAG
    }

    private final AllReduceAlgo forced;
    private final long oneShotMaxBytes;

    /** A tuner; {@code algo} is the JCCL_ALGO value or null. */
    public Tuner(String algo, long oneShotMaxBytes) {
        this.forced = parse(algo);
        this.oneShotMaxBytes = oneShotMaxBytes;
    }

    /** Reads JCCL_ALGO and JCCL_ONESHOT_MAX_BYTES. */
    public static Tuner fromEnv() {
        String max = System.getenv("JCCL_ONESHOT_MAX_BYTES");
        long m = 32 << 10;
        if (max != null && !max.isBlank()) {
            try {
                m = Long.parseLong(max.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("JCCL_ONESHOT_MAX_BYTES=" + max + " is not a number of bytes");
            }
        }
        return new Tuner(System.getenv("JCCL_ALGO"), m);
    }

    static AllReduceAlgo parse(String algo) {
        if (algo == null || algo.isBlank()) {
            return null;
        }
        return switch (algo.trim().toLowerCase(Locale.ROOT)) {
            case "oneshot", "one-shot", "one_shot" -> AllReduceAlgo.ONESHOT;
            case "rsag", "reducescatter-allgather", "reduce_scatter_all_gather" -> AllReduceAlgo.RSAG;
            default -> throw new IllegalArgumentException("JCCL_ALGO=" + algo
                    + " is not a host engine algorithm: use one of oneshot, rsag (or unset it to let the tuner choose)");
        };
    }

    /** The algorithm for an all-reduce of {@code bytes} over {@code ranks}. */
    public AllReduceAlgo allReduce(long bytes, int ranks) {
        if (forced != null) {
            return forced;
        }
        return ranks <= 2 && bytes <= oneShotMaxBytes * 2 || bytes <= oneShotMaxBytes ? AllReduceAlgo.ONESHOT : AllReduceAlgo.RSAG;
    }
}
