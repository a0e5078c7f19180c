package org.jccl.host.tcp;

import org.jccl.host.engine.OpCode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.ReduceOp;
import org.jccl.bootstrap.Store;
import org.jccl.bootstrap.TcpStore;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.host.tune.Tuner;
import org.junit.jupiter.api.Test;

/** The TCP transport on its own: the token handshake, strangers, frame checks, a peer that leaves, settings. */
class TcpTransportTest {

    interface Body<T> {
        T run(int rank, Store store) throws Exception;
    }

    /** Runs {@code n} threads, each with its own store client; returns each result or the exception it threw. */
    static List<Object> ranks(int n, Body<?> body) throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), null)) {
            ExecutorService pool = Executors.newFixedThreadPool(n + 1);
            try {
                List<Future<Object>> fs = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    int rank = r;
                    fs.add(pool.submit(() -> {
                        try (Store s = TcpStore.connect("127.0.0.1", server.port(), null, Duration.ofSeconds(30))) {
                            return body.run(rank, s);
                        } catch (Exception e) {
                            return e;
                        }
                    }));
                }
                List<Object> out = new ArrayList<>();
                for (Future<Object> f : fs) {
                    out.add(f.get(60, TimeUnit.SECONDS));
                }
                return out;
            } finally {
                pool.shutdownNow();
            }
        }
    }

    static TcpTransport open(int rank, int n, Store s, String token, Duration timeout) {
        return TcpTransport.open("test", rank, n, s, timeout, token, TcpConfig.defaults(), "127.0.0.1", p -> p != rank,
                p -> true, n);
    }

    @Test
    void aRankWithAnotherTokenIsRefusedNamingTheToken() throws Exception {
        List<Object> out = ranks(2, (r, s) -> {
            try (TcpTransport t = open(r, 2, s, r == 0 ? "secret" : "guess", Duration.ofSeconds(3))) {
                return "connected";
            }
        });
        assertInstanceOf(JcclException.class, out.get(1), String.valueOf(out.get(1)));
        assertTrue(((Exception) out.get(1)).getMessage().contains("rejected the job token"), String.valueOf(out.get(1)));
        // the acceptor waits for a proper rank 1 until its deadline and names it
        assertInstanceOf(CollectiveTimeoutException.class, out.get(0), String.valueOf(out.get(0)));
        assertEquals(List.of(1), ((CollectiveTimeoutException) out.get(0)).missingRanks());
    }

    @Test
    void aRankWithoutTheTokenIsToldToSetIt() throws Exception {
        List<Object> out = ranks(2, (r, s) -> {
            try (TcpTransport t = open(r, 2, s, r == 0 ? "secret" : null, Duration.ofSeconds(3))) {
                return "connected";
            }
        });
        assertTrue(((Exception) out.get(1)).getMessage().contains("JCCL_TOKEN"), String.valueOf(out.get(1)));
    }

    @Test
    void aStrangerIsRefusedWhileTheRanksConnect() throws Exception {
        List<Object> out = ranks(2, (r, s) -> {
            if (r == 1) {
                // before connecting, a stranger knocks at rank 0 and sends garbage
                String[] addr = new String(s.get("tcp/addr/0", Duration.ofSeconds(10)), StandardCharsets.UTF_8).split(" ");
                try (Socket x = new Socket(addr[0], Integer.parseInt(addr[1]))) {
                    OutputStream o = x.getOutputStream();
                    o.write(new byte[64]);
                    o.flush();
                    x.getInputStream().readNBytes(41); // welcome and refusal, then the acceptor closes
                }
            }
            try (TcpTransport t = open(r, 2, s, "tok", Duration.ofSeconds(20))) {
                return "connected";
            }
        });
        assertEquals(List.of("connected", "connected"), out);
    }

    @Test
    void framesOfAnotherStepOrSizeAreAMismatchNotData() throws Exception {
        List<Object> out = ranks(2, (r, s) -> {
            try (TcpTransport t = open(r, 2, s, null, Duration.ofSeconds(10)); Arena a = Arena.ofConfined()) {
                MemorySegment m = a.allocate(4096);
                t.call.set(1, OpCode.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, -1, 100, Duration.ofSeconds(10).toNanos());
                if (r == 0) {
                    t.await(t.send(1, m, 0, 400, 7));
                    return "sent";
                }
                t.await(t.recv(0, m, 0, 400, 8)); // another step
                return "received";
            }
        });
        assertEquals("sent", out.get(0));
        assertInstanceOf(CollectiveMismatchException.class, out.get(1), String.valueOf(out.get(1)));
        assertTrue(((Exception) out.get(1)).getMessage().contains("another algorithm step"), String.valueOf(out.get(1)));
    }

    @Test
    void aPeerThatClosesEndsTheWaitNamingIt() throws Exception {
        long t0 = System.nanoTime();
        List<Object> out = ranks(2, (r, s) -> {
            try (TcpTransport t = open(r, 2, s, null, Duration.ofSeconds(30)); Arena a = Arena.ofConfined()) {
                MemorySegment m = a.allocate(64);
                t.call.set(1, OpCode.BARRIER, DataType.INT8, null, -1, 0, Duration.ofSeconds(30).toNanos());
                if (r == 1) {
                    Thread.sleep(300);
                    return "left"; // closes without taking part
                }
                t.await(t.recv(1, m, 0, 0, 1));
                return "received";
            }
        });
        assertEquals("left", out.get(1));
        PeerFailureException e = assertInstanceOf(PeerFailureException.class, out.get(0), String.valueOf(out.get(0)));
        assertEquals(1, e.rank());
        assertTrue(e.getMessage().contains("closed the communicator"), e.getMessage());
        assertTrue((System.nanoTime() - t0) / 1e9 < 15, "the close must end the wait, not the 30 s deadline");
    }

    @Test
    void interfacesAndSettingsAreChosenOrRefusedClearly() {
        assertTrue(NetInterfaces.choose(null, "127.0.0.1").isLoopbackAddress());
        assertTrue(NetInterfaces.choose("lo", null).isLoopbackAddress());
        assertTrue(NetInterfaces.choose("=lo", null).isLoopbackAddress());
        JcclException none = assertThrows(JcclException.class, () -> NetInterfaces.choose("=nosuchif9", null));
        assertTrue(none.getMessage().contains("JCCL_SOCKET_IFNAME") && none.getMessage().contains("lo["), none.getMessage());
        IllegalArgumentException t = assertThrows(IllegalArgumentException.class,
                () -> TcpConfig.Transport.parse("infiniband", "JCCL_TRANSPORT"));
        assertTrue(t.getMessage().contains("auto") && t.getMessage().contains("tcp") && t.getMessage().contains("shm"), t.getMessage());
        assertEquals(TcpConfig.Transport.TCP, TcpConfig.Transport.parse(" TCP ", "x"));
        IllegalArgumentException k = assertThrows(IllegalArgumentException.class,
                () -> TcpConfig.fromEnv(java.util.Map.of("JCCL_SOCKETS_PER_PEER", "0")));
        assertTrue(k.getMessage().contains("JCCL_SOCKETS_PER_PEER"), k.getMessage());
        assertEquals(4, TcpConfig.fromEnv(java.util.Map.of("JCCL_SOCKETS_PER_PEER", "4")).socketsPerPeer());
        assertEquals(7000, TcpConfig.fromEnv(java.util.Map.of("JCCL_TCP_SPIN_US", "7")).spinNanos(1000));
    }

    /**
     * Large payloads go straight from and into the caller's native memory through ByteBuffer views
     * found by address range: slices at any offset of a buffer seen before, the same memory after
     * its arena closed and a new one took its place, a confined arena of this thread: every byte
     * lands where it belongs.
     */
    @Test
    void payloadsReadAndWrittenInPlaceLandWhereTheyBelongWhateverTheSlice() throws Exception {
        int total = 1 << 20;
        long[][] cuts = {{0, total}, {4096, 65536}, {12345, 300_000}, {total - 70_000, 70_000}, {0, 16384}, {777, 16384}};
        List<Object> out = ranks(2, (r, s) -> {
            try (TcpTransport t = open(r, 2, s, null, Duration.ofSeconds(20))) {
                long seq = 0;
                for (int round = 0; round < 3; round++) {
                    // round 0: one shared arena; round 1: a new arena (the old one closed: maybe the same
                    // addresses); round 2: a confined arena of this thread
                    try (Arena a = round == 2 ? Arena.ofConfined() : Arena.ofShared()) {
                        MemorySegment buf = a.allocate(total, 64);
                        for (long[] cut : cuts) {
                            t.call.set(++seq, OpCode.BROADCAST, DataType.UINT8, null, 0, cut[1],
                                    Duration.ofSeconds(20).toNanos());
                            MemorySegment part = buf.asSlice(cut[0], cut[1]);
                            if (r == 0) {
                                for (long i = 0; i < cut[1]; i++) {
                                    part.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seq));
                                }
                                // the whole slice, then its second half at an offset of the same slice
                                t.await(t.send(1, part, 0, cut[1], 1));
                                t.await(t.send(1, part, cut[1] / 2, cut[1] - cut[1] / 2, 2));
                            } else {
                                buf.fill((byte) 0);
                                t.await(t.recv(0, part, 0, cut[1], 1));
                                for (long i = 0; i < cut[1]; i++) {
                                    assertEquals((byte) (i * 31 + seq), part.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i),
                                            "round " + round + " cut " + cut[0] + "+" + cut[1] + " byte " + i);
                                }
                                assertEquals(-1L, buf.asSlice(0, cut[0]).mismatch(MemorySegment.ofArray(new byte[(int) cut[0]])),
                                        "bytes before the slice were written");
                                long half = cut[1] - cut[1] / 2;
                                MemorySegment other = buf.asSlice(total - half, half); // lands at the end of the buffer
                                t.await(t.recv(0, other, 0, half, 2));
                                for (long i = 0; i < half; i++) {
                                    assertEquals((byte) ((i + cut[1] / 2) * 31 + seq), other.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i));
                                }
                            }
                        }
                    }
                }
                return "ok";
            }
        });
        assertEquals(List.of("ok", "ok"), out);
    }

    @Test
    void theTunerKnowsTheTcpAlgorithmsAndListsThemAll() {
        assertEquals(Tuner.AllReduceAlgo.RING, new Tuner("ring", 0).tcpAllReduce(8, 4, 4));
        assertEquals(Tuner.AllReduceAlgo.RHD, new Tuner("RHD", 0).tcpAllReduce(1 << 30, 4, 4));
        assertEquals(Tuner.AllReduceAlgo.RING, new Tuner("rsag", 0).tcpAllReduce(8, 4, 4));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Tuner("tree", 0));
        for (String name : new String[] {"oneshot", "rsag", "ring", "rhd"}) {
            assertTrue(e.getMessage().contains(name), e.getMessage());
        }
        Tuner auto = new Tuner(null, 32 << 10);
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, auto.tcpAllReduce(8, 8, 8));
        assertEquals(Tuner.AllReduceAlgo.RHD, auto.tcpAllReduce(256 << 10, 8, 8));
        assertEquals(Tuner.AllReduceAlgo.RING, auto.tcpAllReduce(256 << 10, 8, 2)); // ranks share hosts
        assertEquals(Tuner.AllReduceAlgo.RING, auto.tcpAllReduce(64 << 20, 8, 8));
        // two ranks: one-shot sends no more than the ring, in one step instead of two, up to 128 KiB
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, auto.tcpAllReduce(128 << 10, 2, 2));
        assertEquals(Tuner.AllReduceAlgo.RING, auto.tcpAllReduce((128 << 10) + 4, 2, 2));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, auto.tcpAllReduce(16 << 10, 4, 4));
        assertEquals(Tuner.AllReduceAlgo.RHD, auto.tcpAllReduce(64 << 10, 4, 4));
    }
}
