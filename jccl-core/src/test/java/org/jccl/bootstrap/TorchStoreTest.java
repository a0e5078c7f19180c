package org.jccl.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jccl.CollectiveTimeoutException;
import org.jccl.bootstrap.TorchStoreProtocol.Generation;
import org.jccl.internal.Json;
import org.jccl.testing.PythonTorch;
import org.jccl.testing.Require;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * PyTorch's TCPStore protocol: jccl's server answers the exact bytes a torch 1.13.1 client sent
 * (captured from Debian's python3-torch against torch's own server), and, where /usr/bin/python3
 * imports torch ({@code JCCL_REQUIRE=torch} makes its absence a failure), torch's client against
 * jccl's server and jccl's client against torch's server with every operation both sides have.
 */
class TorchStoreTest {
    private static final Duration T = Duration.ofSeconds(20);
    private static final HexFormat HEX = HexFormat.of();

    /**
     * A torch 1.13.1 client's requests and torch's server's answers, byte for byte (captured with a
     * proxy between {@code TCPStore(..., is_master=False)} and a torch server): each pair is what
     * the client sent, then what it got back ("" for none).
     */
    private static final String[][] TORCH_1_13_CONVERSATION = {
        {"030500000000000000696e69742f0100000000000000", "0100000000000000"},       // ADD init/ 1 -> 1
        {"0003000000000000002f6b6102000000000000007661", ""},                       // SET /ka "va"
        {"05010000000000000003000000000000002f6b61", "00"},                         // WAIT [/ka] -> STOP_WAITING
        {"0203000000000000002f6b61", "02000000000000007661"},                       // GET /ka -> "va"
        {"0304000000000000002f636e740500000000000000", "0500000000000000"},         // ADD /cnt 5 -> 5
        {"0204000000000000002f636e74", "010000000000000035"},                       // GET /cnt -> "5"
        {"0103000000000000002f6b610200000000000000766102000000000000007662", "02000000000000007662"}, // CAS hit
        {"0106000000000000002f6e6f6b6579000000000000000003000000000000006e6577", "03000000000000006e6577"}, // CAS absent, ""
        {"0107000000000000002f6e6f6b65793201000000000000007803000000000000006e6577", "010000000000000078"}, // CAS absent, "x"
        {"06", "0400000000000000"},                                                 // GETNUMKEYS -> 4: init/ /ka /cnt /nokey
        {"0803000000000000002f6b61", "0100000000000000"},                           // DELETE_KEY /ka -> 1
        {"0803000000000000002f6b61", "0000000000000000"},                           // DELETE_KEY /ka -> 0
    };

    @Test
    void answersATorch113ClientByteForByte() throws Exception {
        try (TorchStoreServer server = TorchStoreServer.start(new InetSocketAddress("127.0.0.1", 0));
             Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            for (String[] step : TORCH_1_13_CONVERSATION) {
                byte[] req = HEX.parseHex(step[0]);
                // a 1.x client sends the op byte alone first (MSG_MORE): the server must not care
                out.write(req, 0, 1);
                out.flush();
                out.write(req, 1, req.length - 1);
                out.flush();
                byte[] want = HEX.parseHex(step[1]);
                byte[] got = in.readNBytes(want.length);
                assertEquals(step[1], HEX.formatHex(got), "answer to " + step[0]);
            }
            assertEquals(3, server.keyCount(), "left: init/, /cnt, /nokey (/ka deleted, /nokey2 never stored)");
        }
    }

    @Test
    void answersATorch2ClientsHandshakeAndRequests() throws Exception {
        // From torch 2.x's TCPStore.cpp: VALIDATE (op 0, magic 0x3C85F7CE), PING (op 13, a nonce the
        // server echoes), then SET /foo "bar" (op 1), ADD /n 5 (op 4), GET /n (op 3).
        try (TorchStoreServer server = TorchStoreServer.start(new InetSocketAddress("127.0.0.1", 0));
             Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            out.write(HEX.parseHex("00cef7853c" + "0d78563412"));
            out.flush();
            assertEquals("78563412", HEX.formatHex(in.readNBytes(4)), "PING echoes the nonce");
            out.write(HEX.parseHex("01" + "0400000000000000" + "2f666f6f" + "0300000000000000" + "626172"));
            out.write(HEX.parseHex("04" + "0200000000000000" + "2f6e" + "0500000000000000"));
            out.flush();
            assertEquals("0500000000000000", HEX.formatHex(in.readNBytes(8)));
            out.write(HEX.parseHex("03" + "0200000000000000" + "2f6e"));
            out.flush();
            assertEquals("010000000000000035", HEX.formatHex(in.readNBytes(9)), "the counter reads back as ASCII \"5\"");
            try (TorchStore c = TorchStore.connect("127.0.0.1", server.port(), null, T)) {
                assertEquals(Generation.TORCH_2, c.generation());
                assertArrayEquals("bar".getBytes(StandardCharsets.UTF_8), c.get("foo", T), "the same keys as torch's client");
            }
        }
    }

    @Test
    void jcclClientAndServerInBothGenerations() throws Exception {
        for (Generation g : Generation.values()) {
            try (TorchStoreServer server = TorchStoreServer.start(new InetSocketAddress("127.0.0.1", 0));
                 TorchStore a = TorchStore.connect("127.0.0.1", server.port(), g, T);
                 TorchStore b = TorchStore.connect("127.0.0.1", server.port(), g, T)) {
                assertEquals(g, a.generation());
                a.set("k", new byte[] {1, 2, 3});
                assertArrayEquals(new byte[] {1, 2, 3}, b.get("k", T));
                assertArrayEquals(new byte[] {1, 2, 3}, b.tryGet("k"));
                assertNull(b.tryGet("absent"));
                assertEquals(5, a.add("c", 5));
                assertEquals(2, b.add("c", -3));
                assertArrayEquals("2".getBytes(StandardCharsets.US_ASCII), a.get("c", T), "counters are ASCII decimal");
                assertArrayEquals("x".getBytes(), a.compareSet("cas", null, "x".getBytes()));
                assertArrayEquals("y".getBytes(), b.compareSet("cas", "x".getBytes(), "y".getBytes()));
                assertArrayEquals("y".getBytes(), a.compareSet("cas", "x".getBytes(), "z".getBytes()), "no swap: the current value");
                assertArrayEquals("e".getBytes(), a.compareSet("none", "e".getBytes(), "z".getBytes()), "absent: torch answers expected");
                assertNull(a.tryGet("none"), "and stores nothing");
                assertEquals(3, a.numKeys());
                if (g == Generation.TORCH_2) {
                    assertEquals(List.of("/c", "/cas", "/k"), b.listKeys().stream().sorted().toList(), "wire keys");
                } else {
                    assertThrows(UnsupportedOperationException.class, b::listKeys);
                }
                assertTrue(a.delete("k"));
                assertFalse(a.delete("k"));
                // a wait that another client completes
                CompletableFuture<Void> w = CompletableFuture.runAsync(() -> a.wait(List.of("late1", "late2"), T));
                Thread.sleep(100);
                assertFalse(w.isDone());
                b.set("late1", new byte[0]);
                Thread.sleep(50);
                assertFalse(w.isDone(), "one key of two");
                b.set("late2", new byte[0]);
                w.get(10, TimeUnit.SECONDS);
                // a wait that times out names the missing key, and the client goes on (2.x cancels the
                // wait; 1.x cannot, and opens a new connection)
                CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                        () -> a.wait(List.of("late1", "never"), Duration.ofMillis(200)));
                assertTrue(e.getMessage().contains("[never]"), e.getMessage());
                a.set("after", "ok".getBytes());
                assertArrayEquals("ok".getBytes(), b.get("after", T));
                b.set("never", new byte[0]); // a late STOP_WAITING for the cancelled wait must not confuse a
                assertArrayEquals("ok".getBytes(), a.get("after", T));
                assertEquals(2, a.add("c", 0));
            }
        }
    }

    @Test
    void openServesAndClosesTheServer() throws Exception {
        int port = PythonTorch.freePort();
        try (Store s = TorchStore.open("127.0.0.1", port, true, null, T);
             TorchStore peer = TorchStore.connect("127.0.0.1", port, null, T)) {
            s.set("x", new byte[] {7});
            assertArrayEquals(new byte[] {7}, peer.get("x", T));
        }
        assertThrows(CollectiveTimeoutException.class, () -> TorchStore.connect("127.0.0.1", port, null, Duration.ofMillis(300)),
                "the server closed with the store that opened it");
    }

    @Test
    void badArgumentsNameTheFix() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TorchStore.connect("127.0.0.1", 0, null, T));
        assertTrue(e.getMessage().contains("MASTER_PORT"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> TorchStore.connect("", 29500, null, T));
        assertTrue(e.getMessage().contains("MASTER_ADDR"), e.getMessage());
    }

    /** Two ranks of {@code Jccl.init} with {@code JCCL_STORE_PROTOCOL=protocol} at {@code port}; each all-reduces. */
    private static void initTwoRanks(int port, String protocol, boolean served) throws Exception {
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            List<java.util.concurrent.Future<float[]>> fs = new java.util.ArrayList<>();
            for (int r = 0; r < 2; r++) {
                int rank = r;
                fs.add(pool.submit(() -> {
                    org.jccl.Options o = org.jccl.Options.of(rank, 2).withStore("127.0.0.1", port)
                            .withJobId("torchinit" + port).withTimeout(T).withHeartbeat(Duration.ZERO)
                            .withSetting("JCCL_STORE_PROTOCOL", protocol).withSetting("JCCL_STORE_SERVED", served ? "1" : "0")
                            .withSetting("JCCL_WARMUP", "0");
                    try (org.jccl.Communicator c = org.jccl.Jccl.init(o)) {
                        float[] v = {rank + 1, 10 * (rank + 1)};
                        c.allReduce(org.jccl.HostBuffer.of(v), org.jccl.ReduceOp.SUM);
                        return v;
                    }
                }));
            }
            for (java.util.concurrent.Future<float[]> f : fs) {
                assertArrayEquals(new float[] {3, 30}, f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void jcclInitWithTheTorchProtocolServedByRank0() throws Exception {
        int port = PythonTorch.freePort();
        initTwoRanks(port, "torch", false);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> org.jccl.Jccl.init(
                org.jccl.Options.of(0, 1).withSetting("JCCL_STORE_PROTOCOL", "pytorch")));
        assertTrue(e.getMessage().contains("JCCL_STORE_PROTOCOL=pytorch") && e.getMessage().contains("torch"), e.getMessage());
    }

    @Test
    void jcclInitOnTorchsServerWhileATorchClientWatches(@TempDir Path dir) throws Exception {
        Require.require("torch", PythonTorch.unavailable());
        int port = PythonTorch.freePort();
        // torch's server made with world_size=3 waits for 3 workers: itself and the two jccl ranks
        // (each counts itself, as torch clients do); then it waits for the key rank 1 writes as the
        // ranks meet
        try (PythonTorch.Script py = PythonTorch.Script.start(dir, "watch.py", """
                import sys, datetime, time
                import torch.distributed as d
                t0 = time.time()
                s = d.TCPStore("127.0.0.1", int(sys.argv[1]), 3, True, datetime.timedelta(seconds=60))
                print("WORKERS %.0f" % (time.time() - t0), flush=True)
                s.wait(["jccl/torchinit%s/c1/join/1" % sys.argv[1]], datetime.timedelta(seconds=30))
                print("SAW", s.num_keys() > 2, flush=True)
                sys.stdin.read()
                """, Integer.toString(port))) {
            initTwoRanks(port, torchGeneration() == Generation.TORCH_1 ? "torch1" : "torch2", true);
            String workers = py.nextLine();
            assertTrue(workers != null && workers.startsWith("WORKERS ") && Integer.parseInt(workers.substring(8)) < 30,
                    "torch's server counted the jccl ranks as workers (a 1.x server gives up silently after its 60 s "
                            + "timeout otherwise): " + workers);
            assertEquals("SAW True", py.nextLine(), "torch's client saw the key rank 1 wrote as it joined");
        }
    }

    // ------------------------------------------------------------------ against torch itself

    /** The store protocol generation of the installed torch (Debian's 1.13: TORCH_1). */
    private static Generation torchGeneration() {
        String v = PythonTorch.version();
        assertNotNull(v, "torch's version");
        return v.startsWith("1.") ? Generation.TORCH_1 : Generation.TORCH_2;
    }

    @SuppressWarnings("unchecked")
    private static java.util.Map<String, Object> jsonObject(String json) {
        return (java.util.Map<String, Object>) Json.parse(json);
    }

    private static String lastLine(String out) {
        String[] lines = out.strip().split("\n");
        return lines[lines.length - 1];
    }

    @Test
    void torchsClientAgainstJcclsServer(@TempDir Path dir) throws Exception {
        Require.require("torch", PythonTorch.unavailable());
        String client = """
                import sys, json, datetime
                import torch.distributed as d
                c = d.TCPStore("127.0.0.1", int(sys.argv[1]), 2, False, datetime.timedelta(seconds=20))
                out = {}
                out["get"] = c.get("fromjava").decode()
                c.set("frompy", b"py-value")
                out["add1"] = c.add("cnt", 5)
                out["add2"] = c.add("cnt", -2)
                out["cnt"] = c.get("cnt").decode()
                out["cas_absent_empty"] = c.compare_set("cas", b"", b"first").decode()
                out["cas_hit"] = c.compare_set("cas", b"first", b"second").decode()
                out["cas_miss"] = c.compare_set("cas", b"nope", b"third").decode()
                out["cas_absent_nonempty"] = c.compare_set("absent", b"x", b"y").decode()
                c.wait(["fromjava", "cnt"])
                out["numkeys"] = c.num_keys()
                out["del"] = c.delete_key("nothere")
                c.set("py-ready", b"1")
                c.wait(["java-late"])
                out["late"] = c.get("java-late").decode()
                try:
                    c.wait(["never"], datetime.timedelta(milliseconds=200))
                    out["wait_timeout"] = "returned"
                except Exception as e:
                    out["wait_timeout"] = type(e).__name__
                print(json.dumps(out))
                """;
        try (TorchStoreServer server = TorchStoreServer.start(new InetSocketAddress("127.0.0.1", 0));
             TorchStore j = TorchStore.connect("127.0.0.1", server.port(), null, T)) {
            j.set("fromjava", "hello".getBytes());
            java.util.Map<String, Object> r;
            try (PythonTorch.Script py = PythonTorch.Script.start(dir, "client.py", client, Integer.toString(server.port()))) {
                assertArrayEquals("1".getBytes(), j.get("py-ready", T));
                j.set("java-late", "late-value".getBytes());
                r = jsonObject(lastLine(py.finish()));
            }
            assertEquals("hello", r.get("get"));
            assertEquals(5L, ((Number) r.get("add1")).longValue());
            assertEquals(3L, ((Number) r.get("add2")).longValue());
            assertEquals("3", r.get("cnt"));
            assertEquals("first", r.get("cas_absent_empty"));
            assertEquals("second", r.get("cas_hit"));
            assertEquals("second", r.get("cas_miss"));
            assertEquals("x", r.get("cas_absent_nonempty"));
            // init/ (the torch client's ADD, made with a world size), /fromjava, /frompy, /cnt, /cas
            assertEquals(5L, ((Number) r.get("numkeys")).longValue());
            assertEquals(Boolean.FALSE, r.get("del"));
            assertEquals("late-value", r.get("late"));
            assertTrue(!"returned".equals(r.get("wait_timeout")), "a wait on a key nobody sets must time out: " + r);
            assertArrayEquals("py-value".getBytes(), j.get("frompy", T));
            assertArrayEquals("3".getBytes(), j.get("cnt", T));
            assertNull(j.tryGet("absent"), "compare_set on an absent key with an expected value stores nothing");
        }
    }

    @Test
    void jcclsClientAgainstTorchsServer(@TempDir Path dir) throws Exception {
        Require.require("torch", PythonTorch.unavailable());
        int port = PythonTorch.freePort();
        try (PythonTorch.Script py = PythonTorch.Script.start(dir, "server.py", """
                import sys, json, datetime
                import torch.distributed as d
                s = d.TCPStore("127.0.0.1", int(sys.argv[1]), 1, True, datetime.timedelta(seconds=30), wait_for_workers=False)
                s.set("frompy", b"abc")
                print("READY", flush=True)
                s.wait(["java-done"], datetime.timedelta(seconds=30))
                print(json.dumps({"fromjava": s.get("fromjava").decode(), "cnt": s.get("cnt").decode(),
                                  "cas": s.get("cas").decode(), "numkeys": s.num_keys()}))
                """, Integer.toString(port))) {
            py.awaitLine("READY");
            try (TorchStore j = TorchStore.connect("127.0.0.1", port, null, T)) {
                // Debian's torch is 1.13: the 2.x handshake is refused, and the client speaks 1.x;
                // torch 2.x (the GPU machine's) answers it
                assertEquals(torchGeneration(), j.generation());
                assertArrayEquals("abc".getBytes(), j.get("frompy", T));
                j.set("fromjava", "xyz".getBytes());
                assertEquals(7, j.add("cnt", 7));
                assertEquals(8, j.add("cnt", 1));
                assertArrayEquals("8".getBytes(), j.get("cnt", T));
                assertArrayEquals("v1".getBytes(), j.compareSet("cas", null, "v1".getBytes()));
                assertArrayEquals("v2".getBytes(), j.compareSet("cas", "v1".getBytes(), "v2".getBytes()));
                assertArrayEquals("v2".getBytes(), j.compareSet("cas", "zz".getBytes(), "v3".getBytes()));
                assertNull(j.tryGet("nothere"));
                assertTrue(j.check(List.of("frompy", "cas")));
                assertFalse(j.check(List.of("frompy", "nothere")));
                long keys = j.numKeys();
                assertTrue(j.delete("frompy"));
                assertFalse(j.delete("frompy"));
                assertEquals(keys - 1, j.numKeys());
                CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                        () -> j.wait(List.of("fromjava", "frompy2"), Duration.ofMillis(300)));
                assertTrue(e.getMessage().contains("[frompy2]"), e.getMessage());
                j.set("java-done", new byte[0]); // after a timed-out wait (a new connection on 1.x)
            }
            java.util.Map<String, Object> m = jsonObject(lastLine(py.finish()));
            assertEquals("xyz", m.get("fromjava"));
            assertEquals("8", m.get("cnt"));
            assertEquals("v2", m.get("cas"));
        }
    }
}
