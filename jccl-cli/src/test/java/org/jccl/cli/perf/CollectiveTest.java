package org.jccl.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Counts and bandwidths against nccl-tests' formulas, written out here independently. */
class CollectiveTest {
    private static final double EPS = 1e-12;

    /** nccl-tests' GetBw of each test file: baseBw = count*typesize(*nranks)/1e9/sec, busBw = baseBw*factor. */
    private static double[] ncclTests(Collective c, long paramCount, int typeSize, int n, double sec) {
        double base;
        double factor;
        switch (c) {
            case ALLREDUCE -> {
                base = (double) (paramCount * typeSize) / 1.0E9 / sec;
                factor = ((double) (2 * (n - 1))) / ((double) n);
            }
            case ALLGATHER, REDUCESCATTER, ALLTOALL, GATHER, SCATTER -> {
                base = (double) (paramCount * typeSize * n) / 1.0E9 / sec;
                factor = ((double) (n - 1)) / ((double) n);
            }
            default -> {
                base = (double) (paramCount * typeSize) / 1.0E9 / sec;
                factor = 1;
            }
        }
        return new double[] {base, base * factor};
    }

    @Test
    void bandwidthMatchesNcclTestsForEveryCollectiveAndRankCount() {
        for (Collective c : Collective.values()) {
            for (int n : new int[] {1, 2, 3, 4, 8, 16}) {
                for (long bytes : new long[] {0, 8, 1000, 1 << 20, 100_000_007L}) {
                    for (int ts : new int[] {1, 2, 4, 8}) {
                        Collective.Counts k = c.counts(bytes, ts, n);
                        double sec = 1.234e-4;
                        double[] want = ncclTests(c, k.param(), ts, n, sec);
                        assertEquals(want[0], c.algBw(k, ts, n, sec), EPS * Math.max(1, want[0]), c + " n=" + n);
                        assertEquals(want[1], c.busBw(k, ts, n, sec), EPS * Math.max(1, want[1]), c + " n=" + n);
                    }
                }
            }
        }
    }

    @Test
    void workedExamples() {
        // 1 MiB of floats all-reduced by 4 ranks in 1 ms: 1.048576 GB/s algbw, x 6/4 bus.
        Collective.Counts k = Collective.ALLREDUCE.counts(1 << 20, 4, 4);
        assertEquals(new Collective.Counts(262144, 262144, 262144), k);
        assertEquals(1.048576, Collective.ALLREDUCE.algBw(k, 4, 4, 1e-3), EPS);
        assertEquals(1.572864, Collective.ALLREDUCE.busBw(k, 4, 4, 1e-3), EPS);
        // All-gather: the size is the total; the count column is per rank.
        k = Collective.ALLGATHER.counts(1 << 20, 4, 4);
        assertEquals(new Collective.Counts(65536, 262144, 65536), k);
        assertEquals(1 << 20, k.printedBytes(4));
        assertEquals(1.048576, Collective.ALLGATHER.algBw(k, 4, 4, 1e-3), EPS);
        assertEquals(0.786432, Collective.ALLGATHER.busBw(k, 4, 4, 1e-3), EPS);
        // Broadcast: factor 1.
        k = Collective.BROADCAST.counts(1 << 20, 4, 4);
        assertEquals(Collective.BROADCAST.algBw(k, 4, 4, 1e-3), Collective.BROADCAST.busBw(k, 4, 4, 1e-3), EPS);
    }

    @Test
    void blockedCountsRoundDownToWholeBlocksLikeNcclTests() {
        // 40 bytes of float over 3 ranks: 10 elements, 3 per rank, buffers of 9.
        assertEquals(new Collective.Counts(3, 9, 3), Collective.GATHER.counts(40, 4, 3));
        assertEquals(new Collective.Counts(9, 3, 3), Collective.REDUCESCATTER.counts(40, 4, 3));
        assertEquals(new Collective.Counts(9, 3, 3), Collective.SCATTER.counts(40, 4, 3));
        assertEquals(new Collective.Counts(9, 9, 3), Collective.ALLTOALL.counts(40, 4, 3));
        assertEquals(36, Collective.ALLTOALL.counts(40, 4, 3).printedBytes(4));
        // 8 bytes over 4 ranks of float: no whole element per rank.
        assertEquals(new Collective.Counts(0, 0, 0), Collective.ALLGATHER.counts(8, 4, 4));
        assertEquals(new Collective.Counts(2, 2, 2), Collective.SENDRECV.counts(8, 4, 4));
    }

    @Test
    void rootsAndOps() {
        assertTrue(Collective.BROADCAST.hasRoot() && Collective.REDUCE.hasRoot() && Collective.GATHER.hasRoot()
                && Collective.SCATTER.hasRoot());
        assertTrue(!Collective.ALLREDUCE.hasRoot() && !Collective.SENDRECV.hasRoot());
        assertTrue(Collective.ALLREDUCE.reduces() && Collective.REDUCE.reduces() && Collective.REDUCESCATTER.reduces());
        assertTrue(!Collective.ALLGATHER.reduces() && !Collective.BROADCAST.reduces());
    }

    @Test
    void parsesNamesAndNcclTestsBinaryNames() {
        assertEquals(Collective.ALLREDUCE, Collective.parse("allreduce"));
        assertEquals(Collective.ALLREDUCE, Collective.parse("all_reduce_perf"));
        assertEquals(Collective.REDUCESCATTER, Collective.parse("reduce-scatter"));
        assertEquals(Collective.ALLTOALL, Collective.parse("AllToAll"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Collective.parse("allreduc"));
        assertTrue(e.getMessage().contains("allreduc") && e.getMessage().contains("sendrecv"), e.getMessage());
    }
}
