package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.diag.FlightRecorder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DoctorCommandTest {

    static int run(ByteArrayOutputStream out, ByteArrayOutputStream err, String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @Test
    void printsTheVerdictOfEveryRanksDump(@TempDir Path dir) throws Exception {
        String[] names = {"allReduce", "broadcast"};
        for (int r = 0; r < 2; r++) {
            FlightRecorder f = new FlightRecorder(16, names);
            int last = r == 0 ? 3 : 2; // rank 1 never reached #3
            for (int s = 1; s <= last; s++) {
                long h = f.schedule(s, 0, DataType.FLOAT32.ordinal(), 8, ReduceOp.Kind.SUM.ordinal(), -1, -1);
                f.started(h);
                if (s < last || r == 1) {
                    f.completed(h);
                }
            }
            f.dump(dir, "job-x", r, 2, "timeout");
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(0, run(out, err, "doctor", dir.toString()), err.toString());
        String v = out.toString(StandardCharsets.UTF_8);
        assertTrue(v.contains("STUCK at collective #3 allReduce(FLOAT32 x 8, SUM): rank(s) [0] entered it, rank(s) [1] never reached it"), v);
        assertTrue(v.contains("rank 0") && v.contains("started allReduce(FLOAT32 x 8, SUM) #3"), v);
    }

    @Test
    void aMissingDirectoryIsAUsageError(@TempDir Path dir) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(2, run(out, err, "doctor", dir.resolve("nope").toString()));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("DIR"), err.toString(StandardCharsets.UTF_8));
    }
}
