package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.ReduceOp;
import org.jccl.internal.WarmupSetting;
import org.junit.jupiter.api.Test;

/**
 * The pure parts of {@link NcclWarmup} (no GPU): which all-reduces reach which path of the tuner,
 * the layout of its one allocation, when a rank votes to stop, the block schedule, the setting,
 * and how a failed warm-up collective becomes the creation's failure. The warm-up itself runs in
 * {@link NcclWarmupTest} (GPUs).
 */
class NcclWarmupPlanTest {
    private static final int SUM = ReduceOp.Kind.SUM.ncclValue();

    @Test
    void theSmallCountsRunJcclsKernelsAndTheOthersReachNcclByTheTunersSizeRules() {
        for (int n = 2; n <= CustomAllReduce.MAX_RANKS; n++) {
            for (long small : new long[] {NcclWarmup.SMALL, NcclWarmup.MID}) {
                // MID is above LL's limit with 3-8 ranks (16 KiB): Lamport with 3-4, one-shot with 5-8
                int expected = small * 4 <= CustomAllReduce.llMax(n) ? CustomAllReduce.LL
                        : small * 4 <= CustomAllReduce.lamportMax(n) ? CustomAllReduce.LAMPORT : CustomAllReduce.ONE_SHOT;
                assertEquals(expected, CustomAllReduce.choose(CustomAllReduce.AUTO, n, small,
                        DataType.FLOAT32, SUM), small + " floats on " + n + " ranks");
                assertTrue(small * 4 % 8 != 0, "a count with a tail after the 8-byte lines");
            }
            assertEquals(CustomAllReduce.LL_BY_DEFAULT ? CustomAllReduce.LL : CustomAllReduce.ONE_SHOT,
                    CustomAllReduce.choose(CustomAllReduce.AUTO, n, NcclWarmup.SMALL, DataType.FLOAT32, SUM),
                    "the tuner's smallest kernel runs in every block");
            long[] kernels = NcclWarmup.kernelCounts(n);
            java.util.Set<Integer> reached = new java.util.HashSet<>();
            for (long k : kernels) {
                int algo = CustomAllReduce.choose(CustomAllReduce.AUTO, n, k, DataType.FLOAT32, SUM);
                assertTrue(algo != CustomAllReduce.NCCL && algo != CustomAllReduce.LL, k + " floats on " + n + " ranks: " + algo);
                assertTrue(reached.add(algo), "one count per kernel: " + k + " floats on " + n + " ranks");
                assertTrue(k * 4 % 16 != 0, "a count with a tail after the 16-byte packs");
            }
            // every kernel the tuner picks between LL's limit and the largest kernel size gets a count
            for (long bytes = CustomAllReduce.llMax(n) + 16; bytes <= CustomAllReduce.kernelsMax(n); bytes *= 2) {
                int algo = CustomAllReduce.choose(CustomAllReduce.AUTO, n, bytes / 4, DataType.FLOAT32, SUM);
                assertTrue(reached.contains(algo), algo + " at " + bytes + " B on " + n + " ranks has no warm-up count");
            }
            long kernelsMax = CustomAllReduce.kernelsMax(n);
            long[] big = NcclWarmup.ncclSizedCounts(n);
            for (long count : big) {
                assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(CustomAllReduce.AUTO, n, count, DataType.FLOAT32,
                        SUM), count + " floats on " + n + " ranks");
            }
            // both of the tuner's reasons to pick NCCL by size: above a slot, and above the kernels' limits below it
            assertTrue(big[big.length - 1] * 4 > CustomAllReduce.SLOT_BYTES);
            if (kernelsMax < CustomAllReduce.SLOT_BYTES) {
                assertEquals(2, big.length, n + " ranks");
                assertTrue(big[0] * 4 > kernelsMax && big[0] * 4 <= CustomAllReduce.SLOT_BYTES);
            } else {
                assertEquals(1, big.length, n + " ranks");
            }
            long[] all = NcclWarmup.allReduceCounts(n);
            assertEquals(NcclWarmup.SMALL, all[0]);
            assertEquals(NcclWarmup.MID, all[1]);
            int k = 2 + kernels.length;
            for (int i = 0; i < kernels.length; i++) {
                assertEquals(kernels[i], all[2 + i]);
            }
            assertEquals(k + big.length, all.length);
            assertEquals(big[0], all[k]);
        }
        // the other types of a block: bfloat16 and float16 on the kernels, int32 on NCCL
        int small = CustomAllReduce.LL_BY_DEFAULT ? CustomAllReduce.LL : CustomAllReduce.ONE_SHOT;
        assertEquals(small, CustomAllReduce.choose(CustomAllReduce.AUTO, 2, 2L * NcclWarmup.SMALL, DataType.BFLOAT16, SUM));
        assertEquals(small, CustomAllReduce.choose(CustomAllReduce.AUTO, 2, 2L * NcclWarmup.SMALL, DataType.FLOAT16, SUM));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(CustomAllReduce.AUTO, 2, NcclWarmup.SMALL,
                DataType.INT32, SUM));
        // the vote: MAX goes to NCCL whatever its size
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(CustomAllReduce.AUTO, 2, 2, DataType.INT32,
                ReduceOp.Kind.MAX.ncclValue()));
    }

    @Test
    void theRegionsOfTheOneAllocationAreAlignedDisjointAndInOrder() {
        long[] bytes = {28, 28, 16396, 16396, 1, 256, 0, 1048596};
        long[] off = NcclWarmup.offsets(bytes);
        assertEquals(bytes.length + 1, off.length);
        assertEquals(0, off[0]);
        for (int i = 0; i < bytes.length; i++) {
            assertEquals(0, off[i] % NcclWarmup.ALIGN, "region " + i);
            assertTrue(off[i] + bytes[i] <= off[i + 1], "region " + i + " ends before the next starts");
            assertTrue(off[i + 1] - off[i] < bytes[i] + NcclWarmup.ALIGN, "region " + i + " wastes less than the alignment");
        }
        // a block's whole layout for 8 ranks stays small: about 2 MiB
        long[] counts = NcclWarmup.allReduceCounts(8);
        long total = 0;
        for (long c : counts) {
            total += 2 * c * 4;
        }
        assertTrue(total < 3L << 20, total + " bytes");
    }

    @Test
    void aColdJvmGoesOnUntilItsMinimumAndAQuietJitAWarmOneLeavesAfterAQuietBlock() {
        long t0 = 1_000_000_000_000L;
        long ms = 1_000_000;
        // cold: quiet counts from the start, and the JVM's minimum must be made first
        long cold = NcclWarmup.initialLastCompile(t0, 0);
        assertEquals(t0, cold);
        assertTrue(WarmupSetting.busy(true, t0 + 2 * ms, cold, 100));
        assertTrue(WarmupSetting.busy(true, t0 + 100 * ms, cold, WarmupSetting.MIN_CALLS - 1), "below the minimum");
        assertFalse(WarmupSetting.busy(true, t0 + 100 * ms, cold, WarmupSetting.MIN_CALLS));
        assertTrue(WarmupSetting.busy(true, t0 + 100 * ms, t0 + 50 * ms, WarmupSetting.MIN_CALLS), "a compilation 50 ms ago");
        // warm: the first quiet block ends it
        long warm = NcclWarmup.initialLastCompile(t0, WarmupSetting.MIN_CALLS);
        assertFalse(WarmupSetting.busy(true, t0 + ms, warm, WarmupSetting.MIN_CALLS + 60));
        assertTrue(WarmupSetting.busy(true, t0 + ms, t0 + ms, WarmupSetting.MIN_CALLS + 60), "a compilation ended in the block");
        // no compilation clock: only the bound ends it
        assertTrue(WarmupSetting.busy(false, t0 + 1000 * ms, warm, Long.MAX_VALUE));
    }

    @Test
    void everySixteenBlocksOneRunsWithoutTheKernelsAndTheNumberingRestarts() {
        int without = 0;
        for (int b = 1; b <= 4 * NcclWarmup.RESTART_EVERY; b++) {
            without += NcclWarmup.withoutKernels(b) ? 1 : 0;
            assertEquals(b % NcclWarmup.RESTART_EVERY == 0, NcclWarmup.restartAfter(b), "after block " + b);
        }
        assertEquals(4, without);
        assertFalse(NcclWarmup.withoutKernels(1), "a warm JVM's one block keeps the kernels");
    }

    @Test
    void everyRankIsOnceLateLongEnoughForTheOthersToWaitThroughEveryPhaseAndOddBlocksStartWithoutAContext() {
        // the others' wait must pass the GPU wait's spin and yield phases and the work's 1 ms check
        assertTrue(NcclWarmup.LATE_NANOS > 2_000_000 && NcclWarmup.LATE_NANOS <= 5_000_000, "" + NcclWarmup.LATE_NANOS);
        for (int n : new int[] {2, 3, 4, 8, 16}) {
            java.util.Set<Integer> late = new java.util.TreeSet<>();
            int lateBlocks = 0;
            for (int b = 0; b < n * NcclWarmup.RESTART_EVERY; b++) {
                int r = NcclWarmup.lateRank(b, n);
                if (r >= 0) {
                    assertTrue(r < n, "block " + b + " of " + n + " ranks: rank " + r);
                    lateBlocks++;
                    late.add(r);
                }
            }
            assertEquals(n, lateBlocks, "one late block in " + NcclWarmup.RESTART_EVERY + " at " + n + " ranks");
            assertEquals(n, late.size(), "each of the " + n + " ranks is late once in its first " + n + " x "
                    + NcclWarmup.RESTART_EVERY + " blocks: " + late);
        }
        assertEquals(0, NcclWarmup.lateRank(2, 4), "within the first blocks, while the wait is still being profiled");
        assertEquals(-1, NcclWarmup.lateRank(0, 4), "a warm JVM's one block is not held back");
        assertFalse(NcclWarmup.withoutContext(0), "a warm JVM's one block starts as the caller left it");
        assertTrue(NcclWarmup.withoutContext(1));
        assertFalse(NcclWarmup.withoutContext(2));
    }

    @Test
    void pointToPointCollectivesOnlyUpToAHostsEightGpus() {
        assertTrue(NcclWarmup.pointToPoint(2));
        assertTrue(NcclWarmup.pointToPoint(8));
        assertFalse(NcclWarmup.pointToPoint(9), "NCCL would connect every pair of a large job at creation");
        assertFalse(NcclWarmup.pointToPoint(1024));
    }

    @Test
    void theSettingIsTheHostEnginesSecondsOrOff() {
        assertEquals(WarmupSetting.DEFAULT_SECONDS, WarmupSetting.seconds(null));
        assertEquals(WarmupSetting.DEFAULT_SECONDS, WarmupSetting.seconds("on"));
        assertEquals(0.0, WarmupSetting.seconds("off"));
        assertEquals(0.0, WarmupSetting.seconds(" 0 "));
        assertEquals(0.5, WarmupSetting.seconds("0.5"));
        for (String bad : new String[] {"-1", "601", "NaN", "soon"}) {
            IllegalArgumentException x = assertThrows(IllegalArgumentException.class, () -> WarmupSetting.seconds(bad));
            assertTrue(x.getMessage().startsWith("JCCL_WARMUP=" + bad), x.getMessage());
        }
        // read through the settings bound to the creating thread, as a communicator's creation does
        double bound = org.jccl.internal.Settings.with(java.util.Map.of("JCCL_WARMUP", "0.25"), WarmupSetting::seconds);
        assertEquals(0.25, bound);
        double off = org.jccl.internal.Settings.with(java.util.Map.of("JCCL_WARMUP", "off"), WarmupSetting::seconds);
        assertEquals(0.0, off);
    }

    @Test
    void aFailedWarmUpCollectiveFailsTheCreationWithTheSameKindOfException() {
        String comm = "rank 1 of 2 (NCCL comm x, GPU 1)";
        RuntimeException t = NcclWarmup.failed(comm, 4,
                new CollectiveTimeoutException("nccl allReduce #9 did not complete", List.of(0)));
        assertInstanceOf(CollectiveTimeoutException.class, t);
        assertEquals(List.of(0), ((CollectiveTimeoutException) t).missingRanks());
        assertTrue(t.getMessage().startsWith("the JIT warm-up at the creation of " + comm + " failed in block 5 "
                + "(JCCL_WARMUP=0 turns it off): nccl allReduce #9"), t.getMessage());
        RuntimeException p = NcclWarmup.failed(comm, 0, new PeerFailureException(0, "rank 0 died"));
        assertInstanceOf(PeerFailureException.class, p);
        assertEquals(0, ((PeerFailureException) p).rank());
        assertInstanceOf(AbortedException.class, NcclWarmup.failed(comm, 0, new AbortedException("aborted")));
        JcclException plain = new JcclException("NCCL said no");
        RuntimeException j = NcclWarmup.failed(comm, 0, plain);
        assertSame(JcclException.class, j.getClass());
        assertSame(plain, j.getCause());
        IllegalStateException bug = new IllegalStateException("a bug");
        assertSame(bug, NcclWarmup.failed(comm, 0, bug), "not a collective's failure: unchanged");
    }
}
