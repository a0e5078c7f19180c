package org.jccl.host;

import org.jccl.host.tune.Tuner;
import org.jccl.kit.Reference;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.tcp.TcpCommunicator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link HostCollectivesTest}'s matrix (every collective x dtype x op x size, in place and out of
 * place, 2-4 ranks as threads) with every pair of ranks over TCP ({@code jccl.transport=tcp}, the
 * system property that stands for {@code JCCL_TRANSPORT=tcp}), plus every TCP all-reduce algorithm
 * forced in turn against {@link Reference} on 2, 3, 5 and 6 ranks (powers of two and not).
 */
@org.junit.jupiter.api.extension.ExtendWith(OverTcp.class)
class TcpCollectivesTest extends HostCollectivesTest {

    @Test
    void theTransportPropertyGivesTcpCommunicators() throws Exception {
        List<String> kinds = ThreadRanks.run(2, Duration.ofSeconds(30), comm -> comm.getClass().getSimpleName());
        assertEquals(List.of("TcpCommunicator", "TcpCommunicator"), kinds);
    }

    static final Tuner.AllReduceAlgo[] TCP_ALGOS = {Tuner.AllReduceAlgo.ONESHOT, Tuner.AllReduceAlgo.RING, Tuner.AllReduceAlgo.RHD};

    /** Every forced algorithm, every dtype x op, sizes from empty to several pipelined chunks per part. */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 5, 6})
    void everyTcpAllReduceAlgorithmMatchesTheReference(int n) throws Exception {
        List<List<String>> results = ThreadRanks.run(n, Duration.ofSeconds(60), Duration.ofSeconds(300), comm -> {
            TcpCommunicator tc = (TcpCommunicator) comm;
            List<String> failures = new ArrayList<>();
            int r = comm.rank();
            long seed = 5000;
            try (Arena arena = Arena.ofConfined()) {
                for (Tuner.AllReduceAlgo algo : TCP_ALGOS) {
                    tc.forceAllReduceAlgorithm(algo);
                    for (DataType t : DataType.values()) {
                        for (ReduceOp op : ops(t)) {
                            if (t == DataType.FLOAT8_E5M2 && n > 4 && op.kind() != ReduceOp.Kind.MIN
                                    && op.kind() != ReduceOp.Kind.MAX && op.kind() != ReduceOp.Kind.PROD) {
                                // Reference's values (-2..2) sum exactly in E5M2 only up to 8 (9 and 11 round)
                                continue;
                            }
                            // 1-byte types: 600_011 elements are 3 chunks of 256 KiB per rank's part on 2 ranks
                            long[] counts = op.kind() == ReduceOp.Kind.SUM || op.kind() == ReduceOp.Kind.AVG
                                    ? new long[] {1, 2, 7, 1009, 600_011 / t.byteSize()} : new long[] {1, 1009};
                            for (long count : counts) {
                                seed++;
                                String what = algo + " " + t + " " + op + " count " + count;
                                HostBuffer s = HostBuffer.allocate(t, count, arena);
                                HostBuffer d = HostBuffer.allocate(t, count, arena);
                                Reference.fill(s.segment(), t, op, seed, r, count, n);
                                comm.allReduce(s, d, op);
                                check(failures, what, d, t, op, seed, n, 0, count);
                                comm.allReduce(s, op);
                                check(failures, what + " in place", s, t, op, seed, n, 0, count);
                            }
                        }
                    }
                }
                tc.forceAllReduceAlgorithm(null);
            }
            return failures;
        });
        for (List<String> f : results) {
            assertTrue(f.isEmpty(), () -> String.join("\n", f));
        }
    }

    /**
     * Random (inexact) floats: each algorithm gives bitwise the same result on every rank; one-shot,
     * which reduces the n inputs in rank order with one rounding, equals the root's reduce (the
     * direct reduce does the same); for 32/64-bit floats the chain reduce, a left fold in rank
     * order, equals it too.
     */
    @Override
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    void everyAlgorithmGivesBitwiseIdenticalResults(int n) throws Exception {
        List<List<String>> results = ThreadRanks.run(n, Duration.ofSeconds(60), comm -> {
            TcpCommunicator tc = (TcpCommunicator) comm;
            List<String> failures = new ArrayList<>();
            try (Arena arena = Arena.ofConfined()) {
                for (DataType t : new DataType[] {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16,
                    DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2}) {
                    for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.preMulSum(0.3)}) {
                        for (long count : new long[] {1000, 200_003}) {
                            HostBuffer in = randomInput(t, count, comm.rank(), arena);
                            HostBuffer oneShot = HostBuffer.allocate(t, count, arena);
                            HostBuffer reduced = HostBuffer.allocate(t, count, arena);
                            tc.forceAllReduceAlgorithm(Tuner.AllReduceAlgo.ONESHOT);
                            comm.allReduce(in, oneShot, op);
                            failures.add("crc oneshot " + t + " " + op + " " + count + " " + crc(oneShot.segment()));
                            for (Tuner.AllReduceAlgo algo : new Tuner.AllReduceAlgo[] {Tuner.AllReduceAlgo.RING, Tuner.AllReduceAlgo.RHD}) {
                                HostBuffer x = HostBuffer.allocate(t, count, arena);
                                tc.forceAllReduceAlgorithm(algo);
                                comm.allReduce(in, x, op);
                                failures.add("crc " + algo + " " + t + " " + op + " " + count + " " + crc(x.segment()));
                            }
                            tc.forceAllReduceAlgorithm(null);
                            comm.reduce(in, reduced, op, 0);
                            boolean exactReduce = count <= 1000 // direct reduce: rank order, one rounding
                                    || (t == DataType.FLOAT32 || t == DataType.FLOAT64) && op.kind() != ReduceOp.Kind.PREMUL_SUM;
                            if (comm.rank() == 0 && exactReduce && oneShot.segment().mismatch(reduced.segment()) >= 0) {
                                failures.add("MISMATCH " + t + " " + op + " " + count + ": reduce differs from one-shot all-reduce");
                            }
                        }
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
