package org.jccl.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jccl.CollectiveTimeoutException;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class TcpStoreTest {
    static final Duration T = Duration.ofSeconds(10);
    /** Blocking test tasks run on virtual threads (the common pool may have a single worker). */
    static final java.util.concurrent.Executor VT = Executors.newVirtualThreadPerTaskExecutor();

    TcpStoreServer server;
    final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void start() {
        server = TcpStoreServer.start(null, null);
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
        server.close();
    }

    TcpStore client() {
        return client(server, null);
    }

    TcpStore client(TcpStoreServer s, String token) {
        TcpStore c = TcpStore.connect("127.0.0.1", s.port(), token, T);
        toClose.add(c);
        return c;
    }

    static byte[] b(String s) {
        return s.getBytes(UTF_8);
    }

    @Test
    void bindsLoopbackOnEphemeralPort() {
        assertTrue(server.address().getAddress().isLoopbackAddress());
        assertNotEquals(0, server.port());
    }

    /**
     * set, get, tryGet, an empty value, delete and numKeys on an empty store {@code s}, with {@code
     * key} and "empty" (which stays behind).
     */
    static void assertBasicOperations(Store s, String key) {
        assertNull(s.tryGet(key));
        s.set(key, b("1"));
        assertArrayEquals(b("1"), s.get(key, T));
        assertArrayEquals(b("1"), s.tryGet(key));
        s.set(key, b("two"));
        assertArrayEquals(b("two"), s.tryGet(key));
        s.set("empty", new byte[0]);
        assertArrayEquals(new byte[0], s.get("empty", T));
        assertEquals(2, s.numKeys());
        assertTrue(s.delete(key));
        assertFalse(s.delete(key));
        assertNull(s.tryGet(key));
        assertEquals(1, s.numKeys());
    }

    @Test
    void basicOperations() {
        TcpStore c = client();
        assertBasicOperations(c, "a");
        // Unicode keys
        c.set("ключ/键/🔑", b("u"));
        assertArrayEquals(b("u"), c.get("ключ/键/🔑", T));
    }

    @Test
    void addIsA64BitLittleEndianCounter() {
        TcpStore c = client();
        assertEquals(5, c.add("n", 5));
        assertEquals(2, c.add("n", -3));
        assertEquals(Long.MIN_VALUE + 1, c.add("big", Long.MAX_VALUE + 2)); // wraps like two's complement
        byte[] raw = c.get("n", T);
        assertArrayEquals(new byte[] {2, 0, 0, 0, 0, 0, 0, 0}, raw);
        assertEquals(2, StoreProtocol.decodeCounter(raw));
        c.set("s", b("not a counter"));
        JcclException e = assertThrows(JcclException.class, () -> c.add("s", 1));
        assertTrue(e.getMessage().contains("'s'") && e.getMessage().contains("not a counter"), e.getMessage());
        // the connection is still fine
        assertEquals(3, c.add("n", 1));
    }

    @Test
    void compareSetSemantics() {
        TcpStore c = client();
        // expected null/empty: only when absent
        assertArrayEquals(b("v1"), c.compareSet("k", null, b("v1")));
        assertArrayEquals(b("v1"), c.compareSet("k", new byte[0], b("other"))); // exists: unchanged, current value
        assertArrayEquals(b("v2"), c.compareSet("k", b("v1"), b("v2")));       // matches: swapped
        assertArrayEquals(b("v2"), c.compareSet("k", b("v1"), b("v3")));       // stale expected: current value
        assertNull(c.compareSet("absent", b("x"), b("y")));                     // no value after
        assertNull(c.tryGet("absent"));
        assertArrayEquals(b("v2"), c.tryGet("k"));
    }

    @Test
    void compareSetIsAtomicUnderContention() throws Exception {
        int threads = 8;
        List<TcpStore> clients = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            clients.add(client());
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Integer>> wins = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                TcpStore c = clients.get(i);
                byte[] me = b("owner-" + i);
                wins.add(pool.submit(() -> java.util.Arrays.equals(me, c.compareSet("leader", null, me)) ? 1 : 0));
            }
            int sum = 0;
            for (Future<Integer> f : wins) {
                sum += f.get();
            }
            assertEquals(1, sum, "exactly one client creates the key");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void concurrentClientsCountExactly() throws Exception {
        int threads = 16;
        int iters = 200;
        List<TcpStore> clients = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            clients.add(client());
        }
        TcpStore shared = client(); // also share one client among all threads
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                TcpStore c = clients.get(t);
                int id = t;
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < iters; i++) {
                        c.add("counter", 1);
                        shared.add("shared", 2);
                        String key = "t" + id + "/" + i;
                        c.set(key, b(key));
                        assertArrayEquals(b(key), shared.get(key, T));
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get(25, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        TcpStore c = client();
        assertEquals((long) threads * iters, c.add("counter", 0));
        assertEquals(2L * threads * iters, c.add("shared", 0));
        assertEquals(threads * iters + 2L, c.numKeys());
    }

    @Test
    void blockingGetIsReleasedByALaterSet() throws Exception {
        TcpStore waiter = client();
        TcpStore setter = client();
        CompletableFuture<byte[]> got = CompletableFuture.supplyAsync(() -> waiter.get("late", T), VT);
        Thread.sleep(100);
        assertFalse(got.isDone());
        setter.set("late", b("here"));
        assertArrayEquals(b("here"), got.get(5, TimeUnit.SECONDS));
    }

    @Test
    void blockingGetReleasedByAddAndCompareSet() throws Exception {
        TcpStore c = client();
        CompletableFuture<byte[]> a = CompletableFuture.supplyAsync(() -> c.get("ctr", T), VT);
        CompletableFuture<byte[]> b2 = CompletableFuture.supplyAsync(() -> c.get("cas", T), VT);
        Thread.sleep(50);
        c.add("ctr", 7);
        c.compareSet("cas", null, b("x"));
        assertEquals(7, StoreProtocol.decodeCounter(a.get(5, TimeUnit.SECONDS)));
        assertArrayEquals(b("x"), b2.get(5, TimeUnit.SECONDS));
    }

    @Test
    void aBlockedGetDoesNotStallOtherThreadsOnTheSameClient() throws Exception {
        TcpStore c = client();
        List<CompletableFuture<byte[]>> blocked = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            String k = "never-" + i;
            blocked.add(CompletableFuture.supplyAsync(() -> c.get(k, T), VT));
        }
        Thread.sleep(50);
        long t0 = System.nanoTime();
        for (int i = 0; i < 100; i++) {
            c.set("x" + i, b("v"));
            assertArrayEquals(b("v"), c.get("x" + i, T));
        }
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5));
        for (int i = 0; i < 20; i++) {
            c.set("never-" + i, b("now"));
        }
        for (CompletableFuture<byte[]> f : blocked) {
            assertArrayEquals(b("now"), f.get(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void getTimesOutNamingKeyAndAddress() {
        TcpStore c = client();
        long t0 = System.nanoTime();
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                () -> c.get("rank3/ready", Duration.ofMillis(300)));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms >= 250 && ms < 3000, "took " + ms + " ms");
        assertTrue(e.getMessage().contains("rank3/ready"), e.getMessage());
        assertTrue(e.getMessage().contains("127.0.0.1:" + server.port()), e.getMessage());
        // zero timeout: answers at once
        assertThrows(CollectiveTimeoutException.class, () -> c.get("rank3/ready", Duration.ZERO));
        // the client keeps working after a timeout
        c.set("rank3/ready", b("1"));
        assertArrayEquals(b("1"), c.get("rank3/ready", Duration.ZERO));
    }

    @Test
    void waitNamesOnlyTheMissingKeys() throws Exception {
        TcpStore c = client();
        c.set("k0", b("x"));
        c.set("k2", b("x"));
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                () -> c.wait(List.of("k0", "k1", "k2", "k3"), Duration.ofMillis(200)));
        assertTrue(e.getMessage().contains("k1") && e.getMessage().contains("k3"), e.getMessage());
        assertFalse(e.getMessage().contains("k0") || e.getMessage().contains("k2"), e.getMessage());
        assertTrue(e.getMessage().contains("127.0.0.1:" + server.port()), e.getMessage());

        CompletableFuture<Void> w = CompletableFuture.runAsync(() -> c.wait(List.of("k0", "k1", "k3"), T), VT);
        Thread.sleep(50);
        c.set("k1", b("x"));
        Thread.sleep(50);
        assertFalse(w.isDone());
        c.set("k3", b("x"));
        w.get(5, TimeUnit.SECONDS);
        c.wait(List.of(), T); // nothing to wait for
    }

    @Test
    void restartedClientSeesEarlierData() {
        TcpStore first = TcpStore.connect("127.0.0.1", server.port(), null, T);
        first.set("persist", b("yes"));
        first.add("n", 41);
        first.close();
        assertThrows(InvalidUsageException.class, () -> first.set("x", b("y")));
        first.close(); // idempotent
        TcpStore second = client();
        assertArrayEquals(b("yes"), second.get("persist", T));
        assertEquals(42, second.add("n", 1));
    }

    @Test
    void largeValuesAndLimits() {
        TcpStore c = client();
        byte[] big = new byte[8 << 20];
        new Random(1).nextBytes(big);
        c.set("big", big);
        assertArrayEquals(big, c.get("big", T));
        String longKey = "k".repeat(Store.MAX_KEY_BYTES);
        c.set(longKey, b("ok"));
        assertArrayEquals(b("ok"), c.tryGet(longKey));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.set(longKey + "x", b("no")));
        assertTrue(e.getMessage().contains("4096"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> c.set("", b("no")));
        assertThrows(IllegalArgumentException.class, () -> c.set(null, b("no")));
        assertThrows(IllegalArgumentException.class, () -> c.set("k", null));
        assertThrows(IllegalArgumentException.class, () -> c.get("k", null));
        // still connected
        assertArrayEquals(b("ok"), c.tryGet(longKey));
    }

    /**
     * A store that ends the connection after the client's token proof without a verdict (what a
     * store does to a handshake past its deadline, e.g. of a process stalled under a profiler) is
     * not reported as a wrong token: that sent users hunting for a token mismatch that was not there.
     */
    @Test
    @Timeout(30)
    void aConnectionClosedBeforeTheVerdictIsNotCalledAWrongToken() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<byte[]> proofSeen = CompletableFuture.supplyAsync(() -> {
                try (java.net.Socket s = fake.accept()) {
                    java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
                    in.readFully(new byte[StoreProtocol.HELLO_BYTES]);
                    byte[] welcome = new byte[StoreProtocol.HELLO_BYTES + StoreProtocol.NONCE_BYTES];
                    java.nio.ByteBuffer.wrap(welcome).putInt(StoreProtocol.MAGIC).putShort(StoreProtocol.VERSION)
                            .putShort(StoreProtocol.FLAG_AUTH);
                    s.getOutputStream().write(welcome);
                    s.getOutputStream().flush();
                    byte[] proof = new byte[StoreProtocol.NONCE_BYTES];
                    in.readFully(proof);
                    return proof; // and close without AUTH_OK or AUTH_REJECTED
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            JcclException e = assertThrows(JcclException.class,
                    () -> TcpStore.connect("127.0.0.1", fake.getLocalPort(), "tok", Duration.ofSeconds(10)));
            assertEquals(StoreProtocol.NONCE_BYTES, proofSeen.get(10, TimeUnit.SECONDS).length, "the client sent its proof");
            assertTrue(e.getMessage().contains("closed the connection before answering the token proof"), e.getMessage());
            assertFalse(e.getMessage().contains("differs"), e.getMessage());
        }
    }

    @Test
    void tokenServerAcceptsTheRightTokenOnly() {
        try (TcpStoreServer secure = TcpStoreServer.start(null, "s3cret")) {
            String where = "127.0.0.1:" + secure.port();
            JcclException wrong = assertThrows(JcclException.class, () -> client(secure, "guess"));
            assertTrue(wrong.getMessage().contains("store at " + where + " rejected the job token"), wrong.getMessage());
            JcclException none = assertThrows(JcclException.class, () -> client(secure, null));
            assertTrue(none.getMessage().contains("store at " + where + " rejected the job token"), none.getMessage());
            assertTrue(none.getMessage().contains("JCCL_TOKEN"), none.getMessage());
            TcpStore ok = client(secure, "s3cret");
            ok.set("a", b("b"));
            assertArrayEquals(b("b"), ok.get("a", T));
            // a client with a token against a server without one connects
            TcpStore plain = client(server, "whatever");
            plain.set("x", b("y"));
        }
    }

    @Test
    void serverCloseWakesWaitersWithAnError() throws Exception {
        TcpStoreServer s = TcpStoreServer.start(null, null);
        TcpStore c = client(s, null);
        CompletableFuture<byte[]> got = CompletableFuture.supplyAsync(() -> c.get("never", T), VT);
        Thread.sleep(100);
        long t0 = System.nanoTime();
        s.close();
        Exception e = assertThrows(Exception.class, () -> got.get(5, TimeUnit.SECONDS));
        assertInstanceOf(JcclException.class, e.getCause());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3));
        assertThrows(JcclException.class, () -> c.set("a", b("b")));
    }

    @Test
    void openHostsTheServerAndRefusesToJoinAStoreItDidNotStart() {
        int port;
        try (Store host = TcpStore.open("127.0.0.1", 0, true, null, T)) {
            TcpStore ts = (TcpStore) host;
            assertNotNull(ts.server(), "rank 0 hosts the store");
            port = ts.server().port();
            host.set("from-host", b("1"));
            // a second rank 0 without a token (another job on the same port): fails at once, never joins
            long t0 = System.nanoTime();
            JcclException e = assertThrows(JcclException.class, () -> TcpStore.open("127.0.0.1", port, true, null, T));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "fails at once");
            assertTrue(e.getMessage().contains("127.0.0.1:" + port + " is already in use"), e.getMessage());
            assertTrue(e.getMessage().contains("MASTER_PORT") && e.getMessage().contains("stop the job"), e.getMessage());
            // a rank 0 with a token finds a store that requires none: another job's, refused as well
            e = assertThrows(JcclException.class, () -> TcpStore.open("127.0.0.1", port, true, "tok", T));
            assertTrue(e.getMessage().contains("does not require this job's token"), e.getMessage());
            try (Store peer = TcpStore.open("127.0.0.1", port, false, null, T)) {
                assertArrayEquals(b("1"), peer.get("from-host", T));
            }
        }
        // the hosting store stopped its server on close
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                () -> TcpStore.connect("127.0.0.1", port, null, Duration.ofMillis(300)));
        assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
        assertTrue(e.getMessage().contains("rank 0"), e.getMessage());
    }

    @Test
    void rankZeroJoinsATakenAddressOnlyWhenTheStoreThereAcceptsItsToken() {
        try (TcpStoreServer secure = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "job-token")) {
            try (Store joined = TcpStore.open("127.0.0.1", secure.port(), true, "job-token", T)) {
                assertNull(((TcpStore) joined).server(), "a client of the store set up for this job");
                joined.set("k", b("v"));
            }
            JcclException e = assertThrows(JcclException.class,
                    () -> TcpStore.open("127.0.0.1", secure.port(), true, "other-token", T));
            assertTrue(e.getMessage().contains("already in use, and not by a store of this job"), e.getMessage());
            assertTrue(e.getMessage().contains("127.0.0.1:" + secure.port()), e.getMessage());
        }
    }

    @Test
    void openRefusesAForeignListenerOnItsPort() throws Exception {
        // Something that is not a jccl store owns the port: rank 0 does not even talk to it.
        try (ServerSocket foreign = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            JcclException e = assertThrows(JcclException.class,
                    () -> TcpStore.open("127.0.0.1", foreign.getLocalPort(), true, null, T));
            assertTrue(e.getMessage().contains("127.0.0.1:" + foreign.getLocalPort() + " is already in use"), e.getMessage());
        }
    }

    @Test
    void aClientSaysWhenAForeignListenerAnswersGarbage() throws Exception {
        try (ServerSocket foreign = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread t = Thread.ofVirtual().start(() -> {
                try (var s = foreign.accept()) {
                    s.getOutputStream().write(new byte[] {'H', 'T', 'T', 'P', '/', '1', '.', '1'});
                    s.getOutputStream().flush();
                    s.getInputStream().read();
                } catch (IOException ignored) {
                    // test ends
                }
            });
            JcclException e = assertThrows(JcclException.class,
                    () -> TcpStore.open("127.0.0.1", foreign.getLocalPort(), false, null, T));
            assertTrue(e.getMessage().contains("the process at 127.0.0.1:" + foreign.getLocalPort()
                    + " is not a jccl store"), e.getMessage());
            t.join(2000);
        }
    }

    @Test
    void aSilentForeignListenerFailsTheClientAtItsDeadline() throws Exception {
        // accepts, then says nothing: the handshake ends at the 2 s deadline, not after a fixed 15 s
        try (ServerSocket foreign = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            List<java.net.Socket> held = new java.util.concurrent.CopyOnWriteArrayList<>();
            Thread t = Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        held.add(foreign.accept());
                    }
                } catch (IOException ignored) {
                    // closed: test ends
                }
            });
            Duration deadline = Duration.ofSeconds(2);
            long t0 = System.nanoTime();
            CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                    () -> TcpStore.connect("127.0.0.1", foreign.getLocalPort(), null, deadline));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(e.getMessage().contains("the process at 127.0.0.1:" + foreign.getLocalPort()
                    + " is not a jccl store"), e.getMessage());
            assertTrue(ms >= 1_900 && ms < 3 * deadline.toMillis(), "failed after " + ms + " ms");
            foreign.close();
            t.join(2000);
            for (java.net.Socket s : held) {
                s.close();
            }
        }
    }

    @Test
    void rankZeroOnAnotherHostThanTheStoreAddressTimesOutClearly() {
        // 192.0.2.1 (TEST-NET-1) is no address of this machine: rank 0 cannot serve there
        long t0 = System.nanoTime();
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                () -> TcpStore.open("192.0.2.1", 29999, true, null, Duration.ofMillis(500)));
        assertTrue(e.getMessage().contains("192.0.2.1:29999"), e.getMessage());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5));
    }

    @Test
    void clientsRetryUntilRankZeroComesUp() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        CompletableFuture<Store> peer = CompletableFuture.supplyAsync(
                () -> TcpStore.open("127.0.0.1", port, false, "tok", Duration.ofSeconds(10)), VT);
        Thread.sleep(300);
        assertFalse(peer.isDone());
        try (Store host = TcpStore.open("127.0.0.1", port, true, "tok", T)) {
            try (Store p = peer.get(5, TimeUnit.SECONDS)) {
                p.set("hello", b("rank1"));
                assertArrayEquals(b("rank1"), host.get("hello", T));
            }
        }
    }

    @Test
    void ranksRendezvousLikeJcclInit() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        int n = 8;
        List<CompletableFuture<Long>> ranks = new ArrayList<>();
        for (int r = n - 1; r >= 0; r--) { // rank 0 last: the others retry until it serves
            int rank = r;
            ranks.add(CompletableFuture.supplyAsync(() -> {
                try (Store s = TcpStore.open("127.0.0.1", port, rank == 0, "job", T)) {
                    s.set("addr/" + rank, b("rank" + rank));
                    long arrived = s.add("barrier", 1);
                    List<String> all = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        all.add("addr/" + i);
                    }
                    s.wait(all, T);
                    for (int i = 0; i < n; i++) {
                        assertArrayEquals(b("rank" + i), s.get("addr/" + i, T));
                    }
                    return arrived;
                }
            }, VT));
        }
        long sum = 0;
        for (CompletableFuture<Long> f : ranks) {
            sum += f.get(20, TimeUnit.SECONDS);
        }
        assertEquals((long) n * (n + 1) / 2, sum, "every rank got a distinct arrival number");
    }

    @Test
    void hostingStoreWaitsBrieflyForPeersBeforeStopping() throws Exception {
        Store host = TcpStore.open("127.0.0.1", 0, true, null, T);
        int port = ((TcpStore) host).server().port();
        TcpStore peer = TcpStore.connect("127.0.0.1", port, null, T);
        CountDownLatch closing = new CountDownLatch(1);
        CompletableFuture<Void> closer = CompletableFuture.runAsync(() -> {
            closing.countDown();
            host.close();
        }, VT);
        closing.await();
        Thread.sleep(100);
        // the peer's last operations still work while rank 0 closes
        peer.set("bye", b("1"));
        assertArrayEquals(b("1"), peer.get("bye", T));
        peer.close();
        closer.get(5, TimeUnit.SECONDS);
    }

    @Test
    void connectionLimitIsEnforced() throws Exception {
        try (TcpStoreServer small = TcpStoreServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), null,
                new TcpStoreServer.Limits(2, Duration.ofSeconds(5), Duration.ofSeconds(5), 16))) {
            TcpStore a = client(small, null);
            TcpStore b2 = client(small, null);
            assertThrows(CollectiveTimeoutException.class,
                    () -> TcpStore.connect("127.0.0.1", small.port(), null, Duration.ofMillis(300)));
            a.close();
            // a slot frees up
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (small.connectionCount() > 1 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            TcpStore c = client(small, null);
            c.set("k", b("v"));
            assertArrayEquals(b("v"), b2.get("k", T));
        }
    }

    @Test
    void tooManyWaitersOnOneConnectionIsAnErrorNotAHang() throws Exception {
        try (TcpStoreServer small = TcpStoreServer.start(null, null,
                new TcpStoreServer.Limits(16, Duration.ofSeconds(5), Duration.ofSeconds(5), 2))) {
            TcpStore c = client(small, null);
            CompletableFuture<byte[]> w1 = CompletableFuture.supplyAsync(() -> c.get("a", T), VT);
            CompletableFuture<byte[]> w2 = CompletableFuture.supplyAsync(() -> c.get("b", T), VT);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (small.waiterCount() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(2, small.waiterCount());
            JcclException e = assertThrows(JcclException.class, () -> c.get("c", T));
            assertFalse(e instanceof CollectiveTimeoutException);
            assertTrue(e.getMessage().contains("too many pending"), e.getMessage());
            c.set("a", b("1"));
            c.set("b", b("2"));
            assertArrayEquals(b("1"), w1.get(5, TimeUnit.SECONDS));
            assertArrayEquals(b("2"), w2.get(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void prefixStoreOverTcp() {
        TcpStore c = client();
        PrefixStore p = new PrefixStore("job/c1/", c);
        p.set("x", b("1"));
        assertArrayEquals(b("1"), c.get("job/c1/x", T));
        assertEquals(3, p.add("n", 3));
        p.close();
        c.set("still", b("open"));
    }
}
