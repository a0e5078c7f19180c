package org.jccl.host.kernel;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/** Child-JVM entry of {@link ReductionsValidationTest}: prints the implementation and "OK" after a check. */
public final class FallbackMain {
    private FallbackMain() {
    }

    /** Reduces two small arrays and prints the implementation name, with OK when the result is right. */
    public static void main(String[] args) {
        float[] x = {1, 2, 3}, y = {0.5f, -2, 4}, out = new float[3];
        Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, MemorySegment.ofArray(out), 0,
                new MemorySegment[] {MemorySegment.ofArray(x), MemorySegment.ofArray(y)}, new long[2], 2, 3, 2);
        boolean ok = out[0] == 1.5f && out[1] == 0f && out[2] == 7f;
        System.out.println(Reductions.implementation() + (ok ? " OK" : " WRONG " + java.util.Arrays.toString(out)));
    }
}
