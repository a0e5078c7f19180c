package org.jccl.host;

import org.jccl.kit.Reference;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every collective x dtype x op x size, in place and out of place, on 2, 3 and 4 ranks as
 * threads over real shared memory, checked element by element against {@link Reference}.
 */
class HostCollectivesTest {

    static final long LARGE = 300_007;

    static List<ReduceOp> ops(DataType t) {
        List<ReduceOp> ops = new ArrayList<>(List.of(ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX,
                ReduceOp.AVG, ReduceOp.preMulSum(2)));
        if (t.isInteger()) {
            ops.addAll(List.of(ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR));
        }
        return ops;
    }

    static long[] counts(ReduceOp op) {
        return op.kind() == ReduceOp.Kind.SUM ? new long[] {0, 1, 1009, LARGE} : new long[] {0, 1, 1009};
    }

    static long crc(MemorySegment s) {
        CRC32 c = new CRC32();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    /** What one rank saw: failures and the checksums of its all-reduce outputs (must agree across ranks). */
    record RankResult(List<String> failures, List<Long> allReduceCrcs) {
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4})
    void reductionsMatchReference(int n) throws Exception {
        List<RankResult> results = ThreadRanks.run(n, Duration.ofSeconds(60), Duration.ofSeconds(300), comm -> {
            List<String> failures = new ArrayList<>();
            List<Long> crcs = new ArrayList<>();
            int r = comm.rank();
            long seed = 1;
            try (Arena arena = Arena.ofConfined()) {
                for (DataType t : DataType.values()) {
                    for (ReduceOp op : ops(t)) {
                        for (long count : counts(op)) {
                            seed++;
                            String what = t + " " + op + " count " + count;
                            HostBuffer send = HostBuffer.allocate(t, count * n, arena);
                            HostBuffer recv = HostBuffer.allocate(t, count * n, arena);
                            // all-reduce, out of place then in place
                            HostBuffer s1 = send.slice(0, count);
                            HostBuffer r1 = recv.slice(0, count);
                            Reference.fill(s1.segment(), t, op, seed, r, count, n);
                            comm.allReduce(s1, r1, op);
                            check(failures, "allReduce " + what, r1, t, op, seed, n, 0, count);
                            crcs.add(crc(r1.segment()));
                            comm.allReduce(s1, op);
                            check(failures, "allReduce in-place " + what, s1, t, op, seed, n, 0, count);
                            crcs.add(crc(s1.segment()));
                            // reduce to a rotating root
                            int root = (int) (seed % n);
                            Reference.fill(s1.segment(), t, op, seed, r, count, n);
                            recv.segment().fill((byte) 0x5a);
                            comm.reduce(s1, r == root ? r1 : null, op, root);
                            if (r == root) {
                                check(failures, "reduce root " + root + " " + what, r1, t, op, seed, n, 0, count);
                            }
                            comm.reduce(s1, op, root);
                            if (r == root) {
                                check(failures, "reduce in-place root " + root + " " + what, s1, t, op, seed, n, 0, count);
                            }
                            // reduce-scatter: element i of the full vector is block i / count
                            Reference.fill(send.segment(), t, op, seed, r, count * n, n);
                            comm.reduceScatter(send, r1, op);
                            check(failures, "reduceScatter " + what, r1, t, op, seed, n, r * count, count);
                            comm.reduceScatter(send, op);
                            check(failures, "reduceScatter in-place " + what, send.slice(r * count, count), t, op, seed, n,
                                    r * count, count);
                        }
                    }
                }
            }
            return new RankResult(failures, crcs);
        });
        for (RankResult rr : results) {
            assertTrue(rr.failures().isEmpty(), () -> String.join("\n", rr.failures()));
        }
        for (int r = 1; r < n; r++) {
            assertEquals(results.get(0).allReduceCrcs(), results.get(r).allReduceCrcs(),
                    "all-reduce results must be bitwise identical on every rank");
        }
    }

    static void check(List<String> failures, String what, HostBuffer got, DataType t, ReduceOp op, long seed, int n,
                      long firstIndex, long count) {
        long wrong = Reference.countWrong(got.segment(), 0, t, op, seed, n, firstIndex, count);
        if (wrong != 0) {
            failures.add(what + ": " + wrong + " of " + count + " elements wrong");
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4})
    void dataMovementMatchesReference(int n) throws Exception {
        List<List<String>> results = ThreadRanks.run(n, Duration.ofSeconds(60), comm -> {
            List<String> failures = new ArrayList<>();
            int r = comm.rank();
            long seed = 1000;
            try (Arena arena = Arena.ofConfined()) {
                for (DataType t : DataType.values()) {
                    // large counts (several chunks) for one type of each element size
                    boolean large = t == DataType.INT8 || t == DataType.FLOAT16 || t == DataType.FLOAT32 || t == DataType.FLOAT64;
                    for (long count : large ? new long[] {0, 1, 1009, LARGE} : new long[] {0, 1, 1009}) {
                        seed++;
                        String what = t + " count " + count;
                        int root = (int) (seed % n);
                        HostBuffer a = HostBuffer.allocate(t, count * n, arena);
                        HostBuffer b = HostBuffer.allocate(t, count * n, arena);
                        HostBuffer expect = HostBuffer.allocate(t, count * n, arena);
                        // broadcast
                        HostBuffer a1 = a.slice(0, count);
                        HostBuffer b1 = b.slice(0, count);
                        Reference.fill(a1.segment(), t, ReduceOp.SUM, seed, r, count, n);
                        Reference.fill(expect.segment(), t, ReduceOp.SUM, seed, root, count, n);
                        comm.broadcast(a1, b1, root);
                        same(failures, "broadcast root " + root + " " + what, b1, expect.slice(0, count));
                        comm.broadcast(a1, root);
                        same(failures, "broadcast in-place root " + root + " " + what, a1, expect.slice(0, count));
                        // all-gather and gather: block p holds rank p's data
                        for (int p = 0; p < n; p++) {
                            Reference.fill(expect.segment().asSlice(p * count * t.byteSize()), t, ReduceOp.SUM, seed, p, count, n);
                        }
                        Reference.fill(a1.segment(), t, ReduceOp.SUM, seed, r, count, n);
                        comm.allGather(a1, b);
                        same(failures, "allGather " + what, b, expect);
                        b.segment().fill((byte) 0);
                        Reference.fill(b.segment().asSlice(r * count * t.byteSize()), t, ReduceOp.SUM, seed, r, count, n);
                        comm.allGather(b);
                        same(failures, "allGather in-place " + what, b, expect);
                        b.segment().fill((byte) 0);
                        comm.gather(a1, r == root ? b : null, root);
                        if (r == root) {
                            same(failures, "gather root " + root + " " + what, b, expect);
                        }
                        // scatter: the root's block p goes to rank p
                        Reference.fill(a.segment(), t, ReduceOp.SUM, seed + r, root, count * n, n);
                        HostBuffer full = HostBuffer.allocate(t, count * n, arena);
                        Reference.fill(full.segment(), t, ReduceOp.SUM, seed + root, root, count * n, n);
                        comm.scatter(r == root ? a : null, b1, root);
                        same(failures, "scatter root " + root + " " + what, b1, full.slice(r * count, count));
                        // all-to-all: block j of rank i's input is element range [j*count, (j+1)*count) of rank i's data
                        Reference.fill(a.segment(), t, ReduceOp.SUM, seed, r, count * n, n);
                        for (int p = 0; p < n; p++) {
                            HostBuffer src = HostBuffer.allocate(t, count * n, arena);
                            Reference.fill(src.segment(), t, ReduceOp.SUM, seed, p, count * n, n);
                            MemorySegment.copy(src.segment(), r * count * t.byteSize(), expect.segment(),
                                    p * count * t.byteSize(), count * t.byteSize());
                        }
                        comm.allToAll(a, b);
                        same(failures, "allToAll " + what, b, expect);
                        comm.allToAll(a);
                        same(failures, "allToAll in-place " + what, a, expect);
                    }
                }
            }
            return failures;
        });
        for (List<String> f : results) {
            assertTrue(f.isEmpty(), () -> String.join("\n", f));
        }
    }

    static void same(List<String> failures, String what, HostBuffer got, HostBuffer expected) {
        long at = got.segment().mismatch(expected.segment());
        if (at >= 0) {
            failures.add(what + ": first difference at byte " + at + " of " + got.byteSize());
        }
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    void everyAlgorithmGivesBitwiseIdenticalResults(int n) throws Exception {
        List<List<String>> results = ThreadRanks.run(n, Duration.ofSeconds(60), comm -> {
            List<String> failures = new ArrayList<>();
            HostCommunicator hc = (HostCommunicator) comm;
            try (Arena arena = Arena.ofConfined()) {
                for (DataType t : new DataType[] {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16,
                    DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2}) {
                    for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.preMulSum(0.3)}) {
                        long count = 200_003;
                        HostBuffer in = HostBuffer.allocate(t, count, arena);
                        java.util.SplittableRandom rnd = new java.util.SplittableRandom(77 + comm.rank());
                        for (long i = 0; i < count; i++) {
                            double v = (rnd.nextDouble() * 2 - 1) * (t.byteSize() == 1 ? 8 : 1000);
                            if (t == DataType.FLOAT8_E4M3 || t == DataType.FLOAT8_E5M2) {
                                in.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(0x78));
                            } else {
                                Reference.writeFloat(in.segment(), t, i, t == DataType.FLOAT32 || t == DataType.FLOAT64 ? v
                                        : Reference.readFloatRounded(t, v));
                            }
                        }
                        HostBuffer oneShot = HostBuffer.allocate(t, count, arena);
                        HostBuffer rsag = HostBuffer.allocate(t, count, arena);
                        HostBuffer reduced = HostBuffer.allocate(t, count, arena);
                        hc.forceAllReduceAlgorithm(Tuner.AllReduceAlgo.ONESHOT);
                        comm.allReduce(in, oneShot, op);
                        hc.forceAllReduceAlgorithm(Tuner.AllReduceAlgo.RSAG);
                        comm.allReduce(in, rsag, op);
                        hc.forceAllReduceAlgorithm(null);
                        comm.reduce(in, reduced, op, 0);
                        if (oneShot.segment().mismatch(rsag.segment()) >= 0) {
                            failures.add(t + " " + op + ": one-shot and reduce-scatter/all-gather differ");
                        }
                        if (comm.rank() == 0 && oneShot.segment().mismatch(reduced.segment()) >= 0) {
                            failures.add(t + " " + op + ": reduce differs from all-reduce");
                        }
                        failures.add("crc " + t + " " + op + " " + crc(oneShot.segment()));
                    }
                }
            }
            return failures;
        });
        for (List<String> f : results) {
            assertTrue(f.stream().allMatch(s -> s.startsWith("crc ")), () -> String.join("\n", f));
            assertEquals(results.get(0), f, "results must be bitwise identical on every rank");
        }
    }
}
