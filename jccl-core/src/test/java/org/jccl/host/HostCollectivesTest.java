package org.jccl.host;

import org.jccl.host.tune.Tuner;
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
 * Every all-reduce algorithm forced in turn gives bitwise the same results on every rank (shared
 * memory; {@link TcpCollectivesTest} runs it over TCP). The collective x type x op x count matrix
 * itself is the conformance kit's ({@code org.jccl.kit.ConformanceTest}).
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

    static void check(List<String> failures, String what, HostBuffer got, DataType t, ReduceOp op, long seed, int n,
                      long firstIndex, long count) {
        long wrong = Reference.countWrong(got.segment(), 0, t, op, seed, n, firstIndex, count);
        if (wrong != 0) {
            failures.add(what + ": " + wrong + " of " + count + " elements wrong");
        }
    }

    /**
     * {@code count} random values of the float type {@code t} (rank {@code rank}'s, seeded with 77 +
     * rank): in [-1000, 1000) rounded to the type, random bytes below 0x78 for the 1-byte floats.
     */
    static HostBuffer randomInput(DataType t, long count, int rank, Arena arena) {
        HostBuffer in = HostBuffer.allocate(t, count, arena);
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(77 + rank);
        for (long i = 0; i < count; i++) {
            double v = (rnd.nextDouble() * 2 - 1) * (t.byteSize() == 1 ? 8 : 1000);
            if (t.byteSize() == 1) {
                in.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(0x78));
            } else {
                Reference.writeFloat(in.segment(), t, i, t == DataType.FLOAT32 || t == DataType.FLOAT64 ? v
                        : Reference.readFloatRounded(t, v));
            }
        }
        return in;
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
                        HostBuffer in = randomInput(t, count, comm.rank(), arena);
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
