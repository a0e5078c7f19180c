package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.Work;
import org.jccl.internal.CrossMemory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Large sends from native memory are read by the receiver straight from the sender's buffer
 * ({@code JCCL_SHM_SINGLE_COPY_BYTES}, process_vm_readv): the data arrive intact at and around the
 * threshold, into native and heap receive buffers, with several messages outstanding per pair, and
 * the single-copy count says which path each took. Heap sends and {@code off} keep the mailboxes.
 * Across processes: ConformanceTest's process ranks and ProcessRanksTest's SIGKILL during large sends.
 */
class SingleCopyTest {
    private static final long THRESHOLD_FLOATS = HostCommunicator.SINGLE_COPY_BYTES / 4;

    @BeforeAll
    static void processVmReadvWorksHere() {
        Assumptions.assumeTrue(CrossMemory.isAvailable(), "process_vm_readv is unavailable: " + CrossMemory.unavailabilityCause());
        try (Arena a = Arena.ofConfined()) {
            MemorySegment from = a.allocate(8, 8);
            MemorySegment to = a.allocate(8, 8);
            from.set(ValueLayout.JAVA_LONG, 0, 0x1234_5678_9abcL);
            long r = new CrossMemory.Reader(a).read(ProcessHandle.current().pid(), from.address(), to.address(), 8);
            Assumptions.assumeTrue(r == 8, "this machine's kernel does not let a process read itself with process_vm_readv: "
                    + CrossMemory.describe(r));
            assertEquals(0x1234_5678_9abcL, to.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /** Floats {@code seed + i} (exact in float for these sizes' low bits: compared bitwise). */
    private static float[] pattern(long n, int seed) {
        float[] a = new float[(int) n];
        for (int i = 0; i < n; i++) {
            a[i] = seed * 1_000_003f + (i % 65_521) + 0.25f * (i % 3);
        }
        return a;
    }

    private static HostBuffer nativeOf(float[] a, Arena arena) {
        HostBuffer b = HostBuffer.allocate(DataType.FLOAT32, a.length, arena);
        MemorySegment.copy(a, 0, b.segment(), ValueLayout.JAVA_FLOAT, 0, a.length);
        return b;
    }

    private static float[] floats(HostBuffer b) {
        return b.segment().toArray(ValueLayout.JAVA_FLOAT);
    }

    @Test
    void ringShiftsFromNativeMemoryAreReadOnceAtAndAboveTheThresholdIntoNativeAndHeapBuffers() throws Exception {
        long[] counts = {THRESHOLD_FLOATS - 1, THRESHOLD_FLOATS, 300_007, 3_000_017};
        List<String> results = ThreadRanks.run(3, Duration.ofSeconds(60), comm -> {
            int rank = comm.rank();
            HostCommunicator h = (HostCommunicator) comm;
            int n = comm.size();
            int next = (rank + 1) % n, prev = (rank + n - 1) % n;
            long expectedSingle = 0;
            try (Arena arena = Arena.ofShared()) {
                for (long count : counts) {
                    for (boolean heapRecv : new boolean[] {false, true}) {
                        float[] mine = pattern(count, rank * 10 + (heapRecv ? 1 : 0));
                        HostBuffer in = heapRecv ? HostBuffer.of(new float[(int) count])
                                : HostBuffer.allocate(DataType.FLOAT32, count, arena);
                        long before = h.singleCopyReceives();
                        comm.sendRecv(nativeOf(mine, arena), next, in, prev);
                        assertArrayEquals(pattern(count, prev * 10 + (heapRecv ? 1 : 0)), floats(in),
                                "rank " + rank + ": " + count + " floats from rank " + prev + (heapRecv ? " into a heap array" : ""));
                        long single = count >= THRESHOLD_FLOATS ? 1 : 0;
                        assertEquals(single, h.singleCopyReceives() - before, "rank " + rank + ", " + count
                                + " floats: the single-copy path is taken from JCCL_SHM_SINGLE_COPY_BYTES on");
                        expectedSingle += single;
                    }
                }
            }
            return "ok " + expectedSingle;
        });
        assertEquals(List.of("ok 6", "ok 6", "ok 6"), results);
    }

    @Test
    void severalOutstandingMessagesPerPairMatchInPostingOrderWhicheverPathEachTakes() throws Exception {
        long[] counts = {THRESHOLD_FLOATS * 4, 17, 1_000_003, THRESHOLD_FLOATS - 3, 0, THRESHOLD_FLOATS};
        List<String> results = ThreadRanks.run(2, Duration.ofSeconds(60), comm -> {
            int rank = comm.rank();
            int peer = 1 - rank;
            try (Arena arena = Arena.ofShared()) {
                List<Work> works = new ArrayList<>();
                List<HostBuffer> ins = new ArrayList<>();
                for (int k = 0; k < counts.length; k++) {
                    HostBuffer in = HostBuffer.allocate(DataType.FLOAT32, counts[k], arena);
                    ins.add(in);
                    works.add(comm.recvAsync(in, peer));
                }
                for (int k = 0; k < counts.length; k++) {
                    works.add(comm.sendAsync(nativeOf(pattern(counts[k], rank * 100 + k), arena), peer));
                }
                for (Work w : works) {
                    w.await();
                }
                for (int k = 0; k < counts.length; k++) {
                    assertArrayEquals(pattern(counts[k], peer * 100 + k), floats(ins.get(k)), "message " + k + " on rank " + rank);
                }
                return "ok " + ((HostCommunicator) comm).singleCopyReceives();
            }
        });
        assertEquals(List.of("ok 3", "ok 3"), results, "three of the six messages are at or above the threshold");
    }

    @Test
    void heapSendsAndTheSettingOffKeepTheMailboxes() throws Exception {
        long count = 500_001;
        for (boolean off : new boolean[] {false, true}) {
            List<Long> singles = ThreadRanks.run(2, Duration.ofSeconds(60), Duration.ofSeconds(120),
                    o -> off ? o.withSetting("JCCL_SHM_SINGLE_COPY_BYTES", "off") : o, comm -> {
                        int rank = comm.rank();
                        int peer = 1 - rank;
                        try (Arena arena = Arena.ofShared()) {
                            HostBuffer in = HostBuffer.allocate(DataType.FLOAT32, count, arena);
                            // heap send: no stable address, so never by one copy
                            comm.sendRecv(HostBuffer.of(pattern(count, rank)), peer, in, peer);
                            assertArrayEquals(pattern(count, peer), floats(in));
                            // native send: by one copy unless the setting is off
                            comm.sendRecv(nativeOf(pattern(count, rank + 5), arena), peer, in, peer);
                            assertArrayEquals(pattern(count, peer + 5), floats(in));
                        }
                        return ((HostCommunicator) comm).singleCopyReceives();
                    });
            assertEquals(off ? List.of(0L, 0L) : List.of(1L, 1L), singles, off ? "JCCL_SHM_SINGLE_COPY_BYTES=off" : "default");
        }
    }

    @Test
    void aBadThresholdIsAnErrorNamingTheSetting() {
        Exception e = assertThrows(Exception.class, () -> ThreadRanks.run(2, Duration.ofSeconds(30), Duration.ofSeconds(60),
                o -> o.withSetting("JCCL_SHM_SINGLE_COPY_BYTES", "0"), comm -> "created"));
        Throwable t = e;
        while (t.getCause() != null && !String.valueOf(t.getMessage()).contains("JCCL_SHM_SINGLE_COPY_BYTES")) {
            t = t.getCause();
        }
        assertTrue(String.valueOf(t.getMessage()).contains("JCCL_SHM_SINGLE_COPY_BYTES=0")
                && t.getMessage().contains("[1, "), String.valueOf(e));
    }
}
