package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.AbortedException;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.jccl.bootstrap.TimeToError;
import org.junit.jupiter.api.Test;

/** Point-to-point, split, async ordering, failures and bad input of the host engine (ranks as threads). */
class HostEngineBehaviourTest {
    // docs/RELIABILITY.md's times to error (upper ends), asserted per rank at <= 3x (also over TCP: TcpEngineBehaviourTest)
    /** A rank never calls, JCCL_TIMEOUT=1s: the waiters fail at the deadline plus a slack (and never before it). */
    static final double TIMEOUT_DEADLINE_SECS = 1.0;

    /** The transport, as the scenarios name it. */
    String transport() {
        return "shm";
    }

    /**
     * "Immediately" (a mismatch of a collective or of send/recv sizes, the peer's call after an
     * abort): documented as at most 1 s from the start of the call.
     */
    double immediateSecs() {
        return 1.0;
    }

    /** A send/recv size mismatch, the first send/recv of the communicator: under load not immediate. */
    double sendRecvMismatchSecs() {
        return 2.93;
    }

    /** A rank never calls, JCCL_TIMEOUT=1s: the deadline plus its slack (under load). */
    double timeoutSecs() {
        return 2.0;
    }

    /** abort() from another thread: the waiter is released within this of the call to abort() (under load). */
    double abortSecs() {
        return 0.52;
    }

    /** ... and the peer's next call fails within this of its start: immediately. */
    double abortPeerSecs() {
        return immediateSecs();
    }

    static float[] seq(int n, int base) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = base * 1000 + (i % 997);
        }
        return a;
    }

    @Test
    void sendRecvBetweenEveryPairInAnyOrderIncludingChunkedMessages() throws Exception {
        int n = 3;
        int big = 300_001; // > the 4 x 64 KiB mailbox: needs several rounds
        List<String> failures = new ArrayList<>();
        ThreadRanks.run(n, Duration.ofSeconds(30), comm -> {
            int r = comm.rank();
            // Blocking, small, ordered: everyone sends to higher ranks first, then receives from lower ones.
            for (int p = r + 1; p < n; p++) {
                comm.send(HostBuffer.of(seq(7, r * 10 + p)), p);
            }
            for (int p = 0; p < r; p++) {
                float[] got = new float[7];
                comm.recv(HostBuffer.of(got), p);
                if (!java.util.Arrays.equals(got, seq(7, p * 10 + r))) {
                    synchronized (failures) {
                        failures.add("small " + p + "->" + r);
                    }
                }
            }
            // Async, large, every pair at once (including to self), received in reverse order.
            List<Work> works = new ArrayList<>();
            float[][] in = new float[n][];
            for (int p = 0; p < n; p++) {
                works.add(comm.sendAsync(HostBuffer.of(seq(big, 100 + r * 10 + p)), p));
            }
            for (int p = n - 1; p >= 0; p--) {
                in[p] = new float[big];
                works.add(comm.recvAsync(HostBuffer.of(in[p]), p));
            }
            for (Work w : works) {
                w.await();
            }
            for (int p = 0; p < n; p++) {
                if (!java.util.Arrays.equals(in[p], seq(big, 100 + p * 10 + r))) {
                    synchronized (failures) {
                        failures.add("large " + p + "->" + r);
                    }
                }
            }
            return null;
        });
        assertTrue(failures.isEmpty(), failures::toString);
    }

    @Test
    void sendRecvSizeMismatchIsDetected() throws Exception {
        double[] secs = new double[2];
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(10), comm -> {
            long t0 = System.nanoTime();
            try {
                if (comm.rank() == 0) {
                    comm.send(HostBuffer.of(new float[10]), 1);
                    comm.barrier();
                } else {
                    comm.recv(HostBuffer.of(new float[11]), 0);
                }
                return "no error";
            } catch (JcclException e) {
                secs[comm.rank()] = (System.nanoTime() - t0) / 1e9;
                return e;
            }
        });
        System.out.println("RELIABILITY send/recv size mismatch: " + out);
        assertInstanceOf(CollectiveMismatchException.class, out.get(1));
        assertTrue(((Exception) out.get(1)).getMessage().contains("44 bytes"), () -> out.get(1).toString());
        for (int r = 0; r < 2; r++) {
            if (out.get(r) instanceof JcclException) { // rank 0's send may complete before rank 1 checks the size
                TimeToError.assertWithin(transport() + ": send/recv size mismatch (from the first call's start)", r, secs[r],
                        sendRecvMismatchSecs());
            }
        }
    }

    @Test
    void collectiveMismatchFailsOnEveryRankAndShowsBothCalls() throws Exception {
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(10), comm -> {
            try {
                comm.allReduce(HostBuffer.of(new float[10 + comm.rank()]), ReduceOp.SUM);
                return "no error";
            } catch (JcclException e) {
                return e;
            }
        });
        for (Object o : out) {
            assertInstanceOf(CollectiveMismatchException.class, o);
        }
        String m = ((Exception) out.get(0)).getMessage() + ((Exception) out.get(1)).getMessage();
        assertTrue(m.contains("x 10") && m.contains("x 11"), m);
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"op", "dtype", "root", "collective"})
    void everyKindOfMismatchIsDetected(String kind) throws Exception {
        double[] secs = new double[2];
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(10), comm -> {
            boolean odd = comm.rank() == 1;
            long t0 = System.nanoTime();
            try {
                switch (kind) {
                    case "op" -> comm.allReduce(HostBuffer.of(new float[8]), odd ? ReduceOp.MAX : ReduceOp.SUM);
                    case "dtype" -> comm.allReduce(odd ? HostBuffer.of(new int[8]) : HostBuffer.of(new float[8]), ReduceOp.SUM);
                    case "root" -> {
                        comm.broadcast(HostBuffer.of(new float[8]), odd ? 1 : 0);
                        if (!rootDisagreementFailsInTheBroadcast()) {
                            // both ranks named themselves the root: the next collective reports it
                            comm.allReduce(HostBuffer.of(new float[8]), ReduceOp.SUM);
                        }
                    }
                    default -> {
                        if (odd) {
                            comm.allGather(HostBuffer.of(new float[16]));
                        } else {
                            comm.reduceScatter(HostBuffer.of(new float[16]), ReduceOp.SUM);
                        }
                    }
                }
                return "no error";
            } catch (JcclException e) {
                secs[comm.rank()] = (System.nanoTime() - t0) / 1e9;
                return e;
            }
        });
        System.out.println("RELIABILITY mismatch " + kind + ": " + out);
        // at least one side sees the other's call; none may succeed silently
        assertTrue(out.stream().anyMatch(o -> o instanceof CollectiveMismatchException), out::toString);
        for (Object o : out) {
            assertInstanceOf(JcclException.class, o, String.valueOf(o));
        }
        for (int r = 0; r < 2; r++) {
            TimeToError.assertWithin(transport() + ": mismatch of " + kind + " (from the first call's start)", r, secs[r],
                    immediateSecs());
        }
    }

    /**
     * Two ranks that both broadcast as the root see nothing in that call (each posts and returns);
     * the disagreement must fail the next call that compares the ranks' posts, whatever it is, on
     * every rank: here a small broadcast from root 0, whose receiver (rank 1) reads a post that
     * matches its own call but not its history, then an all-reduce. Over shared memory rank 1
     * fails in that second broadcast, naming the earlier disagreement.
     */
    @Test
    void aDisagreementNoRankSawFailsTheNextCallThatComparesPosts() throws Exception {
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(10), comm -> {
            int step = 0;
            try {
                comm.broadcast(HostBuffer.of(new float[8]), comm.rank()); // each rank its own root
                step = 1;
                comm.broadcast(HostBuffer.of(new float[8]), 0);
                step = 2;
                comm.allReduce(HostBuffer.of(new float[8]), ReduceOp.SUM);
                return "no error";
            } catch (JcclException e) {
                return step + ": " + e;
            }
        });
        for (Object o : out) {
            assertTrue(o instanceof String s && !s.equals("no error") && (s.startsWith("1: ") || s.startsWith("2: ")),
                    "every rank must fail in its second or third call: " + out);
        }
        assertTrue(out.stream().anyMatch(o -> o.toString().contains("CollectiveMismatchException")), out::toString);
        if (transport().equals("shm")) {
            String r1 = out.get(1).toString();
            assertTrue(r1.startsWith("1: ") && r1.contains("disagreed on an earlier call"), r1);
        }
    }

    /**
     * Whether a small broadcast in which every rank names itself the root fails in the broadcast
     * itself: not by default (shared memory: a small broadcast's root returns once its data is
     * posted, and the next collective's posts carry each rank's history; TCP: only under
     * JCCL_CHECK), so the next collective reports it.
     */
    boolean rootDisagreementFailsInTheBroadcast() {
        return false;
    }

    @Test
    void timeoutNamesTheRankThatDidNotArrive() throws Exception {
        double[] secs = new double[3];
        List<Object> out = ThreadRanks.run(3, Duration.ofSeconds(1), comm -> {
            if (comm.rank() == 2) {
                Thread.sleep(2500);
                return "skipped";
            }
            long t0 = System.nanoTime();
            try {
                comm.allReduce(HostBuffer.of(new float[4]), ReduceOp.SUM);
                return "no error";
            } catch (JcclException e) {
                secs[comm.rank()] = (System.nanoTime() - t0) / 1e9;
                return e;
            }
        });
        System.out.println("RELIABILITY timeout: " + out);
        for (int r = 0; r < 2; r++) {
            Object o = out.get(r);
            if (o instanceof CollectiveTimeoutException te) {
                assertEquals(List.of(2), te.missingRanks(), te.getMessage());
                assertTrue(te.getMessage().contains("allReduce"), te.getMessage());
                TimeToError.assertDeadline(transport() + ": JCCL_TIMEOUT=1s, rank 2 never calls", r, secs[r],
                        TIMEOUT_DEADLINE_SECS, timeoutSecs());
            } else {
                // the other waiting rank may learn of the failure from the first one's report
                assertInstanceOf(org.jccl.PeerFailureException.class, o, String.valueOf(o));
                TimeToError.assertWithin(transport() + ": JCCL_TIMEOUT=1s, rank 2 never calls (told by the rank that timed out)",
                        r, secs[r], timeoutSecs());
            }
        }
        assertTrue(out.stream().anyMatch(o -> o instanceof CollectiveTimeoutException), out::toString);
    }

    @Test
    void abortFromAnotherThreadReleasesEveryRank() throws Exception {
        double[] peerSecs = new double[1];
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(60), comm -> {
            if (comm.rank() == 0) {
                long[] abortCalled = new long[1];
                Thread aborter = Thread.ofPlatform().start(() -> {
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        return;
                    }
                    abortCalled[0] = System.nanoTime();
                    comm.abort();
                });
                try {
                    comm.allReduce(HostBuffer.of(new float[4]), ReduceOp.SUM);
                    return "no error";
                } catch (AbortedException e) {
                    long released = System.nanoTime();
                    aborter.join(); // also publishes abortCalled
                    return (released - abortCalled[0]) / 1e9;
                }
            }
            Thread.sleep(800);
            long t0 = System.nanoTime();
            try {
                comm.barrier();
                return "no error";
            } catch (JcclException e) {
                peerSecs[0] = (System.nanoTime() - t0) / 1e9;
                return e;
            }
        });
        assertInstanceOf(Double.class, out.get(0), String.valueOf(out.get(0)));
        System.out.println("RELIABILITY abort: waiter released " + out.get(0) + " s after abort() was called; the peer's next "
                + "call failed " + peerSecs[0] + " s after its start");
        TimeToError.assertWithin(transport() + ": abort() from another thread, the waiter (from the call to abort())", 0,
                (Double) out.get(0), abortSecs());
        assertInstanceOf(AbortedException.class, out.get(1), String.valueOf(out.get(1)));
        assertTrue(((Exception) out.get(1)).getMessage().contains("rank 0"), String.valueOf(out.get(1)));
        TimeToError.assertWithin(transport() + ": abort() from another thread, the peer's next call (from its start)", 1,
                peerSecs[0], abortPeerSecs());
    }

    @Test
    void splitGivesIndependentSubCommunicatorsUsableAlternatelyWithTheParent() throws Exception {
        List<String> out = ThreadRanks.run(4, Duration.ofSeconds(30), comm -> {
            int r = comm.rank();
            Communicator sub = comm.split(r % 2, -r);
            Communicator none = comm.split(r == 3 ? Communicator.NO_COLOR : 0, r);
            StringBuilder b = new StringBuilder();
            try {
                if (r == 3) {
                    assertNull(none);
                } else {
                    assertNotNull(none);
                    assertEquals(3, none.size());
                    none.close();
                }
                assertEquals(2, sub.size());
                // key = -rank: the higher old rank comes first
                assertEquals(r < 2 ? 1 : 0, sub.rank());
                for (int i = 0; i < 5; i++) {
                    long[] x = {r + 1, i};
                    sub.allReduce(HostBuffer.of(x), ReduceOp.SUM);
                    long[] y = {r + 1};
                    comm.allReduce(HostBuffer.of(y), ReduceOp.SUM);
                    b.append(x[0]).append('/').append(x[1]).append('/').append(y[0]).append(' ');
                }
            } finally {
                sub.close();
            }
            return b.toString();
        });
        // ranks 0 and 2 (values 1 and 3) sum to 4; ranks 1 and 3 to 6; the parent to 10
        String even = "4/0/10 4/2/10 4/4/10 4/6/10 4/8/10 ";
        String odd = "6/0/10 6/2/10 6/4/10 6/6/10 6/8/10 ";
        assertEquals(List.of(even, odd, even, odd), out);
    }

    @Test
    void asyncWorkRunsInOrderAndBlockingCallsQueueBehindIt() throws Exception {
        List<double[]> out = ThreadRanks.run(2, Duration.ofSeconds(30), comm -> {
            double[] a = new double[100_000];
            java.util.Arrays.fill(a, comm.rank() + 1);
            List<Work> w = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                w.add(comm.allReduceAsync(HostBuffer.of(a), ReduceOp.SUM)); // 3, 6, 12
            }
            double[] b = {comm.rank()};
            comm.allReduce(HostBuffer.of(b), ReduceOp.MAX);
            for (Work x : w) {
                x.await();
                assertTrue(x.isDone());
                assertNull(x.exception());
            }
            return new double[] {a[0], a[a.length - 1], b[0]};
        });
        for (double[] o : out) {
            assertArrayEquals(new double[] {12, 12, 1}, o);
        }
    }

    @Test
    void badInputIsRejectedWithTheArgumentNamed() throws Exception {
        ThreadRanks.run(2, Duration.ofSeconds(10), comm -> {
            HostBuffer f = HostBuffer.of(new float[8]);
            HostBuffer d = HostBuffer.of(new double[8]);
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.allReduce(null, f, ReduceOp.SUM)), "send");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.allReduce(f, d, ReduceOp.SUM)), "FLOAT64");
            assertMessage(assertThrows(IllegalArgumentException.class,
                    () -> comm.allReduce(f, HostBuffer.of(new float[9]), ReduceOp.SUM)), "recv");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.allReduce(f, ReduceOp.BAND)), "BAND");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.allReduce(f, null)), "op");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.broadcast(f, 2)), "root");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.reduce(f, ReduceOp.SUM, -1)), "root");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.send(f, 5)), "peer");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.allGather(f, f)), "recv");
            assertMessage(assertThrows(IllegalArgumentException.class,
                    () -> comm.reduceScatter(HostBuffer.of(new float[9]), ReduceOp.SUM)), "multiple");
            assertMessage(assertThrows(IllegalArgumentException.class,
                    () -> comm.allReduce(f.slice(0, 4), f.slice(2, 4), ReduceOp.SUM)), "overlap");
            assertMessage(assertThrows(IllegalArgumentException.class, () -> comm.split(-5, 0)), "color");
            // nothing moved and the communicator still works
            float[] ok = {comm.rank()};
            comm.allReduce(HostBuffer.of(ok), ReduceOp.SUM);
            assertEquals(1f, ok[0]);
            comm.close();
            assertThrows(InvalidUsageException.class, () -> comm.allReduce(HostBuffer.of(ok), ReduceOp.SUM));
            return null;
        });
    }

    static void assertMessage(Exception e, String part) {
        assertTrue(e.getMessage().contains(part), "message should name " + part + ": " + e.getMessage());
    }

    @Test
    void blockingCollectivesAllocateNothingAfterWarmUp() throws Exception {
        assertNoAllocationAfterWarmUp(10_000, 1000, false);
    }

    @Test
    void blockingSendRecvAndSendsAndRecvsAllocateNothingAfterWarmUp() throws Exception {
        // A steady stream of small blocking send/recv steps must not feed the GC: each young collection
        // stops both ranks for milliseconds (measured: 18-24 ms on 2 cores, in the middle of a timed loop).
        assertNoAllocationAfterWarmUp(20_000, 2_000, 4, comm -> {
            HostBuffer small = HostBuffer.of(new float[16]);
            HostBuffer got = HostBuffer.of(new float[16]);
            HostBuffer big = HostBuffer.of(new float[100_000]);
            HostBuffer bigGot = HostBuffer.of(new float[100_000]);
            int peer = 1 - comm.rank();
            return () -> {
                comm.sendRecv(small, peer, got, peer);
                comm.sendRecv(big, peer, bigGot, peer);
                if (comm.rank() == 0) {
                    comm.send(small, peer);
                    comm.recv(got, peer);
                } else {
                    comm.recv(got, peer);
                    comm.send(small, peer);
                }
            };
        });
    }

    /** One round of blocking collectives. */
    interface Round {
        void run() throws Exception;
    }

    /**
     * On 2 ranks as threads: {@code warmUp} rounds of all-reduce (small, large), all-gather (small;
     * with {@code largeGatherAndBarrier} also large), broadcast (small) and, with {@code
     * largeGatherAndBarrier}, barrier; then asserts that {@code measured} more rounds allocate under
     * 16 KiB on each rank's thread.
     */
    static void assertNoAllocationAfterWarmUp(int warmUp, int measured, boolean largeGatherAndBarrier) throws Exception {
        assertNoAllocationAfterWarmUp(warmUp, measured, largeGatherAndBarrier ? 6 : 4, comm -> {
            HostBuffer ha = HostBuffer.of(new float[1024]);
            HostBuffer hb = HostBuffer.of(new float[200_000]);
            HostBuffer out2 = HostBuffer.of(new float[2048]);
            HostBuffer bigOut = largeGatherAndBarrier ? HostBuffer.of(new float[400_000]) : null;
            return () -> {
                comm.allReduce(ha, ReduceOp.SUM);
                comm.allReduce(hb, ReduceOp.MAX);
                comm.allGather(ha, out2);
                if (bigOut != null) {
                    comm.allGather(hb, bigOut);
                }
                comm.broadcast(ha, 0);
                if (bigOut != null) {
                    comm.barrier();
                }
            };
        });
    }

    /**
     * On 2 ranks as threads: {@code warmUp} rounds of what {@code rounds} makes for a communicator
     * ({@code perRound} calls each), then asserts that {@code measured} more rounds allocate under
     * 16 KiB on each rank's thread.
     */
    static void assertNoAllocationAfterWarmUp(int warmUp, int measured, int perRound,
                                              java.util.function.Function<Communicator, Round> rounds) throws Exception {
        List<long[]> out = ThreadRanks.run(2, Duration.ofSeconds(60), comm -> {
            com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            Round round = rounds.apply(comm);
            for (int i = 0; i < warmUp; i++) {
                round.run();
            }
            long tid = Thread.currentThread().threadId();
            long before = mx.getThreadAllocatedBytes(tid);
            for (int i = 0; i < measured; i++) {
                round.run();
            }
            long after = mx.getThreadAllocatedBytes(tid);
            return new long[] {after - before};
        });
        for (long[] o : out) {
            // thousands of calls: one object per call would be >= 48 KB; allow a one-off of the JIT
            // (a recompilation in the window allocates a few KB), so CI does not flake on it.
            assertTrue(o[0] < 16 * 1024, "allocated " + o[0] + " bytes in " + measured * perRound + " calls");
        }
    }
}
