package org.jccl.bootstrap;

import static org.jccl.bootstrap.StoreProtocol.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jccl.CollectiveTimeoutException;
import org.jccl.InvalidUsageException;
import org.jccl.PeerFailureException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Heartbeats through a real store server in this JVM: a connection that vanishes is a death every
 * other rank hears of within an interval, a goodbye is not, a silent rank is not, the rendezvous
 * guard, a duplicate rank, and the loss of the store.
 */
class HeartbeatTest {
    static final String SCOPE = "jccl/hbtest/c1/";
    static final Duration IV = Duration.ofMillis(100);
    static final Duration T = Duration.ofSeconds(10);

    TcpStoreServer server;
    TcpStore client;

    @BeforeEach
    void start() {
        server = TcpStoreServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), null);
        client = TcpStore.connect("127.0.0.1", server.port(), null, T);
    }

    @AfterEach
    void stop() {
        client.close();
        server.close();
    }

    /** The body of a HEARTBEAT request. */
    static byte[] heartbeatBody(String scope, int rank, int intervalMs, int flags, long known) {
        return TcpStoreBadInputTest.bytes(o -> {
            byte[] k = scope.getBytes(StandardCharsets.UTF_8);
            o.writeShort(k.length);
            o.write(k);
            o.writeInt(rank);
            o.writeInt(intervalMs);
            o.writeByte(flags);
            o.writeLong(known);
        });
    }

    /** A raw connection that sends one heartbeat of {@code rank} and reads the answer's status. */
    Socket rawRank(int rank, int intervalMs) throws IOException {
        Socket s = TcpStoreBadInputTest.handshaken(server, null);
        beat(s, rank, intervalMs);
        return s;
    }

    static int beat(Socket s, int rank, int intervalMs) throws IOException {
        return beatOn(s, SCOPE, rank, intervalMs);
    }

    /** Sends one heartbeat of {@code rank} of {@code scope} every 100 ms; returns the answer's status. */
    static int beatOn(Socket s, String scope, int rank) throws IOException {
        return beatOn(s, scope, rank, 100);
    }

    static int beatOn(Socket s, String scope, int rank, int intervalMs) throws IOException {
        s.getOutputStream().write(TcpStoreBadInputTest.frame(7, OP_HEARTBEAT, heartbeatBody(scope, rank, intervalMs, 0, 0)));
        DataInputStream in = new DataInputStream(s.getInputStream());
        int len = in.readInt();
        byte[] rest = new byte[len];
        in.readFully(rest);
        return rest[4];
    }

    @Test
    void aConnectionThatVanishesIsADeathEveryRankHearsWithinAnInterval() throws Exception {
        try (Heartbeat hb = Heartbeat.start(client, SCOPE, 0, IV, false)) {
            CountDownLatch heard = new CountDownLatch(1);
            List<String> told = new CopyOnWriteArrayList<>();
            hb.addListener((r, why) -> {
                told.add(r + ": " + why);
                heard.countDown();
            });
            Socket s1 = rawRank(1, 100);
            Thread.sleep(150);
            assertTrue(hb.deadRanks().isEmpty());
            long epoch = hb.epoch();
            long t0 = System.nanoTime();
            s1.close(); // the kernel does this for a killed process
            assertTrue(heard.await(2 * IV.toMillis() + 1000, TimeUnit.MILLISECONDS), "no death heard");
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.println("heartbeat: death heard " + secs + " s after the connection closed (interval " + IV + ")");
            assertEquals(Set.of(1), hb.deadRanks());
            assertTrue(hb.epoch() != epoch);
            assertTrue(hb.deathReason(1).contains("without a goodbye"), hb.deathReason(1));
            assertEquals(1, told.size(), told::toString);
            assertTrue(server.deadRanks(SCOPE).containsKey(1));
            // a late listener hears of it at once
            List<Integer> late = new CopyOnWriteArrayList<>();
            hb.addListener((r, why) -> late.add(r));
            assertEquals(List.of(1), late);
            // the watch of a communicator whose rank 2 is job rank 1
            org.jccl.spi.Liveness.Watch w = hb.watch(new int[] {5, 0, 1});
            assertEquals(2, w.firstDead());
            PeerFailureException pf = w.failure(2, "allReduce #3 on rank 1");
            assertEquals(2, pf.rank());
            assertTrue(pf.getMessage().startsWith("rank 2 (job rank 1) died during allReduce #3 on rank 1: the store's "
                    + "heartbeat monitor declared it dead"), pf.getMessage());
            assertEquals(-1, hb.watch(new int[] {0, 5}).firstDead());
            // the dead rank cannot come back on a new connection
            try (Socket again = TcpStoreBadInputTest.handshaken(server, null)) {
                assertEquals(ST_ERROR, beat(again, 1, 100));
            }
        }
    }

    @Test
    void aConnectionResetIsADeathWithoutAGoodbyeAsAnEndOfStreamIs() throws Exception {
        try (Heartbeat hb = Heartbeat.start(client, SCOPE, 0, IV, false)) {
            CountDownLatch heard = new CountDownLatch(1);
            hb.addListener((r, why) -> heard.countDown());
            Socket s1 = rawRank(1, 100);
            // a killed process's kernel resets a socket that holds unread data; linger 0 resets it the same way
            s1.getOutputStream().write(new byte[] {0, 0});
            s1.setSoLinger(true, 0);
            s1.close();
            assertTrue(heard.await(2 * IV.toMillis() + 1000, TimeUnit.MILLISECONDS), "no death heard");
            assertEquals(Set.of(1), hb.deadRanks());
            String why = hb.deathReason(1);
            assertTrue(why.contains("closed without a goodbye") && !why.contains("dropped"), why);
        }
    }

    @Test
    void aGoodbyeIsNoDeath() throws Exception {
        try (Heartbeat hb0 = Heartbeat.start(client, SCOPE, 0, IV, false);
             TcpStore c1 = TcpStore.connect("127.0.0.1", server.port(), null, T)) {
            Heartbeat hb1 = Heartbeat.start(c1, SCOPE, 1, IV, false);
            Thread.sleep(150);
            hb1.close();
            assertFalse(hb1.isMonitoring());
            Thread.sleep(4 * IV.toMillis());
            assertTrue(hb0.deadRanks().isEmpty(), hb0::toString);
            assertTrue(server.deadRanks(SCOPE).isEmpty());
            assertTrue(hb0.isMonitoring());
        }
    }

    @Test
    void aSilentRankIsNotDeadAndComesBack() throws Exception {
        try (Heartbeat hb = Heartbeat.start(client, SCOPE, 0, IV, false); Socket s1 = rawRank(1, 50)) {
            // rank 1 stops sending (as a SIGSTOPped process would) but its connection stays open
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            while (!hb.silentRanks().containsKey(1) && System.nanoTime() < end) {
                Thread.sleep(10);
            }
            assertTrue(hb.silentRanks().containsKey(1), "rank 1 not reported silent: " + hb);
            assertTrue(hb.deadRanks().isEmpty());
            // It wakes up and beats again every 40 ms, as a continued process does (a single beat keeps it
            // heard for only two of its 50 ms intervals: on a loaded machine rank 0's next answer can miss that).
            beat(s1, 1, 50);
            long lastBeat = System.nanoTime();
            end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            while (hb.silentRanks().containsKey(1) && System.nanoTime() < end) {
                Thread.sleep(10);
                if (System.nanoTime() - lastBeat >= 40_000_000L) {
                    beat(s1, 1, 50);
                    lastBeat = System.nanoTime();
                }
            }
            assertFalse(hb.silentRanks().containsKey(1), "rank 1 still silent: " + hb.silentRanks());
            assertTrue(hb.deadRanks().isEmpty());
            String note = hb.watch(2).silentNote(List.of(1));
            assertEquals("", note);
        }
    }

    @Test
    void twoProcessesCannotClaimOneRank() {
        try (Heartbeat hb = Heartbeat.start(client, SCOPE, 3, IV, false)) {
            InvalidUsageException e = assertThrows(InvalidUsageException.class,
                    () -> Heartbeat.start(client, SCOPE, 3, IV, false));
            assertTrue(e.getMessage().contains("two processes claim the same rank"), e.getMessage());
            assertTrue(hb.isMonitoring());
        }
    }

    @Test
    void theRendezvousGuardEndsAWaitWhenARankDiesUntilDisarmed() throws Exception {
        try (Heartbeat hb = Heartbeat.start(client, SCOPE, 0, IV, false)) {
            GuardedStore guarded = hb.guard(new PrefixStore(SCOPE, client));
            guarded.set("here", new byte[] {1});
            assertEquals(1, guarded.get("here", T)[0]);
            Socket s1 = rawRank(1, 100);
            long[] t0 = new long[1];
            Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(200);
                    t0[0] = System.nanoTime();
                    s1.close();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            PeerFailureException e = assertThrows(PeerFailureException.class,
                    () -> guarded.wait(List.of("never-set"), Duration.ofSeconds(30)));
            double secs = (System.nanoTime() - t0[0]) / 1e9;
            assertEquals(1, e.rank());
            assertTrue(e.getMessage().contains("never-set"), e.getMessage());
            assertTrue(secs < 2 * IV.toMillis() / 1e3 + 1, "the wait ended " + secs + " s after the death");
            // once disarmed, waits are plain waits again
            guarded.disarm();
            assertThrows(CollectiveTimeoutException.class, () -> guarded.get("never-set", Duration.ofMillis(100)));
            client.set("x", new byte[] {2}); // the store still works
        }
    }

    @Test
    void losingTheStoreStopsTheHeartbeatsWithOneWarningAndBlamesTheRankThatHostedIt() throws Exception {
        try (TcpStore c6 = TcpStore.connect("127.0.0.1", server.port(), null, T);
             Heartbeat hb5 = Heartbeat.start(client, SCOPE, 5, IV, false);
             Heartbeat hb6 = Heartbeat.start(c6, SCOPE, 6, IV, true)) {
            Thread.sleep(250); // rank 5 learns who hosts the store
            server.close();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (hb5.isMonitoring() && System.nanoTime() < end) {
                Thread.sleep(10);
            }
            assertFalse(hb5.isMonitoring());
            assertEquals(Set.of(6), hb5.deadRanks());
            assertTrue(hb5.deathReason(6).contains("hosted the store"), hb5.deathReason(6));
            Thread.sleep(5 * IV.toMillis()); // no spinning, no more warnings
            assertEquals(1, hb5.warningsLogged());
            boolean threadAlive = Thread.getAllStackTraces().keySet().stream()
                    .anyMatch(t -> t.getName().equals("jccl-heartbeat-r5") && t.isAlive());
            assertFalse(threadAlive, "the heartbeat thread of rank 5 still runs");
            assertNotNull(hb5.toString());
        }
    }

    @Test
    void closeStopsTheThread() throws Exception {
        Heartbeat hb = Heartbeat.start(client, SCOPE, 9, IV, false);
        hb.close();
        hb.close(); // idempotent
        Thread.sleep(50);
        boolean alive = Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getName().equals("jccl-heartbeat-r9") && t.isAlive());
        assertFalse(alive);
        assertFalse(hb.isMonitoring());
    }
}
