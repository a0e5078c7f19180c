package org.jccl.cli.perf;

import java.util.List;
import java.util.Objects;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * What one {@code jccl perf} run measures (the nccl-tests flags, parsed and checked).
 *
 * @param collectives collectives, in order
 * @param minBytes    first size (-b)
 * @param maxBytes    last size (-e)
 * @param stepBytes   increment (-i), used when {@code stepFactor <= 1}
 * @param stepFactor  factor (-f); 1 for an increment sweep
 * @param iters       timed iterations per size (-n)
 * @param warmup      warm-up iterations at the largest and the smallest size (-w)
 * @param check       whether to check results (-c 1)
 * @param ops         operators of the reducing collectives (-o)
 * @param types       data types (-d)
 * @param root        root rank (-r), or {@link #ALL_ROOTS}
 * @param blocking    blocking calls one after another, no barrier between (-z 1), else issue all iterations asynchronously
 * @param seed        seed of the check data
 * @param graphLaunches CUDA graph launches (-G): the {@code iters} timed iterations are captured into one
 *                    graph, launched this many times, and the time is per iteration; 0: no graph
 */
public record PerfConfig(List<Collective> collectives, long minBytes, long maxBytes, long stepBytes, long stepFactor,
                         int iters, int warmup, boolean check, List<ReduceOp> ops, List<DataType> types, int root,
                         boolean blocking, long seed, int graphLaunches) {

    /** {@link #root()} meaning every rank in turn (-r all). */
    public static final int ALL_ROOTS = -1;

    /** Validates and copies the lists. */
    public PerfConfig {
        collectives = List.copyOf(Objects.requireNonNull(collectives, "collectives"));
        ops = List.copyOf(Objects.requireNonNull(ops, "ops"));
        types = List.copyOf(Objects.requireNonNull(types, "types"));
        if (collectives.isEmpty() || ops.isEmpty() || types.isEmpty()) {
            throw new IllegalArgumentException("collectives, ops and types must each name at least one");
        }
        if (iters < 1) {
            throw new IllegalArgumentException("-n is " + iters + ": give at least 1 iteration");
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("-w is " + warmup + ": give 0 or more warm-up iterations");
        }
        if (graphLaunches < 0) {
            throw new IllegalArgumentException("-G is " + graphLaunches + ": give 0 (no CUDA graph) or more launches");
        }
        if (graphLaunches > 0 && blocking) {
            throw new IllegalArgumentException("-G " + graphLaunches + " with -z 1: blocking calls cannot be captured "
                    + "into a CUDA graph; use -z 0");
        }
        if (root < ALL_ROOTS) {
            throw new IllegalArgumentException("-r is " + root + ": give a rank >= 0 or 'all'");
        }
        Sizes.sweep(minBytes, maxBytes, stepBytes, stepFactor);
    }

    /** Without CUDA graphs (-G 0). */
    public PerfConfig(List<Collective> collectives, long minBytes, long maxBytes, long stepBytes, long stepFactor,
                      int iters, int warmup, boolean check, List<ReduceOp> ops, List<DataType> types, int root,
                      boolean blocking, long seed) {
        this(collectives, minBytes, maxBytes, stepBytes, stepFactor, iters, warmup, check, ops, types, root, blocking,
                seed, 0);
    }

    /** The sizes of the sweep. */
    public List<Long> sizes() {
        return Sizes.sweep(minBytes, maxBytes, stepBytes, stepFactor);
    }

    /** The roots to measure for {@code c} on {@code ranks} ranks (-1 alone for collectives without a root). */
    public int[] roots(Collective c, int ranks) {
        if (!c.hasRoot()) {
            return new int[] {-1};
        }
        if (root == ALL_ROOTS) {
            int[] all = new int[ranks];
            for (int i = 0; i < ranks; i++) {
                all[i] = i;
            }
            return all;
        }
        return new int[] {root};
    }

    /** The operators to measure for {@code c} (a single null for collectives that do not reduce). */
    public List<ReduceOp> opsFor(Collective c) {
        return c.reduces() ? ops : java.util.Collections.singletonList(null);
    }
}
