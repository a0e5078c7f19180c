package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.host.hier.HierarchicalCommunicator;
import org.jccl.host.tcp.TcpCommunicator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Ranks as threads placed on pretend hosts (host ids given per rank to the backend's factory):
 * shared memory inside a host, TCP between hosts. Every collective and send/recv checked against
 * {@link Reference} on even, uneven and interleaved placements, the communicator kind chosen for
 * each placement, split across and inside hosts, and a rank that never arrives.
 */
class HierarchicalTest {

    /** Runs one thread per rank; rank r claims host {@code hosts[r]}. */
    static <T> List<T> run(String[] hosts, Duration timeout, ThreadRanks.RankBody<T> body) throws Exception {
        return HostWorlds.run(hosts, "auto", timeout, Duration.ofSeconds(240), body::run);
    }

    static String[] placement(int which) {
        return switch (which) {
            case 0 -> new String[] {"a", "a", "b", "b"};      // 2 hosts x 2 ranks
            case 1 -> new String[] {"a", "b", "a"};           // interleaved, uneven: host a has ranks 0 and 2
            case 2 -> new String[] {"a", "a", "a", "b", "c"}; // 3 + 1 + 1
            default -> new String[] {"a", "b", "c"};          // one rank per host: plain TCP
        };
    }

    @ParameterizedTest(name = "placement {0}")
    @ValueSource(ints = {0, 1, 2, 3})
    void everyCollectiveMatchesTheReference(int which) throws Exception {
        String[] hosts = placement(which);
        List<List<String>> out = run(hosts, Duration.ofSeconds(60), comm -> {
            List<String> failures = RankMain.check(comm);
            comm.barrier();
            failures.add(0, comm.getClass().getSimpleName());
            return failures;
        });
        String kind = which == 3 ? "TcpCommunicator" : "HierarchicalCommunicator";
        for (List<String> f : out) {
            assertEquals(List.of(kind), f, () -> String.join("\n", f));
        }
    }

    @Test
    void sendRecvInsideAndAcrossHostsAndSplitBothWays() throws Exception {
        String[] hosts = placement(0);
        List<String> out = run(hosts, Duration.ofSeconds(30), comm -> {
            int r = comm.rank();
            int n = comm.size();
            StringBuilder b = new StringBuilder();
            // every pair, both directions, async (a batch mixing shared memory and TCP), to itself too
            List<org.jccl.Work> w = new ArrayList<>();
            double[][] got = new double[n][];
            for (int p = 0; p < n; p++) {
                double[] msg = new double[70_001];
                java.util.Arrays.fill(msg, 100 * r + p);
                w.add(comm.sendAsync(HostBuffer.of(msg), p));
            }
            for (int p = n - 1; p >= 0; p--) {
                got[p] = new double[70_001];
                w.add(comm.recvAsync(HostBuffer.of(got[p]), p));
            }
            for (org.jccl.Work x : w) {
                x.await();
            }
            for (int p = 0; p < n; p++) {
                b.append(got[p][0] == 100 * p + r && got[p][70_000] == 100 * p + r ? "." : "X" + p);
            }
            // blocking, across hosts: 0 -> 3 -> 1
            long[] v = {r == 0 ? 42 : 0};
            if (r == 0) {
                comm.send(HostBuffer.of(v), 3);
            } else if (r == 3) {
                comm.recv(HostBuffer.of(v), 0);
                v[0]++;
                comm.send(HostBuffer.of(v), 1);
            } else if (r == 1) {
                comm.recv(HostBuffer.of(v), 3);
            }
            b.append(' ').append(r == 1 ? v[0] : -1);
            // split across hosts (one rank per host: TCP) and inside a host (shared memory)
            try (Communicator across = comm.split(r % 2, r); Communicator inside = comm.split(r / 2, -r)) {
                long[] x = {r + 1};
                across.allReduce(HostBuffer.of(x), ReduceOp.SUM);
                long[] y = {r + 1};
                inside.allReduce(HostBuffer.of(y), ReduceOp.SUM);
                long[] z = {r + 1};
                comm.allReduce(HostBuffer.of(z), ReduceOp.SUM);
                b.append(' ').append(across.getClass().getSimpleName()).append(' ').append(x[0])
                        .append(' ').append(inside.getClass().getSimpleName()).append(' ').append(y[0]).append(' ').append(z[0])
                        .append(' ').append(inside.rank());
            }
            assertInstanceOf(HierarchicalCommunicator.class, comm);
            return b.toString();
        });
        // across: {0,2} -> 1+3 = 4, {1,3} -> 2+4 = 6; inside: {0,1} -> 3, {2,3} -> 7; key -rank reverses
        assertEquals(".... -1 TcpCommunicator 4 HostCommunicator 3 10 1", out.get(0));
        assertEquals(".... 43 TcpCommunicator 6 HostCommunicator 3 10 0", out.get(1));
        assertEquals(".... -1 TcpCommunicator 4 HostCommunicator 7 10 1", out.get(2));
        assertEquals(".... -1 TcpCommunicator 6 HostCommunicator 7 10 0", out.get(3));
    }

    @Test
    void sendRecvMovesBuffersConfinedToTheCallingThread() throws Exception {
        // A blocking sendRecv may pass buffers of a confined arena; the halves to a rank of the same host
        // go through the shared-memory communicator's worker, which must not touch them.
        List<String> out = run(placement(0), Duration.ofSeconds(30), comm -> {
            int r = comm.rank();
            int n = comm.size();
            StringBuilder b = new StringBuilder();
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                for (int count : new int[] {0, 7, 70_001}) {
                    // a ring shift (one half local, one across hosts), then the partner on the same host (both local)
                    int[][] pairs = {{(r + 1) % n, (r - 1 + n) % n}, {r ^ 1, r ^ 1}};
                    for (int[] pair : pairs) {
                        HostBuffer send = HostBuffer.of(DataType.FLOAT64, arena.allocate(8L * count + 8, 8), count);
                        HostBuffer recv = HostBuffer.of(DataType.FLOAT64, arena.allocate(8L * count + 8, 8), count);
                        for (int i = 0; i < count; i++) {
                            send.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE, i, 1000.0 * r + i);
                        }
                        comm.sendRecv(send, pair[0], recv, pair[1]);
                        boolean ok = true;
                        for (int i = 0; i < count; i++) {
                            ok &= recv.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE, i) == 1000.0 * pair[1] + i;
                        }
                        b.append(ok ? "." : "X" + count + "/" + pair[1]);
                    }
                }
            }
            return b.toString();
        });
        assertEquals(List.of("......", "......", "......", "......"), out);
    }

    @Test
    void aRankThatNeverArrivesFailsEveryRankWithinTheDeadline() throws Exception {
        long t0 = System.nanoTime();
        List<Object> out = run(placement(0), Duration.ofSeconds(2), comm -> {
            if (comm.rank() == 3) {
                Thread.sleep(5000);
                return "absent";
            }
            try {
                comm.allReduce(HostBuffer.of(new float[1000]), ReduceOp.SUM);
                return "no error";
            } catch (JcclException e) {
                return e;
            }
        });
        double secs = (System.nanoTime() - t0) / 1e9;
        StringBuilder all = new StringBuilder();
        for (int r = 0; r < 3; r++) {
            assertInstanceOf(JcclException.class, out.get(r), "rank " + r + ": " + out.get(r));
            all.append(((Exception) out.get(r)).getMessage()).append('\n');
        }
        // the leader of rank 3's host times out naming it; the others learn of that failure
        assertTrue(out.stream().anyMatch(o -> o instanceof org.jccl.CollectiveTimeoutException te
                && te.missingRanks().equals(List.of(3)) && te.getMessage().contains("late rank(s): [3]")), all::toString);
        assertTrue(secs < 15, "took " + secs + " s");
    }

    @Test
    void placementOnOneHostStaysSharedMemoryAndTcpIsForcedOnRequest() throws Exception {
        List<String> shm = run(new String[] {"a", "a"}, Duration.ofSeconds(30), c -> c.getClass().getSimpleName());
        assertEquals(List.of("HostCommunicator", "HostCommunicator"), shm);
        System.setProperty("jccl.transport", "tcp");
        try {
            List<String> tcp = ThreadRanks.run(2, Duration.ofSeconds(30), c -> c.getClass().getSimpleName());
            assertEquals(List.of("TcpCommunicator", "TcpCommunicator"), tcp);
        } finally {
            System.clearProperty("jccl.transport");
        }
        assertTrue(TcpCommunicator.class.getSimpleName().length() > 0);
    }
}
