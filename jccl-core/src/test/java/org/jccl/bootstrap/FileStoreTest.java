package org.jccl.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jccl.CollectiveTimeoutException;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class FileStoreTest {
    static final Duration T = Duration.ofSeconds(10);
    /** Blocking test tasks run on virtual threads (the common pool may have a single worker). */
    static final java.util.concurrent.Executor VT = Executors.newVirtualThreadPerTaskExecutor();

    @TempDir
    Path dir;

    static byte[] b(String s) {
        return s.getBytes(UTF_8);
    }

    @Test
    void basicOperations() {
        FileStore s = new FileStore(dir.resolve("store"));
        TcpStoreTest.assertBasicOperations(s, "a/b");
        String longKey = "ключ".repeat(1000); // 8000 bytes in UTF-8: hashed file name
        assertThrows(IllegalArgumentException.class, () -> s.set(longKey, b("x")));
        String okLong = "k".repeat(Store.MAX_KEY_BYTES);
        s.set(okLong, b("long"));
        assertArrayEquals(b("long"), s.get(okLong, T));
        assertThrows(IllegalArgumentException.class, () -> s.set("", b("x")));
        assertThrows(IllegalArgumentException.class, () -> s.set("k", null));
        s.close();
        assertThrows(InvalidUsageException.class, () -> s.tryGet("empty"));
    }

    @Test
    void counterAndCompareSetMatchTcpStore() {
        FileStore s = new FileStore(dir);
        assertEquals(3, s.add("n", 3));
        assertEquals(-1, s.add("n", -4));
        assertEquals(-1, StoreProtocol.decodeCounter(s.get("n", T)));
        s.set("txt", b("abc"));
        JcclException e = assertThrows(JcclException.class, () -> s.add("txt", 1));
        assertTrue(e.getMessage().contains("txt") && e.getMessage().contains("not a counter"), e.getMessage());

        assertArrayEquals(b("v1"), s.compareSet("k", null, b("v1")));
        assertArrayEquals(b("v1"), s.compareSet("k", new byte[0], b("x")));
        assertArrayEquals(b("v2"), s.compareSet("k", b("v1"), b("v2")));
        assertArrayEquals(b("v2"), s.compareSet("k", b("v1"), b("v3")));
        assertNull(s.compareSet("absent", b("x"), b("y")));
        // no temporary files are left behind
        try (Stream<Path> files = Files.list(dir)) {
            assertTrue(files.noneMatch(p -> p.getFileName().toString().startsWith(".tmp-")));
        } catch (java.io.IOException ex) {
            throw new AssertionError(ex);
        }
    }

    @Test
    void concurrentAddsAcrossInstancesAreExact() throws Exception {
        int threads = 8;
        int iters = 100;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                // one instance per thread, as separate ranks would have
                FileStore s = new FileStore(dir);
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < iters; i++) {
                        s.add("counter", 1);
                        s.set("t" + id + "/" + i, b("v" + i));
                        assertArrayEquals(b("v" + i), s.get("t" + id + "/" + i, T));
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
        FileStore s = new FileStore(dir);
        assertEquals((long) threads * iters, s.add("counter", 0));
        assertEquals(threads * iters + 1L, s.numKeys());
    }

    @Test
    void compareSetElectsExactlyOne() throws Exception {
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Integer>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                byte[] me = b("rank" + t);
                FileStore s = new FileStore(dir);
                fs.add(pool.submit(() -> java.util.Arrays.equals(me, s.compareSet("leader", null, me)) ? 1 : 0));
            }
            int sum = 0;
            for (Future<Integer> f : fs) {
                sum += f.get();
            }
            assertEquals(1, sum);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void getWaitsForALaterSetAndTimesOutNamingTheKey() throws Exception {
        FileStore s = new FileStore(dir);
        CompletableFuture<byte[]> got = CompletableFuture.supplyAsync(() -> s.get("late", T), VT);
        Thread.sleep(100);
        assertFalse(got.isDone());
        new FileStore(dir).set("late", b("now"));
        assertArrayEquals(b("now"), got.get(5, TimeUnit.SECONDS));

        long t0 = System.nanoTime();
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                () -> s.get("never/set", Duration.ofMillis(200)));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms >= 150 && ms < 3000, "took " + ms);
        assertTrue(e.getMessage().contains("never/set") && e.getMessage().contains(s.directory().toString()), e.getMessage());

        s.set("w1", b("x"));
        CollectiveTimeoutException w = assertThrows(CollectiveTimeoutException.class,
                () -> s.wait(List.of("w1", "w2", "w3"), Duration.ofMillis(150)));
        assertTrue(w.getMessage().contains("w2") && w.getMessage().contains("w3") && !w.getMessage().contains("w1"),
                w.getMessage());
        CompletableFuture<Void> all = CompletableFuture.runAsync(() -> s.wait(List.of("w1", "w2", "w3"), T), VT);
        s.set("w2", b("x"));
        s.set("w3", b("x"));
        all.get(5, TimeUnit.SECONDS);
    }

    @Test
    void aNewInstanceSeesEarlierData() {
        FileStore a = new FileStore(dir);
        a.set("persist", b("yes"));
        a.close();
        FileStore b2 = new FileStore(dir);
        assertArrayEquals(b("yes"), b2.get("persist", T));
    }
}
