package org.jccl.diag;

import java.util.List;
import org.jccl.testing.Deoptimizations;

/**
 * FlightRecorderRecompilationTest's program, run in a JVM of its own: a recorder of
 * {@link #CAPACITY} entries is filled halfway and cleared 2000 times (as the JIT warm-up does),
 * then records past its capacity twice (as a caller does), with the JDK's deoptimization events
 * recorded (JFR). Prints every deoptimization as {@code DEOPT class.method bci reason}, the last
 * handle as {@code LAST n}, the recorder's JSON as {@code JSON ...}, then {@code DONE}.
 */
public final class FlightRecorderRecompilationMain {
    static final int CAPACITY = 2000;

    private FlightRecorderRecompilationMain() {
    }

    public static void main(String[] args) throws Exception {
        FlightRecorder rec = new FlightRecorder(CAPACITY, new String[] {"allReduce"});
        long[] last = new long[1];
        List<Deoptimizations.Deopt> deopts = Deoptimizations.during(() -> {
            // As the warm-up: many operations, the recorder cleared before it fills
            for (int block = 0; block < 2_000; block++) {
                record(rec, CAPACITY / 2);
                rec.clear();
            }
            // As the caller: past the capacity, twice
            last[0] = record(rec, 2 * CAPACITY + 7);
        });
        deopts.forEach(d -> System.out.println("DEOPT " + d.where()));
        System.out.println("LAST " + last[0]);
        System.out.println("JSON " + rec.toJson("c", 0, 1, "test").replace('\n', ' '));
        System.out.println("DONE");
    }

    /** {@code n} operations scheduled, started and completed, as the host engine records its calls; the last handle. */
    private static long record(FlightRecorder rec, int n) {
        long h = -1;
        for (int k = 0; k < n; k++) {
            h = rec.schedule(k, 0, 0, 2, 0, -1, -1, k);
            rec.startedNow(h);
            rec.completed(h);
        }
        return h;
    }
}
