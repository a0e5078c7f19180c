package org.jccl.host.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.management.ThreadMXBean;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;

/**
 * Once compiled, the two-input float reduction allocates nothing for any count, remainders mixed
 * call by call: its loop-free tail included (a tail of vectors of several shapes, tried first,
 * allocated a vector per operation once calls mixed the shapes, C2 no longer knowing each
 * vector's class). Every remainder 0-15 runs, with and without a vector loop in front; the test
 * waits for a window of calls without allocation, up to a deadline, as C2 compiles in the
 * background.
 */
class KernelAllocationTest {
    private static final int WINDOW = 20_000;
    private static final long DEADLINE_NANOS = 60_000_000_000L;

    @Test
    void twoInputFloatTailsAllocateNothingOnceCompiled() {
        assertNotNull(ReductionsTest.impls()[0], "vector kernels");
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        long[] counts = new long[32];
        for (int i = 0; i < counts.length; i++) {
            counts[i] = i < 16 ? i : 64 + (i - 16); // 0-15, then 64-79: a vector loop and each tail
        }
        try (Arena arena = Arena.ofShared()) {
            long max = 80;
            MemorySegment a = arena.allocate(4 * max, 64);
            MemorySegment b = arena.allocate(4 * max, 64);
            MemorySegment d = arena.allocate(4 * max, 64);
            for (int i = 0; i < max; i++) {
                a.setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
                b.setAtIndex(ValueLayout.JAVA_FLOAT, i, 0.5f);
            }
            MemorySegment[] srcs = {a, b};
            long[] offs = {0, 0};
            long start = System.nanoTime();
            long allocated = -1;
            while (System.nanoTime() - start < DEADLINE_NANOS) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int c = 0; c < WINDOW; c++) {
                    Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, d, 0, srcs, offs, 2, counts[c & 31], 1);
                }
                allocated = threads.getCurrentThreadAllocatedBytes() - before;
                if (allocated == 0) {
                    break;
                }
            }
            for (int i = 0; i < 79; i++) {
                assertEquals(i + 0.5f, d.getAtIndex(ValueLayout.JAVA_FLOAT, i), "element " + i);
            }
            if (allocated != 0) {
                fail(WINDOW + " calls still allocated " + allocated + " bytes after " + DEADLINE_NANOS / 1_000_000_000
                        + " s");
            }
        }
    }
}
