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
        String why = CrossMemory.selfCheck();
        Assumptions.assumeTrue(why == null, "this process cannot read memory with process_vm_readv: " + why);
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

    /**
     * A broadcast between two ranks from a native root buffer of at least 32 KiB: the receiver reads
     * the root's buffer (one cross-memory read for the whole call, into native and heap buffers,
     * one chunk and several, out of place and in place); below it, from a heap root, or with the
     * setting off, the slots. Each call's data arrive intact either way.
     */
    @Test
    void twoRankBroadcastsFromNativeMemoryAreReadFromTheRootsBuffer() throws Exception {
        long min = 32 << 10;
        long[] counts = {min / 4 - 1, min / 4, 65_537, 1_000_003};
        for (boolean off : new boolean[] {false, true}) {
            List<String> results = ThreadRanks.run(2, Duration.ofSeconds(60), Duration.ofSeconds(120),
                    o -> off ? o.withSetting("JCCL_SHM_SINGLE_COPY_BYTES", "off") : o, comm -> {
                        int rank = comm.rank();
                        HostCommunicator h = (HostCommunicator) comm;
                        int k = 0;
                        try (Arena arena = Arena.ofShared()) {
                            for (long count : counts) {
                                for (int variant = 0; variant < 4; variant++) {
                                    int root = (k++) % 2;
                                    boolean heap = variant == 1; // the receiver's buffer on the heap
                                    boolean heapRoot = variant == 2;
                                    boolean inPlace = variant == 3;
                                    float[] data = pattern(count, k);
                                    HostBuffer recv = rank != root && heap ? HostBuffer.of(new float[(int) count])
                                            : HostBuffer.allocate(DataType.FLOAT32, count, arena);
                                    HostBuffer send;
                                    if (rank != root) {
                                        send = recv;
                                    } else if (inPlace) {
                                        MemorySegment.copy(data, 0, recv.segment(), ValueLayout.JAVA_FLOAT, 0, data.length);
                                        send = recv;
                                    } else {
                                        send = heapRoot ? HostBuffer.of(data) : nativeOf(data, arena);
                                    }
                                    long before = h.crossMemoryReads();
                                    comm.broadcast(send, recv, root);
                                    assertArrayEquals(data, floats(recv), "rank " + rank + ", root " + root + ", " + count
                                            + " floats, variant " + variant);
                                    long reads = !off && rank != root && !heapRoot && count * 4 >= min ? 1 : 0;
                                    assertEquals(reads, h.crossMemoryReads() - before, "rank " + rank + ", root " + root
                                            + ", " + count + " floats, variant " + variant + (off ? ", setting off" : ""));
                                }
                            }
                        }
                        return "ok";
                    });
            assertEquals(List.of("ok", "ok"), results);
        }
    }

    /**
     * Two ranks, calls of one chunk with blocks from 32 KiB: a rank whose send buffer is native posts
     * its address and the peer reads its block from there (all-gather, scatter from the root,
     * all-to-all out of place); a heap send buffer, a smaller block, a gather or an all-to-all in
     * place keeps the slots. Each call's data arrive intact either way.
     */
    @Test
    void twoRankCallsOfOneChunkReadNativeSendBuffersFrom32KiBBlocks() throws Exception {
        long[] blocks = {(32 << 10) / 4 - 1, (32 << 10) / 4, 30_001};
        List<String> results = ThreadRanks.run(2, Duration.ofSeconds(60), comm -> {
            int r = comm.rank();
            int peer = 1 - r;
            HostCommunicator h = (HostCommunicator) comm;
            try (Arena arena = Arena.ofShared()) {
                for (long per : blocks) {
                    for (boolean heapOne : new boolean[] {false, true}) { // rank 1's send buffers on the heap
                        boolean heap = heapOne && r == 1;
                        boolean peerNative = !(heapOne && peer == 1);
                        boolean big = per * 4 >= (32 << 10);
                        String what = per + " floats a block" + (heapOne ? ", rank 1 sends from the heap" : "");
                        float[] mine = pattern(per, r);
                        HostBuffer all = HostBuffer.allocate(DataType.FLOAT32, 2 * per, arena);
                        long before = h.crossMemoryReads();
                        comm.allGather(heap ? HostBuffer.of(mine) : nativeOf(mine, arena), all);
                        assertArrayEquals(pattern(per, peer), java.util.Arrays.copyOfRange(floats(all), (int) (peer * per),
                                (int) ((peer + 1) * per)), "all-gather, " + what);
                        assertEquals(big && peerNative ? 1 : 0, h.crossMemoryReads() - before, "all-gather reads, " + what);

                        before = h.crossMemoryReads();
                        HostBuffer g = HostBuffer.allocate(DataType.FLOAT32, 2 * per, arena);
                        comm.gather(heap ? HostBuffer.of(mine) : nativeOf(mine, arena), g, 0);
                        if (r == 0) {
                            assertArrayEquals(pattern(per, 1), java.util.Arrays.copyOfRange(floats(g), (int) per, (int) (2 * per)),
                                    "gather, " + what);
                        }
                        assertEquals(0, h.crossMemoryReads() - before, "a gather keeps the slots, " + what);

                        float[] both = new float[(int) (2 * per)];
                        System.arraycopy(pattern(per, 10 + r * 2), 0, both, 0, (int) per);
                        System.arraycopy(pattern(per, 11 + r * 2), 0, both, (int) per, (int) per);
                        before = h.crossMemoryReads();
                        HostBuffer out = HostBuffer.allocate(DataType.FLOAT32, per, arena);
                        comm.scatter(heap ? HostBuffer.of(both) : nativeOf(both, arena), out, 1);
                        assertArrayEquals(pattern(per, 12 + r), floats(out), "scatter from rank 1, " + what);
                        assertEquals(r == 0 && big && !heapOne ? 1 : 0, h.crossMemoryReads() - before, "scatter reads, " + what);

                        before = h.crossMemoryReads();
                        HostBuffer a2a = HostBuffer.allocate(DataType.FLOAT32, 2 * per, arena);
                        comm.allToAll(heap ? HostBuffer.of(both) : nativeOf(both, arena), a2a);
                        assertArrayEquals(pattern(per, 10 + peer * 2 + r), java.util.Arrays.copyOfRange(floats(a2a),
                                (int) (peer * per), (int) ((peer + 1) * per)), "all-to-all, " + what);
                        assertEquals(big && peerNative ? 1 : 0, h.crossMemoryReads() - before, "all-to-all reads, " + what);

                        HostBuffer inPlace = nativeOf(both, arena);
                        before = h.crossMemoryReads();
                        comm.allToAll(inPlace, inPlace);
                        assertArrayEquals(pattern(per, 10 + peer * 2 + r), java.util.Arrays.copyOfRange(floats(inPlace),
                                (int) (peer * per), (int) ((peer + 1) * per)), "all-to-all in place, " + what);
                        assertEquals(0, h.crossMemoryReads() - before, "an all-to-all in place keeps the slots, " + what);
                    }
                }
            }
            return "ok";
        });
        assertEquals(List.of("ok", "ok"), results);
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

    /**
     * All-gather, gather, all-to-all and scatter of at least JCCL_SHM_ZERO_COPY_BYTES per rank (blocks
     * up to 1 MiB but for scatter) read peers' unregistered native send buffers in place
     * (process_vm_readv); broadcast does not. The results equal the copy path's (every rank's heap
     * buffers, same call), and only the native calls read peers.
     */
    @Test
    void collectivesThatOnlyCopyReadPeersNativeSendBuffersInPlace() throws Exception {
        long per = 100_003; // floats per rank: 400 KB, above the zero-copy threshold
        List<String> results = ThreadRanks.run(3, Duration.ofSeconds(60), comm -> {
            int r = comm.rank();
            int n = comm.size();
            HostCommunicator h = (HostCommunicator) comm;
            try (Arena arena = Arena.ofShared()) {
                for (boolean heap : new boolean[] {true, false}) {
                    long before = h.crossMemoryReads();
                    java.util.function.Function<float[], HostBuffer> buf = a -> heap ? HostBuffer.of(a) : nativeOf(a, arena);
                    // all-gather and gather: block p of the result is rank p's pattern
                    HostBuffer all = buf.apply(new float[(int) (per * n)]);
                    comm.allGather(buf.apply(pattern(per, r)), all);
                    HostBuffer gathered = buf.apply(new float[(int) (per * n)]);
                    comm.gather(buf.apply(pattern(per, r + 10)), gathered, 1);
                    // broadcast from rank 2
                    HostBuffer b = buf.apply(r == 2 ? pattern(per, 20) : new float[(int) per]);
                    comm.broadcast(b, 2);
                    // all-to-all: block q of rank p's send is pattern(per, 100 p + q)
                    float[] a2a = new float[(int) (per * n)];
                    for (int q = 0; q < n; q++) {
                        System.arraycopy(pattern(per, 100 * r + q), 0, a2a, (int) (q * per), (int) per);
                    }
                    HostBuffer a2aOut = buf.apply(new float[(int) (per * n)]);
                    comm.allToAll(buf.apply(a2a), a2aOut);
                    // scatter from rank 0: block q is pattern(per, 200 + q)
                    float[] sc = new float[(int) (per * n)];
                    for (int q = 0; q < n; q++) {
                        System.arraycopy(pattern(per, 200 + q), 0, sc, (int) (q * per), (int) per);
                    }
                    HostBuffer scOut = buf.apply(new float[(int) per]);
                    comm.scatter(buf.apply(r == 0 ? sc : new float[(int) (per * n)]), scOut, 0);
                    long reads = h.crossMemoryReads() - before;
                    float[] got = floats(all), gg = floats(gathered), a2 = floats(a2aOut);
                    for (int p = 0; p < n; p++) {
                        assertArrayEquals(pattern(per, p), java.util.Arrays.copyOfRange(got, (int) (p * per), (int) ((p + 1) * per)),
                                "all-gather block " + p + " on rank " + r + (heap ? " (heap)" : " (native)"));
                        if (r == 1) {
                            assertArrayEquals(pattern(per, p + 10), java.util.Arrays.copyOfRange(gg, (int) (p * per), (int) ((p + 1) * per)),
                                    "gather block " + p + (heap ? " (heap)" : " (native)"));
                        }
                        assertArrayEquals(pattern(per, 100 * p + r), java.util.Arrays.copyOfRange(a2, (int) (p * per), (int) ((p + 1) * per)),
                                "all-to-all block from rank " + p + " on rank " + r + (heap ? " (heap)" : " (native)"));
                    }
                    assertArrayEquals(pattern(per, 20), floats(b), "broadcast on rank " + r);
                    assertArrayEquals(pattern(per, 200 + r), floats(scOut), "scatter on rank " + r);
                    // reads of peers: all-gather 2, gather 2 on the root, all-to-all 2, scatter 1 off the root; broadcast
                    // none at 3 ranks (every rank reading the root's same pages at once is slower than the slots)
                    long expected = heap ? 0 : 2 + (r == 1 ? 2 : 0) + 2 + (r == 0 ? 0 : 1);
                    assertEquals(expected, reads, "rank " + r + (heap ? ": heap buffers take the copy path"
                            : ": native buffers are read in place"));
                }
            }
            return "ok";
        });
        assertEquals(List.of("ok", "ok", "ok"), results);
    }

    /**
     * Blocks over {@link HostCommunicator#READ_PEERS_MAX_BLOCK}: with 3 ranks an all-gather, gather and
     * all-to-all of them keep the slots (no rank reads a peer); between 2 ranks they read the peer's
     * native send buffer as smaller blocks do, and a broadcast and a scatter read the root's. The
     * results are checked block by block.
     */
    @Test
    void blocksAboveOneMebibyteKeepTheSlotsButBetweenTwoRanksEveryCallReadsThePeer() throws Exception {
        long per = (HostCommunicator.READ_PEERS_MAX_BLOCK / 4) + 1; // one float above the limit
        for (int n : new int[] {3, 2}) {
            List<String> results = ThreadRanks.run(n, Duration.ofSeconds(60), comm -> {
                int r = comm.rank();
                HostCommunicator h = (HostCommunicator) comm;
                try (Arena arena = Arena.ofShared()) {
                    long before = h.crossMemoryReads();
                    HostBuffer all = HostBuffer.allocate(DataType.FLOAT32, n * per, arena);
                    comm.allGather(nativeOf(pattern(per, r), arena), all);
                    float[] got = floats(all);
                    HostBuffer gathered = HostBuffer.allocate(DataType.FLOAT32, n * per, arena);
                    comm.gather(nativeOf(pattern(per, r + 10), arena), gathered, 1);
                    float[] gg = floats(gathered);
                    float[] a2a = new float[(int) (per * n)];
                    for (int q = 0; q < n; q++) {
                        System.arraycopy(pattern(per, 100 * r + q), 0, a2a, (int) (q * per), (int) per);
                    }
                    HostBuffer a2aOut = HostBuffer.allocate(DataType.FLOAT32, n * per, arena);
                    comm.allToAll(nativeOf(a2a, arena), a2aOut);
                    float[] a2 = floats(a2aOut);
                    long copies = h.crossMemoryReads() - before;
                    for (int p = 0; p < n; p++) {
                        int from = (int) (p * per);
                        int to = (int) ((p + 1) * per);
                        assertArrayEquals(pattern(per, p), java.util.Arrays.copyOfRange(got, from, to),
                                n + " ranks: all-gather block " + p + " on rank " + r);
                        if (r == 1) {
                            assertArrayEquals(pattern(per, p + 10), java.util.Arrays.copyOfRange(gg, from, to),
                                    n + " ranks: gather block " + p);
                        }
                        assertArrayEquals(pattern(per, 100 * p + r), java.util.Arrays.copyOfRange(a2, from, to),
                                n + " ranks: all-to-all block from rank " + p + " on rank " + r);
                    }
                    if (n > 2) {
                        return Long.toString(copies);
                    }
                    HostBuffer b = r == 0 ? nativeOf(pattern(per, 7), arena) : HostBuffer.allocate(DataType.FLOAT32, per, arena);
                    comm.broadcast(b, 0);
                    float[] sc = new float[(int) (2 * per)];
                    System.arraycopy(pattern(per, 30), 0, sc, 0, (int) per);
                    System.arraycopy(pattern(per, 31), 0, sc, (int) per, (int) per);
                    HostBuffer out = HostBuffer.allocate(DataType.FLOAT32, per, arena);
                    comm.scatter(r == 0 ? nativeOf(sc, arena) : HostBuffer.allocate(DataType.FLOAT32, 2 * per, arena), out, 0);
                    long rooted = h.crossMemoryReads() - before - copies;
                    assertArrayEquals(pattern(per, 7), floats(b));
                    assertArrayEquals(pattern(per, 30 + r), floats(out));
                    return copies + " " + rooted;
                }
            });
            if (n > 2) {
                assertEquals(List.of("0", "0", "0"), results, "3 ranks: all-gather, gather and all-to-all of 1 MiB + 4 B "
                        + "blocks read no peer");
            } else {
                assertEquals(List.of("2 0", "3 2"), results, "2 ranks: the all-gather and all-to-all read the peer on "
                        + "both ranks, the gather on its root; rank 1 reads the broadcast's buffer and its scatter block "
                        + "from the root");
            }
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
