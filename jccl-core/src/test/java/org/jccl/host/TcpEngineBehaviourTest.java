package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;

/**
 * {@link HostEngineBehaviourTest} (send/recv in any order and to itself, mismatches, timeouts
 * naming the late rank, abort, split, async order, bad input) with every pair of ranks over TCP
 * ({@code jccl.transport=tcp}).
 */
@org.junit.jupiter.api.extension.ExtendWith(OverTcp.class)
class TcpEngineBehaviourTest extends HostEngineBehaviourTest {

    /** Two ranks that both believe they are the root of a large (pipelined) broadcast or a scatter never pass silently. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"chain broadcast", "scatter"})
    void twoRootsOfARootedCollectiveAreAMismatch(String kind) throws Exception {
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(10), comm -> {
            int root = comm.rank();
            try {
                if (kind.equals("scatter")) {
                    comm.scatter(HostBuffer.of(new float[16]), HostBuffer.of(new float[8]), root);
                } else {
                    comm.broadcast(HostBuffer.of(new float[1 << 20]), root);
                }
                return "no error";
            } catch (org.jccl.JcclException e) {
                return e;
            }
        });
        assertTrue(out.stream().anyMatch(o -> o instanceof org.jccl.CollectiveMismatchException), out::toString);
        for (Object o : out) {
            org.junit.jupiter.api.Assertions.assertInstanceOf(org.jccl.JcclException.class, o, String.valueOf(o));
        }
    }

    /** Names TCP in the times to error asserted (the figures are HostEngineBehaviourTest's: docs/RELIABILITY.md covers both). */
    @Override
    String transport() {
        return "tcp";
    }

    /**
     * A small broadcast whose ranks all name themselves the root: without JCCL_CHECK each keeps
     * its own data and the next collective fails on every rank naming both calls; with {@code
     * jccl.check=1} the broadcast itself fails.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void smallBroadcastWithEveryRankItsOwnRootFailsThenOrInTheNextCall(boolean check) throws Exception {
        System.setProperty("jccl.check", check ? "1" : "0");
        try {
            double[] secs = new double[3];
            List<Object> out = ThreadRanks.run(3, Duration.ofSeconds(10), comm -> {
                float[] mine = {comm.rank() + 1, comm.rank() + 2};
                String phase = "broadcast";
                long t0 = System.nanoTime();
                try {
                    comm.broadcast(HostBuffer.of(mine), comm.rank());
                    phase = "allReduce";
                    t0 = System.nanoTime();
                    comm.allReduce(HostBuffer.of(new float[4]), ReduceOp.SUM);
                    return "no error";
                } catch (org.jccl.JcclException e) {
                    secs[comm.rank()] = (System.nanoTime() - t0) / 1e9; // of the call that failed
                    // a rank that named itself the root keeps its own data whatever happened
                    assertTrue(mine[0] == comm.rank() + 1 && mine[1] == comm.rank() + 2, java.util.Arrays.toString(mine));
                    return phase + ": " + e.getClass().getSimpleName() + ": " + e.getMessage();
                }
            });
            System.out.println("RELIABILITY every rank its own root, check=" + check + ": " + out);
            for (int r = 0; r < 3; r++) {
                org.jccl.bootstrap.TimeToError.assertWithin("every rank its own root, check=" + check
                        + " (the failing call, from its start)", r, secs[r], immediateSecs());
            }
            String expected = check ? "broadcast: " : "allReduce: ";
            for (Object o : out) {
                assertTrue(String.valueOf(o).startsWith(expected), out::toString);
            }
            assertTrue(out.stream().anyMatch(o -> String.valueOf(o).contains("CollectiveMismatchException")
                    && String.valueOf(o).contains("broadcast #")), out::toString);
        } finally {
            System.clearProperty("jccl.check");
        }
    }

    /**
     * Rank 0 broadcasts 8 floats from itself, ranks 1 to 3 from rank 1 (binomial tree: rank 1
     * sends to 2 and 3, rank 3 forwards to 0; rank 0 sends to 1 and 2). Nobody has to see the
     * disagreement in the broadcast, and rank 3 is the one rank no stale frame goes to. Then every
     * rank all-reduces. The start times make the worst order certain: ranks 1 and 2 go first (their
     * all-reduce frames leave before rank 0's stale broadcast frames reach them), rank 0 300 ms
     * later (its all-reduce frames leave before rank 3's stale frame reaches it), rank 3 50 ms after
     * rank 0, when every frame it needs lies well-formed in its sockets and ranks 1 and 2, which
     * found rank 0's stale frames, still look for rank 0's ABORT (0.1 s) before they fail. Without
     * the frames' PREVIOUS word (the sender's previous collective) rank 3 returns normally from
     * both calls; with it, every rank fails.
     */
    @Test
    void rootDisagreementFailsTheNextAllReduceOnEveryRankEvenOneWithoutStaleFrames() throws Exception {
        List<Object> out = ThreadRanks.run(4, Duration.ofSeconds(20), comm -> {
            Thread.sleep(comm.rank() == 0 ? 300 : comm.rank() == 3 ? 350 : 0);
            String phase = "broadcast";
            try {
                comm.broadcast(HostBuffer.of(new float[8]), comm.rank() == 0 ? 0 : 1);
                phase = "allReduce";
                float[] x = {1, 2, 3, 4};
                comm.withTimeout(Duration.ofSeconds(5)).allReduce(HostBuffer.of(x), ReduceOp.SUM);
                return "no error (" + java.util.Arrays.toString(x) + ")";
            } catch (org.jccl.JcclException e) {
                return phase + ": " + e;
            }
        });
        System.out.println("RELIABILITY root disagreement, rank 3 last: " + out);
        for (int r = 0; r < 4; r++) {
            String o = String.valueOf(out.get(r));
            assertTrue(!o.startsWith("no error") && o.contains("CollectiveMismatchException"),
                    "rank " + r + " did not fail the broadcast or the all-reduce after it with a mismatch: " + out);
        }
    }

    /** Over TCP too: no allocation per blocking collective once warm, small (one-shot) and large (ring). */
    @Override
    @Test
    void blockingCollectivesAllocateNothingAfterWarmUp() throws Exception {
        assertNoAllocationAfterWarmUp(3000, 500, true);
    }
}
