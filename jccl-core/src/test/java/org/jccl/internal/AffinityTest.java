package org.jccl.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** {@link Affinity}: the shares, and on Linux the calling thread's mask read and set (checked against /proc). */
class AffinityTest {

    @Test
    void sharesAreConsecutiveEqualBlocksWithTheRemainderFirst() {
        int[] cpus = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
        assertArrayEquals(new int[] {0, 1, 2, 3}, Affinity.shareOf(cpus, 0, 3));
        assertArrayEquals(new int[] {4, 5, 6}, Affinity.shareOf(cpus, 1, 3));
        assertArrayEquals(new int[] {7, 8, 9}, Affinity.shareOf(cpus, 2, 3));
        assertArrayEquals(new int[] {1}, Affinity.shareOf(new int[] {0, 1}, 1, 2));
        assertArrayEquals(new int[] {5}, Affinity.shareOf(new int[] {3, 5}, 1, 2));
        assertNull(Affinity.shareOf(new int[] {0, 1}, 0, 3), "3 ranks cannot each have a CPU of 2");
        assertThrows(IllegalArgumentException.class, () -> Affinity.shareOf(cpus, 3, 3));
        assertEquals("0-3,8,10-11", Affinity.format(new int[] {0, 1, 2, 3, 8, 10, 11}));
    }

    @Test
    void aThreadPinnedToOneCpuRunsThereOnly() throws Exception {
        assumeTrue(Affinity.isAvailable(), () -> "affinity unavailable here: " + Affinity.unavailabilityCause());
        int[] allowed = Affinity.allowed();
        assertEquals(Runtime.getRuntime().availableProcessors(), allowed.length, "allowed CPUs vs the JVM's count");
        int last = allowed[allowed.length - 1];
        Object[] r = onNewThread(() -> {
            Affinity.set(new int[] {last});
            // the kernel's own view of this thread
            String status = Files.readString(Path.of("/proc/thread-self/status"));
            String list = status.lines().filter(l -> l.startsWith("Cpus_allowed_list:")).findFirst().orElseThrow();
            return new Object[] {Affinity.allowed(), list.substring(list.indexOf(':') + 1).trim()};
        });
        assertArrayEquals(new int[] {last}, (int[]) r[0]);
        assertEquals(Integer.toString(last), r[1]);
        assertArrayEquals(allowed, Affinity.allowed(), "pinning another thread changed this one");
        assertThrows(IllegalArgumentException.class, () -> Affinity.set(new int[] {}));
        assertThrows(IllegalArgumentException.class, () -> Affinity.set(new int[] {5000}));
    }

    @Test
    void aPinnedThreadStillCountsTheCpusAndSplitsTheMaskItHadBeforeItsFirstPin() throws Exception {
        assumeTrue(Affinity.isAvailable(), () -> "affinity unavailable here: " + Affinity.unavailabilityCause());
        int[] allowed = Affinity.allowed();
        assumeTrue(allowed.length >= 2, "needs 2 CPUs to pin a thread to fewer");
        Object[] r = onNewThread(() -> {
            Affinity.set(new int[] {allowed[0]});
            int counted = Affinity.cpus();
            int jvm = Runtime.getRuntime().availableProcessors();
            int[] before = Affinity.unpinned();
            // a second pin of the same thread (a second communicator) splits the original mask
            Affinity.set(Affinity.shareOf(Affinity.unpinned(), 1, 2));
            return new Object[] {counted, jvm, before, Affinity.allowed()};
        });
        assertEquals(allowed.length, (int) r[0], "cpus() on a pinned thread counts the CPUs it had before");
        assertEquals(1, (int) r[1], "the JVM's own count on that thread (why cpus() exists)");
        assertArrayEquals(allowed, (int[]) r[2]);
        assertArrayEquals(Affinity.shareOf(allowed, 1, 2), (int[]) r[3]);
    }

    /** Runs {@code body} on a new thread (pinning it leaves the test's thread alone) and returns its result. */
    private static Object[] onNewThread(java.util.concurrent.Callable<Object[]> body) throws InterruptedException {
        AtomicReference<Object> seen = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                seen.set(body.call());
            } catch (Throwable e) {
                seen.set(e);
            }
        });
        t.start();
        t.join();
        if (seen.get() instanceof Throwable e) {
            throw new AssertionError(e);
        }
        return (Object[]) seen.get();
    }
}
