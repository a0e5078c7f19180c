package org.jccl.cli.perf;

import java.util.Locale;

/**
 * The collectives {@code jccl perf} measures, with nccl-tests' rules for element counts and for
 * algorithm and bus bandwidth.
 *
 * <p>A size {@code S} bytes of type {@code T} gives {@code count = S / sizeof(T)} elements. For the
 * collectives whose buffers hold one block per rank (all-gather, reduce-scatter, all-to-all,
 * gather, scatter) the size is the total: the per-rank count is {@code count / n} and the printed
 * size is the larger of the send and receive buffers, as nccl-tests prints it.
 *
 * <p>Bandwidth (nccl-tests' {@code GetBw}): {@code algbw = bytes / time} where {@code bytes} is the
 * count handed to the collective times the type size, times {@code n} for the blocked
 * collectives; {@code busbw = algbw x factor} with factor {@code 2(n-1)/n} for all-reduce,
 * {@code (n-1)/n} for all-gather, reduce-scatter, all-to-all, gather and scatter, and 1 for
 * broadcast, reduce and send/recv.
 */
public enum Collective {
    /** All-reduce: every rank gets op over ranks. */
    ALLREDUCE,
    /** All-gather: every rank gets every rank's block. */
    ALLGATHER,
    /** Reduce-scatter: rank r gets block r of op over ranks. */
    REDUCESCATTER,
    /** Broadcast from a root. */
    BROADCAST,
    /** Reduce to a root. */
    REDUCE,
    /** All-to-all: block j of rank i goes to block i of rank j. */
    ALLTOALL,
    /** Gather to a root. */
    GATHER,
    /** Scatter from a root. */
    SCATTER,
    /** Each rank sends to rank+1 and receives from rank-1 (a ring shift). */
    SENDRECV;

    private final String cliName = name().toLowerCase(Locale.ROOT);

    /** The name on the command line and in outputs ("allreduce"). */
    public String cliName() {
        return cliName;
    }

    /** Whether the collective takes a reduction operator. */
    public boolean reduces() {
        return this == ALLREDUCE || this == REDUCESCATTER || this == REDUCE;
    }

    /** Whether the collective takes a root rank. */
    public boolean hasRoot() {
        return this == BROADCAST || this == REDUCE || this == GATHER || this == SCATTER;
    }

    /** Whether buffers hold one block per rank (the size is the total over ranks). */
    public boolean blocked() {
        return this == ALLGATHER || this == REDUCESCATTER || this == ALLTOALL || this == GATHER || this == SCATTER;
    }

    /**
     * The element counts of one measurement, nccl-tests' {@code getCollByteCount}.
     *
     * @param bytes the size asked for
     * @param type  element size in bytes
     * @param ranks number of ranks
     */
    public Counts counts(long bytes, int type, int ranks) {
        long count = bytes / type;
        long perRank = count / ranks;
        return switch (this) {
            case ALLREDUCE, BROADCAST, REDUCE, SENDRECV -> new Counts(count, count, count);
            case ALLGATHER, GATHER -> new Counts(perRank, perRank * ranks, perRank);
            case REDUCESCATTER, SCATTER -> new Counts(perRank * ranks, perRank, perRank);
            case ALLTOALL -> new Counts(perRank * ranks, perRank * ranks, perRank);
        };
    }

    /** The bus bandwidth factor for {@code ranks} ranks. */
    public double busFactor(int ranks) {
        return switch (this) {
            case ALLREDUCE -> 2.0 * (ranks - 1) / ranks;
            case BROADCAST, REDUCE, SENDRECV -> 1.0;
            case ALLGATHER, REDUCESCATTER, ALLTOALL, GATHER, SCATTER -> (double) (ranks - 1) / ranks;
        };
    }

    /**
     * Algorithm bandwidth in GB/s (1e9 bytes per second), as nccl-tests: the count handed to the
     * collective ({@link Counts#param()}) times the type size, times the ranks for the blocked
     * collectives, per second.
     */
    public double algBw(Counts counts, int typeSize, int ranks, double seconds) {
        double bytes = (double) counts.param() * typeSize * (blocked() ? ranks : 1);
        return bytes / 1.0e9 / seconds;
    }

    /** Bus bandwidth in GB/s: {@link #algBw} times {@link #busFactor}. */
    public double busBw(Counts counts, int typeSize, int ranks, double seconds) {
        return algBw(counts, typeSize, ranks, seconds) * busFactor(ranks);
    }

    /**
     * Parses a collective name: the names of {@link #cliName()}, nccl-tests' binary names
     * ({@code all_reduce_perf}) and underscores or dashes are accepted.
     *
     * @throws IllegalArgumentException naming the valid names
     */
    public static Collective parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT).replace("_perf", "").replace("_", "").replace("-", "");
        for (Collective c : values()) {
            if (c.cliName.equals(n)) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + name + "': use one of " + names() + " or all");
    }

    /** The valid names, comma separated. */
    public static String names() {
        StringBuilder sb = new StringBuilder();
        for (Collective c : values()) {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append(c.cliName);
        }
        return sb.toString();
    }

    /**
     * Element counts of one measurement.
     *
     * @param send  elements in the send buffer
     * @param recv  elements in the receive buffer
     * @param param the count handed to the collective (per-rank block for the blocked ones)
     */
    public record Counts(long send, long recv, long param) {
        /** The size nccl-tests prints: the larger buffer, in bytes. */
        public long printedBytes(int typeSize) {
            return Math.max(send, recv) * typeSize;
        }
    }
}
