package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;

/** The checked-in fatbin of jccl's all-reduce kernels, JCCL_ALGO's values and the tuner; no GPU needed. */
class CustomAllReduceSourceTest {
    private static final int SUM = ReduceOp.Kind.SUM.ncclValue();

    @Test
    void theCheckedInFatbinWasBuiltFromTheCheckedInSource() throws Exception {
        Path cu = Path.of("src/main/cuda/custom_allreduce.cu");
        byte[] digest = MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(cu));
        String recorded;
        try (var in = CustomAllReduce.class.getResourceAsStream("custom_allreduce.sha256")) {
            recorded = new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim();
        }
        assertEquals(recorded, HexFormat.of().formatHex(digest),
                "custom_allreduce.cu changed since the fatbin was built: run jccl-cuda/src/main/cuda/gen-custom-allreduce.sh");
        byte[] image = CustomAllReduce.image();
        // a fatbin starts with its magic 0xBA55ED50 (little endian)
        assertArrayEquals(new byte[] {0x50, (byte) 0xED, 0x55, (byte) 0xBA}, java.util.Arrays.copyOf(image, 4));
        String text = new String(image, StandardCharsets.ISO_8859_1);
        for (String k : new String[] {"jccl_car_f32", "jccl_car_f16", "jccl_car_bf16"}) {
            assertTrue(text.contains(k), k + " is not in the fatbin");
        }
        assertTrue(!text.contains("multimem") && !text.contains("cuMulticast"), "the kernels must not use NVLink multicast");
    }

    @Test
    void theBufferLayoutAndLimitsAreTheKernelSources() throws Exception {
        String cu = Files.readString(Path.of("src/main/cuda/custom_allreduce.cu"));
        java.util.function.Function<String, Long> constant = name -> {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("constexpr (?:int|long long) " + name + " = (\\d+);").matcher(cu);
            assertTrue(m.find(), name + " is not a constant of custom_allreduce.cu");
            return Long.parseLong(m.group(1));
        };
        assertEquals(CustomAllReduce.MAX_RANKS, constant.apply("MAX_RANKS"));
        assertEquals(CustomAllReduce.MAX_BLOCKS, constant.apply("MAX_BLOCKS"));
        assertEquals(CustomAllReduce.THREADS, constant.apply("THREADS"));
        assertEquals(CustomAllReduce.PEERS_OFF, constant.apply("PEERS_OFF"));
        assertEquals(CustomAllReduce.DATA_OFF, constant.apply("DATA_OFF"));
        assertEquals(CustomAllReduce.LL_SLOT, constant.apply("LL_SLOT"));
        assertEquals(CustomAllReduce.LAMPORT_SLOT, constant.apply("LAMPORT_SLOT"));
        assertEquals(2, constant.apply("LAMPORT_PARITIES"), "BUFFER_BYTES holds two Lamport parities");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(
                "constexpr int ALGO_ONE_SHOT = (\\d+), ALGO_TWO_SHOT = (\\d+), ALGO_LL = (\\d+), ALGO_LAMPORT = (\\d+), ALGO_LAMPORT_TWO_SHOT = (\\d+);")
                .matcher(cu);
        assertTrue(m.find(), "the kernel's algorithm codes");
        assertEquals(Integer.parseInt(m.group(1)), CustomAllReduce.kernelAlgo(CustomAllReduce.ONE_SHOT));
        assertEquals(Integer.parseInt(m.group(2)), CustomAllReduce.kernelAlgo(CustomAllReduce.TWO_SHOT));
        assertEquals(Integer.parseInt(m.group(3)), CustomAllReduce.kernelAlgo(CustomAllReduce.LL));
        assertEquals(Integer.parseInt(m.group(4)), CustomAllReduce.kernelAlgo(CustomAllReduce.LAMPORT));
        assertEquals(Integer.parseInt(m.group(5)), CustomAllReduce.kernelAlgo(CustomAllReduce.LAMPORT_TWO_SHOT));
        assertTrue(cu.contains("lp_off + (long long)LAMPORT_PARITIES * MAX_RANKS * LAMPORT_SLOT"), "the gather areas follow");
        assertEquals(CustomAllReduce.LP_OFF + 2L * CustomAllReduce.MAX_RANKS * CustomAllReduce.LAMPORT_SLOT, CustomAllReduce.AG_OFF);
        // the kernel finds the Lamport areas after the LL areas: LP_OFF = DATA_OFF + 2 * slot + 2 * MAX_RANKS * LL_SLOT
        assertTrue(cu.contains("const long long lp_off = DATA_OFF + 2 * slot_bytes + 2LL * MAX_RANKS * LL_SLOT;"), "lp_off");
        assertEquals(CustomAllReduce.DATA_OFF + 2 * CustomAllReduce.SLOT_BYTES + 2L * CustomAllReduce.MAX_RANKS
                * CustomAllReduce.LL_SLOT, CustomAllReduce.LP_OFF);
    }

    @Test
    void jcclAlgoTakesTheGpuNamesAndRejectsOthersNamingThem() {
        assertEquals(CustomAllReduce.AUTO, CustomAllReduce.mode(null));
        assertEquals(CustomAllReduce.AUTO, CustomAllReduce.mode(" "));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.mode("NCCL"));
        assertEquals(CustomAllReduce.ONE_SHOT, CustomAllReduce.mode("oneshot"));
        assertEquals(CustomAllReduce.TWO_SHOT, CustomAllReduce.mode("twoshot"));
        assertEquals(CustomAllReduce.TWO_SHOT, CustomAllReduce.mode("rsag"));
        assertEquals(CustomAllReduce.LL, CustomAllReduce.mode("LL"));
        assertEquals(CustomAllReduce.LAMPORT, CustomAllReduce.mode("lamport"));
        assertEquals(CustomAllReduce.LAMPORT_TWO_SHOT, CustomAllReduce.mode("lamport2"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CustomAllReduce.mode("ring"));
        assertTrue(e.getMessage().contains("'ring'") && e.getMessage().contains("nccl, oneshot, twoshot (also rsag), ll, lamport, lamport2"),
                e.getMessage());
    }

    @Test
    void theTunerGivesTheKernelsOnlyWhatTheyCanRun() {
        int auto = CustomAllReduce.AUTO;
        int small = CustomAllReduce.LL_BY_DEFAULT ? CustomAllReduce.LL : CustomAllReduce.ONE_SHOT;
        assertEquals(small, CustomAllReduce.choose(auto, 2, 2, DataType.FLOAT32, SUM));
        assertEquals(small, CustomAllReduce.choose(auto, 4, 1, DataType.BFLOAT16, SUM));
        assertEquals(small, CustomAllReduce.choose(auto, 2, CustomAllReduce.llMax(2) / 4, DataType.FLOAT32, SUM));
        assertEquals(CustomAllReduce.LAMPORT, CustomAllReduce.choose(auto, 2, CustomAllReduce.llMax(2) / 4 + 1,
                DataType.FLOAT32, SUM), "above LL's limit: Lamport");
        assertEquals(CustomAllReduce.LAMPORT, CustomAllReduce.choose(auto, 2, CustomAllReduce.LAMPORT_MAX / 4,
                DataType.FLOAT32, SUM), "Lamport up to all it takes");
        assertEquals(CustomAllReduce.ONE_SHOT, CustomAllReduce.choose(auto, 2, CustomAllReduce.LAMPORT_MAX / 4 + 1,
                DataType.FLOAT32, SUM), "above Lamport's limit: one-shot");
        assertEquals(small, CustomAllReduce.choose(auto, 4, CustomAllReduce.llMax(4) / 4, DataType.FLOAT32, SUM));
        assertEquals(CustomAllReduce.LAMPORT, CustomAllReduce.choose(auto, 4, CustomAllReduce.llMax(4) / 4 + 1,
                DataType.FLOAT32, SUM), "above LL's limit: Lamport");
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(auto, 4, CustomAllReduce.LAMPORT_MAX / 4 + 1,
                DataType.FLOAT32, SUM), "above Lamport's limit with 4 ranks: NCCL");
        assertEquals(CustomAllReduce.ONE_SHOT, CustomAllReduce.choose(auto, 8, (16 << 10) / 4 + 1, DataType.FLOAT32, SUM),
                "no Lamport with more than 4 ranks (unmeasured): one-shot above LL's limit");
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(auto, 2, 0, DataType.FLOAT32, SUM));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(auto, 2, 16, DataType.FLOAT32,
                ReduceOp.Kind.MAX.ncclValue()));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(auto, 2, 16, DataType.FLOAT64, SUM));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(auto, 2, 16, DataType.INT32, SUM));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(auto, 1, 16, DataType.FLOAT32, SUM));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(auto, 9, 16, DataType.FLOAT32, SUM));
        long slotFloats = CustomAllReduce.SLOT_BYTES / 4;
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(CustomAllReduce.ONE_SHOT, 2, slotFloats + 1,
                DataType.FLOAT32, SUM), "more than a slot never goes to the kernels, even forced");
        assertEquals(CustomAllReduce.TWO_SHOT, CustomAllReduce.choose(CustomAllReduce.TWO_SHOT, 2, slotFloats,
                DataType.FLOAT32, SUM));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(CustomAllReduce.NCCL, 2, 2, DataType.FLOAT32, SUM));
        assertEquals(CustomAllReduce.LL, CustomAllReduce.choose(CustomAllReduce.LL, 4, CustomAllReduce.LL_MAX / 2,
                DataType.FLOAT16, SUM));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(CustomAllReduce.LL, 4, CustomAllReduce.LL_MAX / 4 + 1,
                DataType.FLOAT32, SUM), "more than LL_MAX never goes to the LL kernel, even forced");
        assertEquals(CustomAllReduce.LAMPORT, CustomAllReduce.choose(CustomAllReduce.LAMPORT, 4, CustomAllReduce.LAMPORT_MAX / 2,
                DataType.BFLOAT16, SUM));
        assertEquals(CustomAllReduce.NCCL, CustomAllReduce.choose(CustomAllReduce.LAMPORT, 4, CustomAllReduce.LAMPORT_MAX / 4 + 1,
                DataType.FLOAT32, SUM), "more than LAMPORT_MAX never goes to the Lamport kernel, even forced");
        // every size the tuner gives the kernels fits a slot; above the tuner's limits NCCL runs
        for (int n = 2; n <= 8; n++) {
            for (long bytes = 4; bytes <= 4 * CustomAllReduce.SLOT_BYTES; bytes *= 2) {
                int a = CustomAllReduce.choose(auto, n, bytes / 4, DataType.FLOAT32, SUM);
                long limit = Math.max(Math.max(CustomAllReduce.llMax(n), CustomAllReduce.lamportMax(n)),
                        Math.max(CustomAllReduce.oneShotMax(n), CustomAllReduce.twoShotMax(n)));
                assertEquals(limit, CustomAllReduce.kernelsMax(n));
                assertEquals(bytes <= limit, a != CustomAllReduce.NCCL, n + " ranks, " + bytes + " B");
            }
        }
    }

    @Test
    void blocksFollowTheWorkOfOneRankWithinTheFlagArea() {
        assertEquals(1, CustomAllReduce.blocks(CustomAllReduce.ONE_SHOT, 1, DataType.FLOAT32));
        assertEquals(1, CustomAllReduce.blocks(CustomAllReduce.ONE_SHOT, 2048, DataType.FLOAT32));
        assertEquals(2, CustomAllReduce.blocks(CustomAllReduce.ONE_SHOT, 2052, DataType.FLOAT32));
        assertEquals(CustomAllReduce.GRID_MAX, CustomAllReduce.blocks(CustomAllReduce.ONE_SHOT, 1 << 20,
                DataType.FLOAT32));
        // two-shot: the whole buffer's packs (it copies and gathers all of them), not one rank's part
        assertEquals(16, CustomAllReduce.blocks(CustomAllReduce.TWO_SHOT, 32768, DataType.FLOAT32));
        // LL: one 8-byte line per thread, 128 threads a block, up to LL_GRID_MAX blocks
        assertEquals(1, CustomAllReduce.blocks(CustomAllReduce.LL, 1, DataType.FLOAT16));
        assertEquals(1, CustomAllReduce.blocks(CustomAllReduce.LL, 256, DataType.FLOAT32));
        assertEquals(2, CustomAllReduce.blocks(CustomAllReduce.LL, 257, DataType.FLOAT32));
        assertEquals(Math.min(64, CustomAllReduce.LL_GRID_MAX), CustomAllReduce.blocks(CustomAllReduce.LL, (64 << 10) / 4,
                DataType.FLOAT32));
        assertEquals(CustomAllReduce.LL_GRID_MAX, CustomAllReduce.blocks(CustomAllReduce.LL, CustomAllReduce.LL_MAX / 4,
                DataType.FLOAT32), "the largest LL call fills LL's grid");
        // Lamport: one 16-byte line per thread, 128 threads a block, up to LL_GRID_MAX blocks
        assertEquals(1, CustomAllReduce.blocks(CustomAllReduce.LAMPORT, 1, DataType.FLOAT16));
        assertEquals(1, CustomAllReduce.blocks(CustomAllReduce.LAMPORT, 512, DataType.FLOAT32));
        assertEquals(2, CustomAllReduce.blocks(CustomAllReduce.LAMPORT, 513, DataType.FLOAT32));
        assertEquals(Math.min(64, CustomAllReduce.LL_GRID_MAX), CustomAllReduce.blocks(CustomAllReduce.LAMPORT, (128 << 10) / 4,
                DataType.FLOAT32));
        assertTrue(CustomAllReduce.GRID_MAX <= CustomAllReduce.MAX_BLOCKS && CustomAllReduce.LL_GRID_MAX <= CustomAllReduce.MAX_BLOCKS
                && CustomAllReduce.BLOCK_THREADS <= CustomAllReduce.THREADS);
    }
}
