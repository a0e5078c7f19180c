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
 * @param mismatchInCall    every rank of a mismatched call fails in that call with a
 *                          CollectiveMismatchException naming both calls (op, type, count, root,
 *                          collective, send/recv size)
 * @param perCallTimeout    {@code withTimeout} views
 * @param namesMissingRanks a timeout's {@code missingRanks()} names the rank that did not call
 * @param bitwiseIdentical  a float all-reduce gives bitwise the same result on every rank
 */
public record Traits(String name, Set<DataType> types, boolean bitwiseOps, boolean selfP2p, boolean mismatchInCall,
                     boolean perCallTimeout, boolean namesMissingRanks, boolean bitwiseIdentical) {

    /** The host engine: shared memory, TCP and hierarchical alike. */
    public static Traits host(String transport) {
        return new Traits("host/" + transport, EnumSet.allOf(DataType.class), true, true, true, true, true, true);
    }

    /**
     * The MPI backend (jccl-mpi, Open MPI under {@code mpirun}). Every type (MPI's own reductions,
     * user operators for FLOAT16, BFLOAT16 and FP8) and the bitwise operators; self send/recv;
     * {@code withTimeout} views. What it does not promise, and why:
     * <ul>
     * <li>{@code mismatchInCall} false: MPI does not check that ranks call the same collective
     *     with the same op, type, count and root (it hangs, moves the wrong bytes or fails later
     *     with a truncation error), and jccl-mpi adds no fingerprint exchange (no store);</li>
     * <li>{@code namesMissingRanks} false: MPI has no store and cannot tell who did not call, so
     *     a timeout's {@code missingRanks()} is empty (the message still names the collective);</li>
     * </ul>
     */
    public static Traits mpi() {
        return new Traits("mpi", EnumSet.allOf(DataType.class), true, true, false, true, false, true);
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

    /** A copy with another name (e.g. "host/shm 3 procs"). */
    public Traits named(String n) {
        return new Traits(n, types, bitwiseOps, selfP2p, mismatchInCall, perCallTimeout, namesMissingRanks, bitwiseIdentical);
    }
}
