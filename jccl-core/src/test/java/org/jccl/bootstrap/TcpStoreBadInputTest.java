package org.jccl.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.jccl.bootstrap.StoreProtocol.*;
import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.jccl.bootstrap.StoreProtocol.Frame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The server against raw sockets that break the protocol: each must lose its own connection
 * only, while a well-behaved client on another connection (opened before) keeps working.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class TcpStoreBadInputTest {
    static final Duration T = Duration.ofSeconds(10);
    /** Blocking test tasks run on virtual threads (the common pool may have a single worker). */
    static final java.util.concurrent.Executor VT = Executors.newVirtualThreadPerTaskExecutor();
    static final String TOKEN = "job-token";
    static final TcpStoreServer.Limits LIMITS = new TcpStoreServer.Limits(256, Duration.ofMillis(500), Duration.ofSeconds(2), 1024);

    TcpStoreServer open;
    TcpStoreServer secure;
    TcpStore good;
    TcpStore goodSecure;

    @BeforeEach
    void start() {
        InetSocketAddress lo = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        open = TcpStoreServer.start(lo, null, LIMITS);
        secure = TcpStoreServer.start(lo, TOKEN, LIMITS);
        good = TcpStore.connect("127.0.0.1", open.port(), null, T);
        goodSecure = TcpStore.connect("127.0.0.1", secure.port(), TOKEN, T);
        good.set("seed", "1".getBytes(UTF_8));
        goodSecure.set("seed", "1".getBytes(UTF_8));
    }

    @AfterEach
    void stop() {
        good.close();
        goodSecure.close();
        open.close();
        secure.close();
    }

    /** The well-behaved clients still work, and fresh ones can connect. */
    void othersStillServed() {
        long n = good.add("alive", 1);
        assertEquals(n, good.add("alive", 0));
        assertArrayEquals("1".getBytes(UTF_8), good.get("seed", T));
        assertArrayEquals("1".getBytes(UTF_8), goodSecure.get("seed", T));
        try (TcpStore fresh = TcpStore.connect("127.0.0.1", open.port(), null, T);
             TcpStore freshSecure = TcpStore.connect("127.0.0.1", secure.port(), TOKEN, T)) {
            fresh.set("fresh", new byte[] {1});
            freshSecure.set("fresh", new byte[] {1});
        }
    }

    static Socket raw(TcpStoreServer s) throws IOException {
        Socket sock = new Socket();
        sock.connect(s.address(), 2000);
        sock.setSoTimeout(5000);
        return sock;
    }

    static byte[] hello(int magic, int version) {
        return new byte[] {(byte) (magic >>> 24), (byte) (magic >>> 16), (byte) (magic >>> 8), (byte) magic,
                (byte) (version >>> 8), (byte) version, 0, 0};
    }

    /** Handshakes on a raw socket (with the token proof when {@code token} is not null). */
    static Socket handshaken(TcpStoreServer s, String token) throws IOException {
        Socket sock = raw(s);
        sock.getOutputStream().write(hello(MAGIC, VERSION));
        DataInputStream in = new DataInputStream(sock.getInputStream());
        byte[] welcome = new byte[HELLO_BYTES];
        in.readFully(welcome);
        if ((welcome[7] & FLAG_AUTH) != 0) {
            byte[] nonce = new byte[NONCE_BYTES];
            in.readFully(nonce);
            sock.getOutputStream().write(proof(token, nonce));
            assertEquals(AUTH_OK, in.read());
        }
        return sock;
    }

    /** True when the server closed the socket (EOF or reset) within 5 s, after reading all it sent. */
    static boolean closedByServer(Socket sock) {
        try {
            InputStream in = sock.getInputStream();
            byte[] buf = new byte[4096];
            while (true) {
                int n = in.read(buf);
                if (n < 0) {
                    return true;
                }
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    /** Writes bytes to a stream. */
    interface Writer {
        void write(DataOutputStream o) throws IOException;
    }

    /** The bytes {@code w} writes. */
    static byte[] bytes(Writer w) {
        ByteArrayOutputStream bo = new ByteArrayOutputStream();
        try {
            w.write(new DataOutputStream(bo));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return bo.toByteArray();
    }

    static byte[] frame(int id, int op, byte[] body) {
        return bytes(o -> {
            o.writeInt(MIN_LENGTH + body.length);
            o.writeInt(id);
            o.writeByte(op);
            o.write(body);
        });
    }

    /** Each of {@code bad}, sent on a connection of its own, makes the server close it; then the others are still served. */
    void assertEachClosesItsConnection(List<byte[]> bad) throws IOException {
        for (byte[] f : bad) {
            try (Socket s = handshaken(open, null)) {
                s.getOutputStream().write(f);
                assertTrue(closedByServer(s));
            }
        }
        othersStillServed();
    }

    static byte[] keyBody(String key) {
        byte[] k = key.getBytes(UTF_8);
        byte[] b = new byte[2 + k.length];
        b[0] = (byte) (k.length >>> 8);
        b[1] = (byte) k.length;
        System.arraycopy(k, 0, b, 2, k.length);
        return b;
    }

    @Test
    void rawClientThatFollowsTheProtocolIsServed() throws IOException {
        try (Socket s = handshaken(open, null)) {
            s.getOutputStream().write(frame(77, OP_TRY_GET, keyBody("seed")));
            Frame f = StoreProtocol.readFrame(new DataInputStream(s.getInputStream()));
            assertEquals(77, f.id());
            assertEquals(ST_OK, f.code());
            assertArrayEquals("1".getBytes(UTF_8), f.body().readBytes("value"));
        }
    }

    @Test
    void wrongMagic() throws IOException {
        try (Socket s = raw(open)) {
            s.getOutputStream().write("GET / HTTP/1.1\r\n\r\n".getBytes(UTF_8));
            assertTrue(closedByServer(s));
        }
        othersStillServed();
    }

    @Test
    void wrongVersionGetsTheServersVersionThenClose() throws IOException {
        try (Socket s = raw(open)) {
            s.getOutputStream().write(hello(MAGIC, 99));
            DataInputStream in = new DataInputStream(s.getInputStream());
            assertEquals(MAGIC, in.readInt());
            assertEquals(VERSION, in.readShort());
            assertTrue(closedByServer(s));
        }
        othersStillServed();
    }

    @Test
    void hugeLength() throws IOException {
        for (int len : new int[] {MAX_FRAME + 1, -1, Integer.MAX_VALUE, 0, MIN_LENGTH - 1}) {
            try (Socket s = handshaken(open, null)) {
                ByteArrayOutputStream bo = new ByteArrayOutputStream();
                DataOutputStream o = new DataOutputStream(bo);
                o.writeInt(len);
                o.writeInt(1);
                o.writeByte(OP_NUM_KEYS);
                try {
                    s.getOutputStream().write(bo.toByteArray());
                } catch (IOException e) {
                    // the server may have closed already
                }
                assertTrue(closedByServer(s), "length " + len);
            }
        }
        othersStillServed();
    }

    @Test
    void truncatedFrameThenSilence() throws IOException {
        try (Socket s = handshaken(open, null)) {
            byte[] f = frame(1, OP_SET, new byte[100]);
            s.getOutputStream().write(f, 0, 30); // claims 105 bytes, sends 26, then waits
            s.getOutputStream().flush();
            // the server's frame timeout (2 s here) closes it
            s.setSoTimeout(8000);
            assertTrue(closedByServer(s));
        }
        othersStillServed();
    }

    @Test
    void truncatedFrameThenHangUp() throws IOException {
        try (Socket s = handshaken(open, null)) {
            byte[] f = frame(1, OP_SET, new byte[100]);
            s.getOutputStream().write(f, 0, 30);
            s.shutdownOutput();
            assertTrue(closedByServer(s));
        }
        othersStillServed();
    }

    @Test
    void garbageAfterHandshake() throws IOException {
        Random r = new Random(42);
        byte[] junk = new byte[64];
        r.nextBytes(junk);
        junk[0] = 0; // a small LENGTH so it is the body that fails
        junk[1] = 0;
        junk[2] = 0;
        junk[3] = 20;
        junk[8] = 99; // unknown opcode
        try (Socket s = handshaken(open, null)) {
            s.getOutputStream().write(junk);
            assertTrue(closedByServer(s));
        }
        othersStillServed();
    }

    @Test
    void malformedBodies() throws IOException {
        List<byte[]> bad = new ArrayList<>();
        bad.add(frame(1, OP_SET, keyBody("k")));                                    // value missing
        bad.add(frame(1, OP_TRY_GET, new byte[] {0, 0}));                           // empty key
        bad.add(frame(1, OP_TRY_GET, new byte[] {0x10, 0x01, 'a'}));                // key length over 4096
        bad.add(frame(1, OP_TRY_GET, new byte[] {0, 2, (byte) 0xC3, (byte) 0x28})); // not UTF-8
        byte[] extra = keyBody("k");
        bad.add(frame(1, OP_TRY_GET, java.util.Arrays.copyOf(extra, extra.length + 3))); // trailing bytes
        byte[] setBody = keyBody("k");
        byte[] withLen = java.util.Arrays.copyOf(setBody, setBody.length + 4);
        withLen[setBody.length] = 0x7F; // value length ~2 GiB
        bad.add(frame(1, OP_SET, withLen));
        bad.add(frame(1, OP_WAIT, new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})); // zero keys
        bad.add(frame(1, OP_NUM_KEYS, new byte[] {1}));                              // NUM_KEYS has no body
        bad.add(frame(1, 0, new byte[0]));                                           // opcode 0
        bad.add(frame(1, 200, new byte[0]));                                         // opcode 200
        assertEachClosesItsConnection(bad);
    }

    @Test
    void malformedHeartbeatsCloseOnlyTheirConnection() throws IOException {
        List<byte[]> bad = new ArrayList<>();
        bad.add(frame(1, OP_HEARTBEAT, HeartbeatTest.heartbeatBody("s/", -1, 100, 0, 0)));  // negative rank
        bad.add(frame(1, OP_HEARTBEAT, HeartbeatTest.heartbeatBody("s/", 1, 0, 0, 0)));    // interval 0
        bad.add(frame(1, OP_HEARTBEAT, HeartbeatTest.heartbeatBody("s/", 1, -5, 0, 0)));   // interval < 0
        bad.add(frame(1, OP_HEARTBEAT, HeartbeatTest.heartbeatBody("s/", 1, 100, 0x80, 0))); // unknown flag
        byte[] ok = HeartbeatTest.heartbeatBody("s/", 1, 100, 0, 0);
        bad.add(frame(1, OP_HEARTBEAT, java.util.Arrays.copyOf(ok, ok.length + 1)));    // trailing byte
        bad.add(frame(1, OP_HEARTBEAT, java.util.Arrays.copyOf(ok, ok.length - 3)));    // cut short
        bad.add(frame(1, OP_HEARTBEAT, new byte[] {0, 0}));                              // empty scope
        assertEachClosesItsConnection(bad);
        // none of them was tied to a rank, so none is a death
        assertTrue(open.deadRanks("s/").isEmpty());
        // a connection tied to rank 1 that then speaks for rank 2 gets an error and stays open
        try (Socket s = handshaken(open, null)) {
            assertEquals(ST_OK, HeartbeatTest.beatOn(s, "s/", 1));
            assertEquals(ST_ERROR, HeartbeatTest.beatOn(s, "s/", 2));
            assertEquals(ST_OK, HeartbeatTest.beatOn(s, "s/", 1));
        }
        // ... and its end is rank 1's death (no goodbye)
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (open.deadRanks("s/").isEmpty() && System.nanoTime() < end) {
            Thread.onSpinWait();
        }
        assertTrue(open.deadRanks("s/").containsKey(1), open.deadRanks("s/")::toString);
        othersStillServed();
    }

    @Test
    void framesWithoutAuthenticationAreNotServed() throws IOException {
        // skip the proof and send a request: the server takes those bytes as a (wrong) proof and closes
        try (Socket s = raw(secure)) {
            s.getOutputStream().write(hello(MAGIC, VERSION));
            byte[] f = frame(1, OP_SET, keyBody("pwned")); // 16 bytes: with 16 more, exactly a proof's length
            s.getOutputStream().write(concat(f, new byte[NONCE_BYTES - f.length]));
            DataInputStream in = new DataInputStream(s.getInputStream());
            byte[] welcome = new byte[HELLO_BYTES + NONCE_BYTES];
            in.readFully(welcome);
            assertEquals(FLAG_AUTH, welcome[7]);
            assertEquals(AUTH_REJECTED, in.read());
            assertTrue(closedByServer(s));
        }
        // a proof made with the wrong token
        try (Socket s = raw(secure)) {
            s.getOutputStream().write(hello(MAGIC, VERSION));
            DataInputStream in = new DataInputStream(s.getInputStream());
            byte[] welcome = new byte[HELLO_BYTES + NONCE_BYTES];
            in.readFully(welcome);
            byte[] nonce = java.util.Arrays.copyOfRange(welcome, HELLO_BYTES, welcome.length);
            s.getOutputStream().write(proof("not-the-token", nonce));
            assertEquals(AUTH_REJECTED, in.read());
            assertTrue(closedByServer(s));
        }
        assertNull(goodSecure.tryGet("pwned"));
        othersStillServed();
    }

    @Test
    void silentClientLosesItsSlotAfterTheHandshakeTimeout() throws Exception {
        try (Socket silent = raw(secure); Socket halfHello = raw(open)) {
            halfHello.getOutputStream().write(hello(MAGIC, VERSION), 0, 3);
            long t0 = System.nanoTime();
            assertTrue(closedByServer(silent));
            assertTrue(closedByServer(halfHello));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms < 4000, "took " + ms + " ms");
        }
        othersStillServed();
    }

    @Test
    void slowlorisHandshakeIsBoundedAsAWhole() throws Exception {
        try (Socket s = raw(open)) {
            long t0 = System.nanoTime();
            byte[] h = hello(MAGIC, VERSION);
            boolean closed = false;
            // one byte every 300 ms: each read is within the timeout, the whole is not
            for (int i = 0; i < h.length && !closed; i++) {
                try {
                    s.getOutputStream().write(h[i]);
                    s.getOutputStream().flush();
                } catch (IOException e) {
                    closed = true;
                }
                Thread.sleep(300);
            }
            assertTrue(closed || closedByServer(s));
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) < 4000);
        }
        othersStillServed();
    }

    @Test
    void waitersOfAClosedConnectionAreDropped() throws Exception {
        try (Socket s = handshaken(open, null)) {
            DataOutputStream o = new DataOutputStream(s.getOutputStream());
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            body.write(keyBody("dropped"));
            body.write(new byte[] {0, 0, 0, 0, 0, 0, 0x27, 0x10}); // 10 s
            o.write(frame(5, OP_GET, body.toByteArray()));
            o.flush();
        }
        Thread.sleep(100);
        good.set("dropped", new byte[] {1}); // the waiter's connection is gone: nothing breaks
        othersStillServed();
    }

    @Test
    void fuzzForTwoSecondsThenAValidClientWorks() throws Exception {
        Random r = new Random(2026);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        int connections = 0;
        List<CompletableFuture<Void>> inFlight = new ArrayList<>();
        while (System.nanoTime() < end) {
            int kind = r.nextInt(6);
            byte[] payload;
            boolean handshake = kind >= 2;
            switch (kind) {
                case 0 -> { // random bytes instead of a hello
                    payload = new byte[1 + r.nextInt(64)];
                    r.nextBytes(payload);
                }
                case 1 -> { // truncated hello
                    payload = java.util.Arrays.copyOf(hello(MAGIC, VERSION), r.nextInt(HELLO_BYTES));
                }
                case 2 -> { // random bytes after the handshake
                    payload = new byte[1 + r.nextInt(256)];
                    r.nextBytes(payload);
                }
                case 3 -> { // a valid frame cut at a random point
                    byte[] f = frame(r.nextInt(), OP_SET, concat(keyBody("fz" + r.nextInt(10)), new byte[] {0, 0, 0, 4, 1, 2, 3, 4}));
                    payload = java.util.Arrays.copyOf(f, r.nextInt(f.length));
                }
                case 4 -> { // a valid frame with one byte flipped, then closed
                    byte[] f = frame(r.nextInt(), OP_SET, concat(keyBody("fz" + r.nextInt(10)), new byte[] {0, 0, 0, 4, 1, 2, 3, 4}));
                    f[r.nextInt(f.length)] ^= (byte) (1 << r.nextInt(8));
                    payload = f;
                }
                default -> { // random opcode with a random body of a consistent length
                    byte[] body = new byte[r.nextInt(40)];
                    r.nextBytes(body);
                    payload = frame(r.nextInt(), r.nextInt(256), body);
                }
            }
            TcpStoreServer target = r.nextBoolean() ? open : secure;
            Socket s = handshake && target == open ? handshaken(target, null) : raw(target);
            connections++;
            try {
                s.getOutputStream().write(payload);
                s.getOutputStream().flush();
            } catch (IOException ignored) {
                // the server may close first
            }
            // read what comes back without waiting for it, then hang up
            inFlight.add(CompletableFuture.runAsync(() -> {
                try (s) {
                    s.setSoTimeout(100);
                    s.getInputStream().read(new byte[1024]);
                } catch (IOException ignored) {
                    // expected
                }
            }, VT));
            if (inFlight.size() > 64) {
                inFlight.remove(0).join();
            }
            if (connections % 50 == 0) {
                othersStillServedQuick();
            }
        }
        inFlight.forEach(CompletableFuture::join);
        assertTrue(connections > 50, "only " + connections + " fuzz connections");
        othersStillServed();
        // the server dropped every fuzz connection (only the two good clients and nothing else remain)
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while ((open.connectionCount() > 1 || secure.connectionCount() > 1) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(1, open.connectionCount());
        assertEquals(1, secure.connectionCount());
    }

    void othersStillServedQuick() {
        good.add("alive", 1);
        goodSecure.add("alive", 1);
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] c = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }
}
