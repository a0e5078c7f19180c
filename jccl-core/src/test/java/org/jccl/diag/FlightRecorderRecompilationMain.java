package org.jccl.diag;

import java.nio.file.Files;
import java.nio.file.Path;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingFile;

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
        Path file = Files.createTempFile("jccl-recorder", ".jfr");
        long last;
        try {
            try (Recording jfr = new Recording()) {
                jfr.enable("jdk.Deoptimization").withoutStackTrace();
                jfr.start();
                // As the warm-up: many operations, the recorder cleared before it fills
                for (int block = 0; block < 2_000; block++) {
                    record(rec, CAPACITY / 2);
                    rec.clear();
                }
                // As the caller: past the capacity, twice
                last = record(rec, 2 * CAPACITY + 7);
                jfr.stop();
                jfr.dump(file);
            }
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                RecordedMethod m = e.getValue("method");
                if (m != null) {
                    System.out.println("DEOPT " + m.getType().getName() + "." + m.getName() + " bci " + e.getInt("bci")
                            + " " + e.getString("reason"));
                }
            }
        } finally {
            Files.deleteIfExists(file);
        }
        System.out.println("LAST " + last);
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
