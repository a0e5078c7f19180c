package org.jccl.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingFile;

/**
 * The JDK's own record of the compiled code thrown away while a body ran (JFR's
 * {@code jdk.Deoptimization} events), for the test programs that check the library's compiled
 * code survives a caller's calls.
 */
public final class Deoptimizations {
    private Deoptimizations() {
    }

    /** A body that may throw. */
    @FunctionalInterface
    public interface Body {
        void run() throws Exception;
    }

    /** One deoptimization: when, and where as {@code class.method bci reason}. */
    public record Deopt(Instant at, String where) {
    }

    /** Runs {@code body} and returns the deoptimizations of that time. */
    public static List<Deopt> during(Body body) throws Exception {
        Path file = Files.createTempFile("jccl-deopt", ".jfr");
        try {
            try (Recording rec = new Recording()) {
                rec.enable("jdk.Deoptimization").withoutStackTrace();
                rec.start();
                body.run();
                rec.stop();
                rec.dump(file);
            }
            List<Deopt> deopts = new ArrayList<>();
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                RecordedMethod m = e.getValue("method");
                if (m != null) {
                    deopts.add(new Deopt(e.getStartTime(), m.getType().getName() + "." + m.getName() + " bci "
                            + e.getInt("bci") + " " + e.getString("reason")));
                }
            }
            return deopts;
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
