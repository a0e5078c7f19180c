package org.jccl.cli.perf;

import org.jccl.internal.Json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PerfJsonTest {
    static Run sample(String host) {
        RunInfo info = new RunInfo(host, 2, "host", 4, "0.1.0", "25.0.3+9", "jccl host 4 ranks");
        return new Run(info, List.of(
                new Row("allreduce", "float", "sum", -1, 1024, 256, new Measurement(3.25, 0.315, 0.4725, 0),
                        new Measurement(3.5, 0.2925, 0.43875, Measurement.NOT_CHECKED)),
                new Row("broadcast", "int8", "none", 2, 8, 8, new Measurement(1.0, 0.008, 0.008, 5), null)));
    }

    @Test
    void jsonRoundTripsAndCarriesEveryFieldInEveryRow() {
        Run run = sample("node-1");
        String json = PerfJson.toJson(run);
        List<Run> back = PerfJson.fromJson(json);
        assertEquals(1, back.size());
        assertEquals(run.rows(), back.getFirst().rows());
        assertEquals(run.info(), back.getFirst().info());
        Map<?, ?> top = (Map<?, ?>) Json.parse(json);
        assertEquals(PerfJson.FORMAT, top.get("format"));
        Map<?, ?> r0 = (Map<?, ?>) ((List<?>) ((Map<?, ?>) ((List<?>) top.get("runs")).getFirst()).get("rows")).getFirst();
        for (String k : List.of("hostname", "cores", "backend", "ranks", "jccl_version", "jdk", "collective", "dtype",
                "op", "root", "bytes", "count", "oop", "ip")) {
            assertTrue(r0.containsKey(k), "row lacks " + k);
        }
        assertEquals("node-1", r0.get("hostname"));
        assertEquals(2L, r0.get("cores"));
        assertEquals(Map.of("time_us", 3.5, "algbw", 0.2925, "busbw", 0.43875), withoutNull((Map<?, ?>) r0.get("ip")));
        assertNull(((Map<?, ?>) r0.get("ip")).get("wrong"));
    }

    private static Map<Object, Object> withoutNull(Map<?, ?> m) {
        Map<Object, Object> out = new java.util.HashMap<>();
        m.forEach((k, v) -> {
            if (v != null) {
                out.put(k, v);
            }
        });
        return out;
    }

    @Test
    void escapesHostileText() {
        Run run = sample("evil\"host\\\n\u0007,x");
        List<Run> back = PerfJson.fromJson(PerfJson.toJson(run));
        assertEquals("evil\"host\\\n\u0007,x", back.getFirst().info().hostname());
        String csv = PerfJson.toCsv(run);
        assertTrue(csv.contains("\"evil\"\"host\\\n\u0007,x\""), csv);
    }

    @Test
    void theFirstCallTimeRoundTripsThroughJsonAndEndsTheCsvLine() {
        RunInfo info = new RunInfo("h", 2, "host", 2, "0.1.0", "25", "jccl host 2 ranks");
        Run run = new Run(info, List.of(new Row("allreduce", "float", "sum", -1, 8, 2,
                new Measurement(1.5, 0.01, 0.01, 0, 850.5), new Measurement(1.25, 0.01, 0.01, 0, 4.75))));
        String json = PerfJson.toJson(run);
        assertTrue(json.contains("\"first_us\": 850.5") && json.contains("\"first_us\": 4.75"), json);
        assertEquals(run.rows(), PerfJson.fromJson(json).getFirst().rows());
        assertTrue(PerfJson.toCsv(run).split("\n")[1].endsWith(",850.5,4.75,,"), PerfJson.toCsv(run));
    }

    @Test
    void theTimeToSteadyStateRoundTripsThroughJsonAndEndsTheCsvLine() {
        RunInfo info = new RunInfo("h", 2, "host", 2, "0.1.0", "25", "jccl host 2 ranks");
        Run run = new Run(info, List.of(new Row("allreduce", "float", "sum", -1, 8, 2,
                new Measurement(1.5, 0.01, 0.01, 0, 850.5, 12000.25), new Measurement(1.25, 0.01, 0.01, 0, 4.75, -1))));
        String json = PerfJson.toJson(run);
        assertTrue(json.contains("\"to_steady_us\": 12000.25") && json.contains("\"to_steady_us\": -1"), json);
        assertEquals(run.rows(), PerfJson.fromJson(json).getFirst().rows());
        assertTrue(PerfJson.toCsv(run).split("\n")[1].endsWith(",850.5,4.75,12000.25,-1"), PerfJson.toCsv(run));
    }

    @Test
    void csvHasTheColumnsAndOneLinePerRow() {
        String csv = PerfJson.toCsv(sample("h"));
        String[] lines = csv.split("\n");
        assertEquals(3, lines.length);
        assertEquals(String.join(",", PerfJson.CSV_COLUMNS), lines[0]);
        assertEquals("h,2,host,4,0.1.0,25.0.3+9,allreduce,float,sum,-1,1024,256,3.25,0.315,0.4725,0,3.5,0.2925,0.43875,,,,,",
                lines[1]);
        assertEquals("h,2,host,4,0.1.0,25.0.3+9,broadcast,int8,none,2,8,8,1,0.008,0.008,5,,,,,,,,", lines[2]);
    }

    @Test
    void readsTheBenchDriversFormat() {
        // bench/README.md's example: machine fields once per run, no jccl fields, an ip of null.
        String doc = "{\"runs\":[{\"label\":\"Open MPI v4.1.4\", \"machine\":\"AMD EPYC, 2 cores (vm)\", \"backend\":\"mpi\","
                + " \"ranks\":2, \"rows\":[{\"collective\":\"allreduce\", \"dtype\":\"float\", \"op\":\"sum\", \"root\":-1,"
                + " \"bytes\":1024, \"count\":256, \"oop\":{\"time_us\":1.234, \"algbw\":0.83, \"busbw\":0.83, \"wrong\":0},"
                + " \"ip\": null}]}, {\"label\":\"gloo\", \"backend\":\"gloo\", \"ranks\":2, \"rows\":[]}]}";
        List<Run> runs = PerfJson.fromJson(doc);
        assertEquals(2, runs.size());
        Run mpi = runs.getFirst();
        assertEquals("Open MPI v4.1.4", mpi.info().label());
        assertEquals("mpi", mpi.info().backend());
        assertEquals(2, mpi.info().ranks());
        assertEquals(new Row("allreduce", "float", "sum", -1, 1024, 256, new Measurement(1.234, 0.83, 0.83, 0), null),
                mpi.rows().getFirst());
        assertTrue(runs.get(1).rows().isEmpty());
    }

    @Test
    void namesWhatIsWrongInABadFile(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("bad.json");
        Files.writeString(f, "{\"runs\":[{\"rows\":[{\"collective\":\"allreduce\"}]}]}");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PerfJson.read(f));
        assertTrue(e.getMessage().contains("bad.json") && e.getMessage().contains("\"bytes\"")
                && e.getMessage().contains("row 0"), e.getMessage());
        Files.writeString(f, "[1,2]");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PerfJson.read(f)).getMessage().contains("object"));
        Files.writeString(f, "{\"runs\":[{\"rows\":[{\"collective\":\"x\",\"bytes\":8,\"oop\":{\"algbw\":1}}]}]}");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PerfJson.read(f)).getMessage().contains("time_us"));
    }

    @Test
    void writesFiles(@TempDir Path dir) throws Exception {
        Path j = dir.resolve("r.json");
        Path c = dir.resolve("r.csv");
        PerfJson.writeJson(sample("h"), j);
        PerfJson.writeCsv(sample("h"), c);
        assertEquals(sample("h").rows(), PerfJson.read(j).getFirst().rows());
        assertEquals(3, Files.readAllLines(c).size());
    }
}
