package org.jccl.kit;

import java.util.EnumSet;
import java.util.Set;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * What differs between backends, in one place: the kit asks these instead of skipping cases here
 * and there. docs/CONFORMANCE.md shows the same table.
 *
 * @param name              backend as reported in failures
 * @param types             data types the backend reduces and moves
 * @param bitwiseOps        BAND / BOR / BXOR on integer types
 * @param selfP2p           send to and receive from this rank itself (async pair)
 * @param recvBeforeSend    async receives may be posted before the sends that feed them, on every
 *                          rank at once, without a group
 * @param mismatchesInCall  the disagreements for which every rank of the call fails in that call
 *                          with a CollectiveMismatchException naming both sides (the others may
 *                          return normally and fail in a later call, or hang until the deadline)
 * @param mismatchesByNextCall the disagreements that fail, at the latest, the next collective of
 *                          every rank that returned normally (no silent divergence)
 * @param perCallTimeout    {@code withTimeout} views
 * @param namesMissingRanks a timeout's {@code missingRanks()} names the rank that did not call
 * @param bitwiseIdentical  a float all-reduce gives bitwise the same result on every rank
 * @param shrink            {@code shrink(Set)}: the survivors form a communicator without the
 *                          excluded ranks, which do not call it
 */
public record Traits(String name, Set<DataType> types, boolean bitwiseOps, boolean selfP2p, boolean recvBeforeSend, Set<Mismatch> mismatchesInCall, Set<Mismatch> mismatchesByNextCall,
                     boolean perCallTimeout, boolean namesMissingRanks, boolean bitwiseIdentical, boolean shrink) {

    /** A disagreement between the ranks of one call (the kit's errors.mismatch.* cases). */
    public enum Mismatch {
        /** Reduction operator. */
        OP,
        /** Element count. */
        COUNT,
        /** Data type. */
        TYPE,
        /** Broadcast root, small message (8 elements). */
        ROOT_SMALL,
        /**
         * Broadcast root, small message (8 elements), where a rank names as root a rank that is
         * itself a receiver: rank 0 names root 1, the others root 2 (with 2 ranks: rank 1 names
         * root 0, so each waits for the other).
         */
        ROOT_CHAIN,
        /** Scatter root, small message (8 elements per rank): rank 0 names root 0, the others root 1. */
        SCATTER_ROOT,
        /** Gather root, small message (8 elements per rank): rank 0 names root 0, the others root 1. */
        GATHER_ROOT,
        /** Broadcast root, large message (300 007 elements). */
        ROOT_LARGE,
        /** A small broadcast on one rank, an all-reduce on the others. */
        COLLECTIVE,
        /**
         * Reduce root, small message (8 elements): rank 0 names root 0, the others root 1. Over
         * shared memory the ranks that act as root fail in the call, the others (which post
         * their input and return) at their next collective.
         */
        REDUCE_ROOT,
        /** A send and its receive of different sizes. */
        SEND_RECV_SIZE
    }

    /**
     * The host engine on {@code transport} ("shm", "tcp" or "hier"), with {@code JCCL_CHECK=1}
     * ({@code check}) or without. Shared memory catches every disagreement in the call except where
     * a small rooted call is eager (a small broadcast's or scatter's root and a small reduce's or gather's non-roots return
     * once their data is posted, and fail at their next collective; with {@code JCCL_CHECK=1} they
     * wait and fail in the call too). Over TCP a
     * small broadcast's root receives nothing, so a disagreement about the root or the collective
     * is caught in the call only with {@code JCCL_CHECK=1} (else by the next call); hierarchical
     * adds the large broadcast's root (a rank of the root's host can finish before the hosts
     * compare). See docs/RELIABILITY.md.
     */
    public static Traits host(String transport, boolean check) {
        Set<Mismatch> m = EnumSet.allOf(Mismatch.class);
        Set<Mismatch> next = EnumSet.allOf(Mismatch.class);
        if (!check) {
            // Eager small rooted calls: a small reduce's or gather's non-roots and a small broadcast's or scatter's root
            // return once their data is posted; they learn a disagreement at their next collective.
            m.remove(Mismatch.REDUCE_ROOT);
            m.remove(Mismatch.GATHER_ROOT);
            m.remove(Mismatch.ROOT_SMALL);
            m.remove(Mismatch.ROOT_CHAIN);
            m.remove(Mismatch.SCATTER_ROOT);
            m.remove(Mismatch.COLLECTIVE);
        }
        if (!check && (transport.equals("tcp") || transport.equals("hier"))) {
            // Not promised without JCCL_CHECK where ranks talk TCP: a rank that sends to a root
            // only it names returns normally, and the roots wait until it closes or their deadline.
            next.remove(Mismatch.REDUCE_ROOT);
            // a root waits for blocks that went elsewhere, until its deadline (between hosts too: the
            // kit's 10 s views would make every try cost that)
            next.remove(Mismatch.GATHER_ROOT);
            // two ranks that each name the other the root both wait to receive (a receiver sends
            // nothing over TCP), until their deadline (at 3 and 4 ranks it fails at once)
            next.remove(Mismatch.ROOT_CHAIN);
            m.removeAll(EnumSet.of(Mismatch.ROOT_SMALL, Mismatch.ROOT_CHAIN, Mismatch.SCATTER_ROOT, Mismatch.COLLECTIVE));
            if (transport.equals("hier")) {
                m.remove(Mismatch.ROOT_LARGE);
            }
        }
        return new Traits("host/" + transport + (check ? "+JCCL_CHECK" : ""), EnumSet.allOf(DataType.class), true, true,
                true, m, next, true, true, true, true);
    }

    /**
     * The MPI backend (jccl-mpi, Open MPI under {@code mpirun}). Every type (MPI's own reductions,
     * user operators for FLOAT16, BFLOAT16 and FP8) and the bitwise operators; self send/recv;
     * {@code withTimeout} views. What it does not promise, and why:
     * <ul>
     * <li>{@code mismatchesInCall} none: MPI does not check that ranks call the same collective
     *     with the same op, type, count and root (it hangs, moves the wrong bytes or fails later
     *     with a truncation error), and jccl-mpi adds no fingerprint exchange (no store);</li>
     * <li>{@code namesMissingRanks} false: MPI has no store and cannot tell who did not call, so
     *     a timeout's {@code missingRanks()} is empty (the message still names the collective);</li>
     * <li>{@code shrink} false: Open MPI 4 has no ULFM in its default build, and jccl-mpi has no
     *     store to agree on the survivors (create a new communicator with MPI_Comm_split);</li>
     * </ul>
     */
    public static Traits mpi() {
        return new Traits("mpi", EnumSet.allOf(DataType.class), true, true, true, EnumSet.noneOf(Mismatch.class), EnumSet.noneOf(Mismatch.class), true, false, true, false);
    }

    /**
     * The NCCL backend (jccl-cuda, one GPU per rank, communicators from {@code Jccl.init} with a
     * store). Every type NCCL reduces (all twelve; FP8 only where {@code fp8}: sm_90+ and NCCL
     * 2.24+, {@code CudaDevice.supportsFp8()}); {@code withTimeout} views (the timeout aborts the
     * case's own split communicator); a timeout names the missing rank (learned through the
     * store); the same all-reduce result on every rank. What it does not promise, and why:
     * <ul>
     * <li>{@code bitwiseOps} false: NCCL has no BAND / BOR / BXOR (jccl refuses them with an
     *     IllegalArgumentException);</li>
     * <li>{@code selfP2p} false: NCCL completes a send to self only together with its receive in
     *     one group (NcclGroup); jccl refuses an ungrouped one, and the kit posts the two as
     *     separate async calls;</li>
     * <li>{@code recvBeforeSend} false: NCCL runs ungrouped sends and receives in stream order, so a
     *     receive posted before the send that feeds it blocks its stream (on every rank at once: a
     *     deadlock, until the deadline). Post both ends in one {@code NcclGroup}, as with NCCL
     *     itself;</li>
     * <li>{@code mismatchesInCall} none unless {@code jcclCheck}: NCCL cannot tell that ranks called
     *     different collectives (it hangs or moves wrong bytes). With {@code JCCL_CHECK=1} jccl
     *     compares every collective's fingerprint through the store and fails all ranks in the
     *     call, but send/recv sizes are not checked.</li>
     * </ul>
     */
    public static Traits nccl(boolean fp8, boolean jcclCheck) {
        Set<DataType> types = EnumSet.allOf(DataType.class);
        if (!fp8) {
            types.removeAll(EnumSet.of(DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2));
        }
        Set<Mismatch> m = jcclCheck ? EnumSet.complementOf(EnumSet.of(Mismatch.SEND_RECV_SIZE)) : EnumSet.noneOf(Mismatch.class);
        return new Traits(jcclCheck ? "nccl+JCCL_CHECK" : "nccl", types, false, false, false, m, m, true, true, true, true);
    }

    /** The operators the kit runs on {@code t} with this backend. */
    public java.util.List<ReduceOp> ops(DataType t) {
        java.util.List<ReduceOp> ops = new java.util.ArrayList<>(java.util.List.of(ReduceOp.SUM, ReduceOp.PROD,
                ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG, ReduceOp.preMulSum(2)));
        if (t.isInteger() && bitwiseOps) {
            ops.addAll(java.util.List.of(ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR));
        }
        return ops;
    }

    /**
     * A copy for a communicator formed without a jccl store (e.g. {@code TorchNccl}'s, whose other
     * ranks may be Python ones): a timeout cannot name the rank that did not call.
     */
    public Traits withoutStore() {
        return new Traits(name, types, bitwiseOps, selfP2p, recvBeforeSend, mismatchesInCall, mismatchesByNextCall, perCallTimeout, false, bitwiseIdentical, shrink);
    }

    /** A copy with another name (e.g. "host/shm 3 procs"). */
    public Traits named(String n) {
        return new Traits(n, types, bitwiseOps, selfP2p, recvBeforeSend, mismatchesInCall, mismatchesByNextCall, perCallTimeout, namesMissingRanks, bitwiseIdentical, shrink);
    }
}
