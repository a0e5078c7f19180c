package org.jccl.diag;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FlightRecorderDoctorTest {
    static final String[] NAMES = {"allReduce", "broadcast"};

    static FlightRecorder ranks(int upTo, int op, int root) {
        FlightRecorder f = new FlightRecorder(4, NAMES);
        for (int s = 1; s <= upTo; s++) {
            long h = f.schedule(s, s == upTo ? op : 0, DataType.FLOAT32.ordinal(), 100, ReduceOp.Kind.SUM.ordinal(),
                    s == upTo ? root : -1, -1);
            f.started(h);
            if (s < upTo) {
                f.completed(h);
            }
        }
        return f;
    }

    @Test
    void ringKeepsTheNewestEntriesAndRoundTripsThroughTheDump() {
        FlightRecorder f = ranks(10, 0, -1);
        Doctor.RankTrace t = Doctor.parse(f.toJson("c\"1", 3, 4, "why \"not\""));
        assertEquals(3, t.rank());
        assertEquals(4, t.size());
        assertEquals("c\"1".replace("\"", "\""), "c\"1");
        assertEquals("why \"not\"", t.reason());
        assertEquals(List.of(7L, 8L, 9L, 10L), t.ops().stream().map(Doctor.Op::seq).toList());
        assertEquals("started", t.ops().get(3).state());
        assertEquals("completed", t.ops().get(0).state());
        assertEquals("allReduce(FLOAT32 x 100, SUM)", t.ops().get(0).call());
    }

    @Test
    void doctorNamesTheMismatchAndTheRanksOnEachSide(@TempDir Path dir) throws Exception {
        ranks(5, 0, -1).dump(dir, "job", 0, 3, "timeout");
        ranks(5, 0, -1).dump(dir, "job", 1, 3, "timeout");
        ranks(5, 1, 2).dump(dir, "job", 2, 3, "mismatch");
        String v = Doctor.diagnose(dir);
        assertTrue(v.contains("MISMATCH at collective #5"), v);
        assertTrue(v.contains("rank(s) [0, 1] called allReduce(FLOAT32 x 100, SUM)"), v);
        assertTrue(v.contains("rank(s) [2] called broadcast(FLOAT32 x 100, SUM, root 2)"), v);
    }

    @Test
    void doctorNamesTheRankThatNeverArrived(@TempDir Path dir) throws Exception {
        ranks(6, 0, -1).dump(dir, "job", 0, 3, "timeout");
        ranks(5, 0, -1).dump(dir, "job", 1, 3, "timeout");
        ranks(6, 0, -1).dump(dir, "job", 2, 3, "timeout");
        String v = Doctor.diagnose(dir);
        assertTrue(v.contains("STUCK at collective #6 allReduce(FLOAT32 x 100, SUM): rank(s) [0, 2] entered it, rank(s) [1] never reached it"), v);
    }

    /** A dump as a JSON tool rewrites it (pretty-printed, keys reordered) reads the same. */
    @Test
    void aPrettyPrintedDumpWithKeysInAnotherOrderReadsTheSame() {
        String compact = ranks(4, 0, -1).toJson("job", 1, 2, "timeout");
        Doctor.RankTrace want = Doctor.parse(compact);
        StringBuilder pretty = new StringBuilder("{\n  \"ops\" : [\n");
        for (int i = 0; i < want.ops().size(); i++) {
            Doctor.Op o = want.ops().get(i);
            pretty.append("    {\n      \"state\" : \"").append(o.state()).append("\",\n      \"peer\" : ").append(o.peer())
                    .append(",\n      \"root\" : ").append(o.root()).append(",\n      \"redop\" : \"").append(o.redop())
                    .append("\",\n      \"count\" : ").append(o.count()).append(",\n      \"dtype\" : \"").append(o.dtype())
                    .append("\",\n      \"op\" : \"").append(o.op()).append("\",\n      \"seq\" : ").append(o.seq())
                    .append("\n    }").append(i + 1 < want.ops().size() ? ",\n" : "\n");
        }
        pretty.append("  ],\n  \"reason\" : \"timeout\",\n  \"pid\" : ").append(want.pid())
                .append(",\n  \"host\" : \"").append(want.host()).append("\",\n  \"size\" : 2,\n  \"rank\" : 1,\n")
                .append("  \"comm\" : \"job\",\n  \"jccl_trace\" : 1\n}\n");
        assertEquals(want, Doctor.parse(pretty.toString()));
    }

    @Test
    void emptyDirectoryAndBadInput(@TempDir Path dir) throws Exception {
        assertTrue(Doctor.diagnose(dir).contains("no flight recorder dumps"));
        assertThrows(IllegalArgumentException.class, () -> Doctor.parse("{}"));
        assertThrows(IllegalArgumentException.class, () -> Doctor.parse("[1, 2]"));
        assertThrows(IllegalArgumentException.class, () -> Doctor.parse("{\"comm\": \"c\", \"rank\": \"zero\", \"size\": 2}"));
        assertThrows(IllegalArgumentException.class, () -> Doctor.parse("{\"comm\": \"c\", \"rank\": 0,"));
        assertThrows(IllegalArgumentException.class, () -> new FlightRecorder(-1, NAMES));
        assertEquals(-1, new FlightRecorder(0, NAMES).schedule(1, 0, 0, 0, 0, 0, 0));
    }
}
