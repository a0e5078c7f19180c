package org.jccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jccl.bootstrap.TcpStoreServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Jobs that share a store port stay apart (issue #19 item 6), over real sockets with ranks as
 * threads: a second rank 0 on a taken port fails at once instead of joining, a foreign program on
 * the port fails a client within the deadline naming it, and a rank that never joins is named.
 */
@Timeout(60)
class JobIsolationTest {
    private static final Duration LONG = Duration.ofSeconds(60);

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Options as a user with default settings has them: job id "jccl", no token, the host backend. */
    private static Options rank(int rank, int size, int port, Duration timeout) {
        return Options.of(rank, size).withStore("127.0.0.1", port).withTimeout(timeout).withBackend("host");
    }

    private static int sumOfRanksPlusOne(Communicator c) {
        int[] v = {c.rank() + 1};
        c.allReduce(HostBuffer.of(v), ReduceOp.SUM);
        return v[0];
    }

    private static void awaitListening(int port) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < end) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 500);
                return;
            } catch (IOException notYet) {
                Thread.sleep(20);
            }
        }
        throw new AssertionError("nothing listens on " + port);
    }

    @Test
    void aSecondJobsRankZeroOnTheSamePortFailsAtOnceWhileTheFirstJobCompletes() throws Exception {
        int port = freePort();
        CompletableFuture<Integer> a0 = CompletableFuture.supplyAsync(() -> {
            try (Communicator c = Jccl.init(rank(0, 2, port, LONG))) {
                return sumOfRanksPlusOne(c);
            }
        }, r -> Thread.ofVirtual().start(r));
        awaitListening(port);

        long t0 = System.nanoTime();
        JcclException e = assertThrows(JcclException.class, () -> Jccl.init(rank(0, 2, port, LONG)).close());
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.out.printf("second job's rank 0 on a taken port failed after %d ms: %s%n", ms, e.getMessage());
        assertTrue(ms < 3_000, "the second job's rank 0 should fail at once, took " + ms + " ms");
        for (String w : new String[] {"127.0.0.1:" + port, "already in use", "MASTER_PORT", "stop the job"}) {
            assertTrue(e.getMessage().contains(w), "message lacks '" + w + "': " + e.getMessage());
        }

        // the first job is untouched: its rank 1 joins and the two ranks (and only they) reduce
        try (Communicator a1 = Jccl.init(rank(1, 2, port, LONG))) {
            assertEquals(2, a1.size());
            assertEquals(3, sumOfRanksPlusOne(a1));
        }
        assertEquals(3, a0.get(30, TimeUnit.SECONDS));
    }

    @Test
    void aSilentForeignProgramOnThePortFailsWithinTheDeadlineNamingIt() throws Exception {
        try (ServerSocket foreign = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            int port = foreign.getLocalPort();
            List<Socket> held = new CopyOnWriteArrayList<>();
            Thread acceptor = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        held.add(foreign.accept()); // accepts and says nothing
                    }
                } catch (IOException closed) {
                    // test ends
                }
            });
            try {
                Duration deadline = Duration.ofSeconds(2);
                // rank 1 connects to it as a client: the handshake ends at the deadline, not after 15 s
                long t0 = System.nanoTime();
                CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                        () -> Jccl.init(rank(1, 2, port, deadline)).close());
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(e.getMessage().contains("the process at 127.0.0.1:" + port + " is not a jccl store"),
                        e.getMessage());
                System.out.printf("rank 1 against a silent foreign program failed after %d ms: %s%n", ms, e.getMessage());
                assertTrue(ms >= 1_900 && ms < 3 * deadline.toMillis(), "failed after " + ms + " ms");

                // rank 0 does not talk to it at all
                t0 = System.nanoTime();
                JcclException e0 = assertThrows(JcclException.class, () -> Jccl.init(rank(0, 2, port, deadline)).close());
                ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(e0.getMessage().contains("127.0.0.1:" + port + " is already in use"), e0.getMessage());
                assertTrue(ms < deadline.toMillis(), "rank 0 should fail at once, took " + ms + " ms");
            } finally {
                foreign.close();
                acceptor.join(2000);
                for (Socket s : held) {
                    s.close();
                }
            }
        }
    }

    @Test
    void rankZeroAloneNamesTheRankThatNeverJoined() throws Exception {
        int port = freePort();
        Duration deadline = Duration.ofSeconds(2);
        long t0 = System.nanoTime();
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                () -> Jccl.init(rank(0, 2, port, deadline)).close());
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        for (String w : new String[] {"rank 1 never joined within 2 s", "job 'jccl' at 127.0.0.1:" + port,
                "JCCL_JOB_ID"}) {
            assertTrue(e.getMessage().contains(w), "message lacks '" + w + "': " + e.getMessage());
        }
        assertTrue(!e.getMessage().contains("host-of"), "no internal key: " + e.getMessage());
        assertEquals(List.of(1), e.missingRanks());
        System.out.printf("rank 0 alone failed after %d ms: %s%n", ms, e.getMessage());
        assertTrue(ms >= 1_900 && ms < 3 * deadline.toMillis(), "failed after " + ms + " ms");
    }

    @Test
    void aStoreServedByALauncherIsJoinedByRankZeroWhenToldSo() throws Exception {
        try (TcpStoreServer launcherStore = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), null)) {
            int port = launcherStore.port();
            // not told: rank 0 refuses the store it did not start
            JcclException e = assertThrows(JcclException.class, () -> Jccl.init(rank(0, 2, port, LONG)).close());
            assertTrue(e.getMessage().contains("JCCL_STORE_SERVED"), e.getMessage());

            CompletableFuture<Integer> r0 = CompletableFuture.supplyAsync(() -> {
                try (Communicator c = Jccl.init(rank(0, 2, port, LONG).withSetting("JCCL_STORE_SERVED", "1"))) {
                    return sumOfRanksPlusOne(c);
                }
            }, r -> Thread.ofVirtual().start(r));
            try (Communicator c1 = Jccl.init(rank(1, 2, port, LONG).withSetting("JCCL_STORE_SERVED", "1"))) {
                assertEquals(3, sumOfRanksPlusOne(c1));
            }
            assertEquals(3, r0.get(30, TimeUnit.SECONDS));
        }
    }
}
