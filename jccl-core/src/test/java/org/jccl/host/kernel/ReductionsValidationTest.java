package org.jccl.host.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Bad arguments are rejected with a message naming the argument, before any byte is written;
 * the scalar fallback is chosen without the incubator module.
 */
class ReductionsValidationTest {
    private final Arena arena = Arena.ofAuto();
    private final MemorySegment a = filled(64, 1), b = filled(64, 2), dst = filled(64, 9);
    private final byte[] dstBefore = dst.toArray(ValueLayout.JAVA_BYTE);

    private MemorySegment filled(int bytes, int value) {
        MemorySegment s = arena.allocate(bytes);
        s.fill((byte) value);
        return s;
    }

    /** Asserts an IllegalArgumentException mentioning every fragment, and dst untouched. */
    private void rejects(Executable call, String... fragments) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "message '" + e.getMessage() + "' should mention '" + f + "'");
        }
        assertArrayEquals(dstBefore, dst.toArray(ValueLayout.JAVA_BYTE), "no byte may move before the check fails");
    }

    private void reduce(DataType t, ReduceOp op, MemorySegment d, long dOff, MemorySegment[] srcs, long[] offs, int n,
                        long count, int div) {
        Reductions.reduce(t, op, d, dOff, srcs, offs, n, count, div);
    }

    @Test
    void reduceRejectsBadArguments() {
        MemorySegment[] two = {a, b};
        long[] zeros = {0, 0};
        rejects(() -> reduce(null, ReduceOp.SUM, dst, 0, two, zeros, 2, 4, 2), "type");
        rejects(() -> reduce(DataType.FLOAT32, null, dst, 0, two, zeros, 2, 4, 2), "op");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.BXOR, dst, 0, two, zeros, 2, 4, 2), "BXOR", "FLOAT32");
        rejects(() -> reduce(DataType.BFLOAT16, ReduceOp.BAND, dst, 0, two, zeros, 2, 4, 2), "BAND", "BFLOAT16");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, null, 0, two, zeros, 2, 4, 2), "dst");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, null, zeros, 2, 4, 2), "srcs");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, two, null, 2, 4, 2), "srcByteOffsets");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, two, zeros, 0, 4, 2), "n is 0");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, two, zeros, 3, 4, 2), "n is 3");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, two, new long[1], 2, 4, 2), "srcByteOffsets 1");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, new MemorySegment[] {a, null}, zeros, 2, 4, 2),
                "srcs[1] is null");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, two, zeros, 2, -1, 2), "count is -1");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, two, zeros, 2, 17, 2), "dst has 64 bytes",
                "68 bytes");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, -4, two, zeros, 2, 4, 2), "dstByteOffset is -4");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, two, new long[] {0, 60}, 2, 4, 2),
                "srcByteOffsets[1] is 60", "srcs[1]");
        rejects(() -> reduce(DataType.FLOAT64, ReduceOp.SUM, dst, 0, two, zeros, 2, Long.MAX_VALUE / 4, 2), "count");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.AVG, dst, 0, two, zeros, 2, 4, 0), "avgDivisor is 0");
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst.asReadOnly(), 0, two, zeros, 2, 4, 2), "read-only");
        // A source that partially overlaps the destination; the exact same range is fine.
        rejects(() -> reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 0, new MemorySegment[] {a, dst}, new long[] {0, 4},
                2, 4, 2), "srcs[1] overlaps");
    }

    @Test
    void otherEntryPointsRejectBadArguments() {
        rejects(() -> Reductions.accumulate(DataType.FLOAT32, ReduceOp.SUM, dst, 0, null, 0, 4), "src is null");
        rejects(() -> Reductions.accumulate(DataType.FLOAT32, ReduceOp.SUM, dst, 0, a, 56, 4), "srcByteOffset is 56");
        rejects(() -> Reductions.accumulate(DataType.FLOAT32, ReduceOp.SUM, dst, 0, dst, 8, 4), "overlaps");
        rejects(() -> Reductions.accumulate(DataType.FLOAT16, ReduceOp.BOR, dst, 0, a, 0, 4), "BOR", "FLOAT16");
        rejects(() -> Reductions.scale(DataType.FLOAT32, Double.NaN, dst, 0, 4), "scalar is NaN");
        rejects(() -> Reductions.scale(null, 2, dst, 0, 4), "type");
        rejects(() -> Reductions.scale(DataType.INT64, 2, dst, 0, 9), "seg has 64 bytes");
        rejects(() -> Reductions.divide(DataType.INT32, dst, 0, 4, 0), "divisor is 0");
        rejects(() -> Reductions.divide(DataType.INT32, dst, 0, 4, -2), "divisor is -2");
        rejects(() -> Reductions.divide(DataType.INT32, dst, 61, 1, 2), "byteOffset is 61");
    }

    @Test
    void validEdgeCasesAreAccepted() {
        // count 0 with an offset at the very end; in-place on the same range; dst == the only source.
        Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, dst, 64, new MemorySegment[] {a, b}, new long[] {64, 64}, 2,
                0, 2);
        Reductions.accumulate(DataType.INT32, ReduceOp.SUM, a, 0, a, 0, 16);
        assertEquals(0x02020202, a.get(ValueLayout.JAVA_INT, 0));
        Reductions.reduce(DataType.INT8, ReduceOp.MAX, a, 0, new MemorySegment[] {a}, new long[1], 1, 64, 1);
        assertEquals(2, a.get(ValueLayout.JAVA_BYTE, 63));
    }

    @Test
    void scalarKernelsRunWithoutTheIncubatorModule() throws Exception {
        assertEquals("scalar OK", runChild(false, List.of()));
        assertEquals("scalar OK", runChild(true, List.of("-Djccl.kernels=scalar")));
        assertTrue(runChild(true, List.of()).startsWith("vector("));
    }

    /** Runs {@link FallbackMain} in a fresh JVM, with or without jdk.incubator.vector. */
    private static String runChild(boolean withVector, List<String> props) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        if (withVector) {
            cmd.add("--add-modules");
            cmd.add("jdk.incubator.vector");
        }
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.addAll(props);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(FallbackMain.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try (InputStream in = p.getInputStream()) {
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                throw new AssertionError("child JVM did not finish within 60 s: " + cmd);
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            String text = out.toString(StandardCharsets.UTF_8);
            assertEquals(0, p.exitValue(), "child JVM failed: " + text);
            String[] lines = text.strip().split("\\R");
            return lines[lines.length - 1];
        } finally {
            p.destroyForcibly();
        }
    }
}
