package org.jccl.host.kernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.testing.Deoptimizations;

/**
 * KernelRecompilationTest's program, run in a JVM of its own: two-input float sums of
 * {@link #COUNT} elements (below one vector: the kernels' tail alone) of a confined and a shared
 * segment, then of shared segments alone, with the JDK's deoptimization events recorded (JFR).
 * Prints every deoptimization as {@code DEOPT class.method bci reason}, then {@code DONE}.
 */
public final class KernelRecompilationMain {
    static final int COUNT = 7;

    private KernelRecompilationMain() {
    }

    public static void main(String[] args) throws Exception {
        List<Deoptimizations.Deopt> deopts = Deoptimizations.during(() -> {
            try (Arena confined = Arena.ofConfined(); Arena shared = Arena.ofShared()) {
                // A caller's confined buffers with a peer's shared slot, then shared buffers alone
                run(confined, shared, 300_000);
                run(shared, shared, 2_000_000);
            }
        });
        deopts.forEach(d -> System.out.println("DEOPT " + d.where()));
        System.out.println("DONE");
    }

    /**
     * {@code calls} two-input float sums: the output and the first input in {@code mine}, the
     * second input in {@code peer}; the result checked.
     */
    private static void run(Arena mine, Arena peer, int calls) {
        MemorySegment a = mine.allocate(4L * COUNT, 64);
        MemorySegment b = peer.allocate(4L * COUNT, 64);
        MemorySegment d = mine.allocate(4L * COUNT, 64);
        for (int i = 0; i < COUNT; i++) {
            a.setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
            b.setAtIndex(ValueLayout.JAVA_FLOAT, i, 1f);
        }
        MemorySegment[] srcs = {a, b};
        long[] offs = {0, 0};
        for (int c = 0; c < calls; c++) {
            Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, d, 0, srcs, offs, 2, COUNT, 1);
        }
        for (int i = 0; i < COUNT; i++) {
            float got = d.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            if (got != i + 1f) {
                throw new AssertionError("element " + i + ": " + got);
            }
        }
    }
}
