package org.jccl.cli.perf;

import org.jccl.internal.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The JSON and CSV files of {@code jccl perf} ({@code --json}, {@code --csv}) and the reader of
 * {@code --compare}. The JSON format is the one bench/ writes for Open MPI and Gloo (documented in
 * {@code docs/PERF_FORMAT.md}); in short:
 *
 * <pre>{@code
 * {"format": "jccl-perf-1",
 *  "runs": [{"label": "jccl host 2 ranks", "machine": "h, 2 cores", "hostname": "h", "cores": 2,
 *            "backend": "host", "ranks": 2, "jccl_version": "0.1.0", "jdk": "25.0.3",
 *            "rows": [{"hostname": "h", "cores": 2, "backend": "host", "ranks": 2, "jccl_version": "0.1.0",
 *                      "jdk": "25.0.3", "collective": "allreduce", "dtype": "float", "op": "sum", "root": -1,
 *                      "bytes": 1024, "count": 256,
 *                      "oop": {"time_us": 3.2, "algbw": 0.32, "busbw": 0.32, "wrong": 0},
 *                      "ip":  {"time_us": 3.1, "algbw": 0.33, "busbw": 0.33, "wrong": 0}}]}]}
 * }</pre>
 *
 * Bandwidths are GB/s (1e9 bytes/s), times microseconds; {@code oop}/{@code ip} are null where a
 * library has no such form, {@code wrong} null when not checked. CSV has one line per row with
 * the columns {@link #CSV_COLUMNS}.
 */
public final class PerfJson {
    /** The value of the "format" field. */
    public static final String FORMAT = "jccl-perf-1";

    /** The CSV columns, in order. */
    public static final List<String> CSV_COLUMNS = List.of("hostname", "cores", "backend", "ranks", "jccl_version",
            "jdk", "collective", "dtype", "op", "root", "bytes", "count",
            "oop_time_us", "oop_algbw", "oop_busbw", "oop_wrong",
            "ip_time_us", "ip_algbw", "ip_busbw", "ip_wrong", "oop_first_us", "ip_first_us", "oop_to_steady_us",
            "ip_to_steady_us");

    private PerfJson() {
    }

    /** The JSON document of a run. */
    public static String toJson(Run run) {
        RunInfo i = run.info();
        String origin = "\"hostname\": " + Json.quote(i.hostname()) + ", \"cores\": " + i.cores()
                + ", \"backend\": " + Json.quote(i.backend()) + ", \"ranks\": " + i.ranks()
                + ", \"jccl_version\": " + Json.quote(i.version()) + ", \"jdk\": " + Json.quote(i.jdk());
        StringBuilder sb = new StringBuilder();
        sb.append("{\"format\": ").append(Json.quote(FORMAT)).append(",\n \"runs\": [{\"label\": ")
                .append(Json.quote(i.label())).append(", \"machine\": ")
                .append(Json.quote(i.hostname() + ", " + i.cores() + " cores")).append(", ").append(origin)
                .append(",\n  \"rows\": [");
        boolean first = true;
        for (Row r : run.rows()) {
            sb.append(first ? "\n" : ",\n").append("   {").append(origin)
                    .append(", \"collective\": ").append(Json.quote(r.collective()))
                    .append(", \"dtype\": ").append(Json.quote(r.dtype()))
                    .append(", \"op\": ").append(Json.quote(r.op()))
                    .append(", \"root\": ").append(r.root())
                    .append(", \"bytes\": ").append(r.bytes())
                    .append(", \"count\": ").append(r.count())
                    .append(", \"oop\": ").append(measurementJson(r.oop()))
                    .append(", \"ip\": ").append(measurementJson(r.ip())).append('}');
            first = false;
        }
        sb.append(first ? "]}]}\n" : "\n  ]}]}\n");
        return sb.toString();
    }

    private static String measurementJson(Measurement m) {
        if (m == null) {
            return "null";
        }
        return "{\"time_us\": " + Json.number(m.timeUs()) + ", \"algbw\": " + Json.number(m.algBw())
                + ", \"busbw\": " + Json.number(m.busBw()) + ", \"wrong\": "
                + (m.checked() ? Long.toString(m.wrong()) : "null")
                + (Double.isNaN(m.firstUs()) ? "" : ", \"first_us\": " + Json.number(m.firstUs()))
                + (Double.isNaN(m.toSteadyUs()) ? "" : ", \"to_steady_us\": " + Json.number(m.toSteadyUs())) + "}";
    }

    /** The CSV document of a run: a header line and one line per row. */
    public static String toCsv(Run run) {
        RunInfo i = run.info();
        StringBuilder sb = new StringBuilder(String.join(",", CSV_COLUMNS)).append('\n');
        for (Row r : run.rows()) {
            List<String> v = new ArrayList<>(CSV_COLUMNS.size());
            v.add(csv(i.hostname()));
            v.add(Integer.toString(i.cores()));
            v.add(csv(i.backend()));
            v.add(Integer.toString(i.ranks()));
            v.add(csv(i.version()));
            v.add(csv(i.jdk()));
            v.add(csv(r.collective()));
            v.add(csv(r.dtype()));
            v.add(csv(r.op()));
            v.add(Integer.toString(r.root()));
            v.add(Long.toString(r.bytes()));
            v.add(Long.toString(r.count()));
            for (Measurement m : new Measurement[] {r.oop(), r.ip()}) {
                v.add(m == null ? "" : csvNumber(m.timeUs()));
                v.add(m == null ? "" : csvNumber(m.algBw()));
                v.add(m == null ? "" : csvNumber(m.busBw()));
                v.add(m == null || !m.checked() ? "" : Long.toString(m.wrong()));
            }
            for (Measurement m : new Measurement[] {r.oop(), r.ip()}) {
                v.add(m == null || Double.isNaN(m.firstUs()) ? "" : csvNumber(m.firstUs()));
            }
            for (Measurement m : new Measurement[] {r.oop(), r.ip()}) {
                v.add(m == null || Double.isNaN(m.toSteadyUs()) ? "" : csvNumber(m.toSteadyUs()));
            }
            sb.append(String.join(",", v)).append('\n');
        }
        return sb.toString();
    }

    private static String csvNumber(double d) {
        String s = Json.number(d);
        return s.equals("null") ? "" : s;
    }

    /** RFC 4180: quote fields with separators, quotes or line breaks; double inner quotes. */
    static String csv(String s) {
        if (s.contains(",") || s.contains("\"") || s.contains("\n") || s.contains("\r")) {
            return "\"" + s.replace("\"", "\"\"") + "\"";
        }
        return s;
    }

    /** Writes a run's JSON to {@code file}. */
    public static void writeJson(Run run, Path file) throws IOException {
        Files.writeString(file, toJson(run), StandardCharsets.UTF_8);
    }

    /** Writes a run's CSV to {@code file}. */
    public static void writeCsv(Run run, Path file) throws IOException {
        Files.writeString(file, toCsv(run), StandardCharsets.UTF_8);
    }

    /**
     * Reads the runs of a file written by {@link #writeJson} or by a bench/ driver.
     *
     * @throws IOException              when the file cannot be read
     * @throws IllegalArgumentException naming the file and what is wrong in it
     */
    public static List<Run> read(Path file) throws IOException {
        String text = Files.readString(file, StandardCharsets.UTF_8);
        try {
            return fromJson(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + " is not a jccl perf JSON file: " + e.getMessage()
                    + " (the format is in docs/PERF_FORMAT.md)", e);
        }
    }

    /**
     * Parses a JSON document: {"runs": [run, ...]}, or a single run object. In a run only "rows"
     * is required, and in a row only "collective" and "bytes"; machine fields may be given once
     * per run instead of in every row.
     */
    public static List<Run> fromJson(String text) {
        if (!(Json.parse(text) instanceof Map<?, ?> top)) {
            throw new IllegalArgumentException("the document is not a JSON object");
        }
        List<?> runs;
        if (top.get("runs") instanceof List<?> l) {
            runs = l;
        } else if (top.containsKey("rows")) {
            runs = List.of(top);
        } else {
            throw new IllegalArgumentException("no \"runs\" array");
        }
        List<Run> out = new ArrayList<>();
        for (int n = 0; n < runs.size(); n++) {
            if (!(runs.get(n) instanceof Map<?, ?> run)) {
                throw new IllegalArgumentException("run " + n + " is not an object");
            }
            out.add(run(run, n));
        }
        return out;
    }

    private static Run run(Map<?, ?> run, int n) {
        if (!(run.get("rows") instanceof List<?> rows)) {
            throw new IllegalArgumentException("run " + n + " has no \"rows\" array");
        }
        String where = "run " + n;
        String backend = str(run, Map.of(), "backend", "unknown", where);
        int ranks = (int) lng(run, Map.of(), "ranks", 0L, where);
        String label = str(run, Map.of(), "label", backend + " " + ranks + " ranks", where);
        String host = str(run, Map.of(), "hostname", str(run, Map.of(), "machine", "", where), where);
        RunInfo info = new RunInfo(host, (int) lng(run, Map.of(), "cores", 0L, where), backend, ranks,
                str(run, Map.of(), "jccl_version", "", where), str(run, Map.of(), "jdk", "", where), label);
        List<Row> out = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            String at = where + " row " + i;
            if (!(rows.get(i) instanceof Map<?, ?> row)) {
                throw new IllegalArgumentException(at + " is not an object");
            }
            out.add(new Row(str(row, run, "collective", null, at), str(row, run, "dtype", "float", at),
                    str(row, run, "op", "none", at), (int) lng(row, run, "root", -1L, at),
                    lng(row, run, "bytes", null, at), lng(row, run, "count", 0L, at),
                    measurement(row.get("oop"), at + " oop"), measurement(row.get("ip"), at + " ip")));
        }
        return new Run(info, out);
    }

    private static Measurement measurement(Object o, String at) {
        if (o == null) {
            return null;
        }
        if (!(o instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException(at + " is neither an object nor null");
        }
        Object w = m.get("wrong");
        return new Measurement(dbl(m.get("time_us"), "time_us", at, false), dbl(m.get("algbw"), "algbw", at, true),
                dbl(m.get("busbw"), "busbw", at, true),
                w == null ? Measurement.NOT_CHECKED : (long) dbl(w, "wrong", at, false),
                dbl(m.get("first_us"), "first_us", at, true), dbl(m.get("to_steady_us"), "to_steady_us", at, true));
    }

    private static double dbl(Object v, String key, String at, boolean optional) {
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        if (v == null && optional) {
            return Double.NaN;
        }
        throw new IllegalArgumentException(at + ": \"" + key + "\" is missing or not a number");
    }

    private static String str(Map<?, ?> row, Map<?, ?> run, String key, String dflt, String at) {
        Object v = row.containsKey(key) ? row.get(key) : run.get(key);
        if (v instanceof String s) {
            return s;
        }
        if (v instanceof Number n) {
            return n.toString();
        }
        if (v == null && dflt != null) {
            return dflt;
        }
        throw new IllegalArgumentException(at + ": \"" + key + "\" is missing or not a string");
    }

    private static long lng(Map<?, ?> row, Map<?, ?> run, String key, Long dflt, String at) {
        Object v = row.containsKey(key) ? row.get(key) : run.get(key);
        if (v instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue())) {
            return n.longValue();
        }
        if (v == null && dflt != null) {
            return dflt;
        }
        throw new IllegalArgumentException(at + ": \"" + key + "\" is missing or not an integer");
    }
}
