package org.jccl.diag;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jccl.internal.Json;

/**
 * Reads every rank's {@link FlightRecorder} dump of one communicator and gives one verdict: the
 * first collective where the ranks diverge, which ranks never reached it or called something
 * else, and what each rank was doing. Used by {@code jccl doctor DIR}.
 */
public final class Doctor {
    private Doctor() {
    }

    /** One recorded operation. */
    public record Op(long seq, String op, String dtype, long count, String redop, int root, int peer, String state) {
        /** What was called, comparable across ranks. */
        public String call() {
            StringBuilder b = new StringBuilder(op).append('(');
            if (!op.equals("barrier")) {
                b.append(dtype).append(" x ").append(count);
                if (!redop.equals("-")) {
                    b.append(", ").append(redop);
                }
                if (root >= 0) {
                    b.append(", root ").append(root);
                }
            }
            return b.append(')').toString();
        }
    }

    /** One rank's dump. */
    public record RankTrace(String comm, int rank, int size, String host, long pid, String reason, List<Op> ops) {
        /** The collective of sequence {@code seq} (send/recv have seq 0 and are skipped), or null. */
        Op collective(long seq) {
            for (Op o : ops) {
                if (o.seq() == seq && seq > 0) {
                    return o;
                }
            }
            return null;
        }

        long lastSeq() {
            long m = 0;
            for (Op o : ops) {
                m = Math.max(m, o.seq());
            }
            return m;
        }

        long firstSeq() {
            long m = Long.MAX_VALUE;
            for (Op o : ops) {
                if (o.seq() > 0) {
                    m = Math.min(m, o.seq());
                }
            }
            return m == Long.MAX_VALUE ? 0 : m;
        }

        Op lastUnfinished() {
            Op last = null;
            for (Op o : ops) {
                if (!o.state().equals("completed")) {
                    last = o;
                }
            }
            return last;
        }
    }

    /** Parses one dump (any JSON layout: pretty-printed, keys in any order). */
    public static RankTrace parse(String json) {
        if (!(Json.parse(json) instanceof Map<?, ?> top) || !top.containsKey("comm") || !top.containsKey("rank")
                || !top.containsKey("size")) {
            throw new IllegalArgumentException("not a jccl flight recorder dump (no comm/rank/size header)");
        }
        List<Op> ops = new ArrayList<>();
        if (top.get("ops") instanceof List<?> list) {
            for (Object o : list) {
                if (o instanceof Map<?, ?> m) {
                    ops.add(new Op(number(m, "seq"), text(m, "op"), text(m, "dtype"), number(m, "count"),
                            text(m, "redop"), (int) number(m, "root"), (int) number(m, "peer"), text(m, "state")));
                }
            }
        }
        return new RankTrace(text(top, "comm"), (int) number(top, "rank"), (int) number(top, "size"), text(top, "host"),
                number(top, "pid"), text(top, "reason"), ops);
    }

    private static String text(Map<?, ?> m, String key) {
        Object v = m.get(key);
        return v == null ? "-" : v.toString();
    }

    private static long number(Map<?, ?> m, String key) {
        Object v = m.get(key);
        if (v instanceof Number n) {
            return n.longValue();
        }
        throw new IllegalArgumentException("not a jccl flight recorder dump: \"" + key + "\" is " + v + ", not a number");
    }

    /** Reads every {@code jccl-trace-*.json} in {@code dir}, grouped by communicator. */
    public static Map<String, Map<Integer, RankTrace>> read(Path dir) throws IOException {
        Map<String, Map<Integer, RankTrace>> byComm = new TreeMap<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "jccl-trace-*.json")) {
            for (Path p : ds) {
                RankTrace t = parse(Files.readString(p, StandardCharsets.UTF_8));
                byComm.computeIfAbsent(t.comm(), k -> new TreeMap<>()).put(t.rank(), t);
            }
        }
        return byComm;
    }

    /** The verdict for every communicator with dumps in {@code dir}. */
    public static String diagnose(Path dir) throws IOException {
        Map<String, Map<Integer, RankTrace>> all = read(dir);
        if (all.isEmpty()) {
            return "no flight recorder dumps (jccl-trace-*.json) in " + dir
                    + ": set JCCL_TRACE_DIR for the job, or call dumpFlightRecord on each rank";
        }
        StringBuilder b = new StringBuilder();
        for (var e : all.entrySet()) {
            b.append(verdict(e.getKey(), e.getValue()));
        }
        return b.toString();
    }

    /** The verdict for one communicator's dumps. */
    public static String verdict(String comm, Map<Integer, RankTrace> ranks) {
        StringBuilder b = new StringBuilder("communicator ").append(comm).append(": ");
        int size = ranks.values().iterator().next().size();
        List<Integer> noDump = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (!ranks.containsKey(r)) {
                noDump.add(r);
            }
        }
        b.append(ranks.size()).append(" of ").append(size).append(" ranks dumped");
        if (!noDump.isEmpty()) {
            b.append(" (no dump from rank(s) ").append(noDump).append(": dead, stopped, or JCCL_TRACE_DIR not shared)");
        }
        b.append('\n');
        long from = 0;
        long to = 0;
        for (RankTrace t : ranks.values()) {
            from = Math.max(from, t.firstSeq());
            to = Math.max(to, t.lastSeq());
        }
        String divergence = null;
        for (long s = Math.max(1, from); s <= to && divergence == null; s++) {
            Map<String, List<Integer>> calls = new TreeMap<>();
            List<Integer> missing = new ArrayList<>();
            for (RankTrace t : ranks.values()) {
                Op o = t.collective(s);
                if (o == null) {
                    missing.add(t.rank());
                } else {
                    calls.computeIfAbsent(o.call(), k -> new ArrayList<>()).add(t.rank());
                }
            }
            if (calls.size() > 1) {
                StringBuilder d = new StringBuilder("MISMATCH at collective #").append(s).append(':');
                calls.forEach((call, rs) -> d.append(" rank(s) ").append(rs).append(" called ").append(call).append(';'));
                divergence = d.toString();
            } else if (!missing.isEmpty()) {
                var only = calls.entrySet().iterator().next();
                divergence = "STUCK at collective #" + s + " " + only.getKey() + ": rank(s) " + only.getValue()
                        + " entered it, rank(s) " + missing + (noDump.isEmpty() ? "" : " (and " + noDump + " without dump)")
                        + " never reached it";
            }
        }
        if (divergence == null && !noDump.isEmpty()) {
            divergence = "every dumped rank reached collective #" + to + "; rank(s) " + noDump + " left no dump";
        }
        b.append(divergence == null ? "no divergence: every rank recorded the same collectives up to #" + to : divergence)
                .append('\n');
        for (RankTrace t : ranks.values()) {
            Op u = t.lastUnfinished();
            b.append("  rank ").append(t.rank()).append(" (").append(t.host()).append(" pid ").append(t.pid()).append("): ");
            if (u == null) {
                b.append("all recorded operations completed, last #").append(t.lastSeq());
            } else {
                b.append(u.state()).append(' ').append(u.call()).append(" #").append(u.seq());
            }
            b.append("; dumped because: ").append(t.reason()).append('\n');
        }
        return b.toString();
    }
}
