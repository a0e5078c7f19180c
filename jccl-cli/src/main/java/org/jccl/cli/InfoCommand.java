package org.jccl.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.jccl.Jccl;
import org.jccl.internal.Json;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code jccl info [--json]}: what this machine offers jccl, each line found or not found with the reason. */
@Command(name = "info", mixinStandardHelpOptions = true,
        header = "Show what this machine offers jccl (JDK, /dev/shm, store, CUDA, NCCL, MPI).",
        description = {"Show what this machine offers: JDK (version, Vector API, native access), OS, cores, "
            + "memory, /dev/shm, the job's store when JCCL_STORE is set, CUDA driver and GPUs, NCCL, Open MPI. "
            + "Each line says found or not found, with the reason.", ""})
final class InfoCommand implements Callable<Integer> {
    @CommandLine.ParentCommand
    Main parent;

    @Option(names = "--json", description = "Print JSON: {\"jccl\": VERSION, \"items\": [{\"section\", \"name\", \"found\", \"detail\"}]}.")
    boolean json;

    @Override
    public Integer call() {
        List<InfoItem> items = collect();
        parent.out.print(json ? toJson(items) : toText(items));
        parent.out.flush();
        return 0;
    }

    /** Every probe, in order. */
    static List<InfoItem> collect() {
        List<InfoItem> items = new ArrayList<>();
        items.addAll(Probes.jdk());
        items.addAll(Probes.os(Path.of("/dev/shm")));
        items.addAll(Probes.job(System.getenv()));
        items.addAll(GpuProbes.cuda());
        items.addAll(GpuProbes.nccl());
        items.addAll(Probes.mpi());
        return items;
    }

    /** The text form: sections, then one aligned line per item. */
    static String toText(List<InfoItem> items) {
        StringBuilder sb = new StringBuilder("jccl ").append(Jccl.VERSION).append(System.lineSeparator());
        int width = 0;
        for (InfoItem i : items) {
            width = Math.max(width, i.name().length());
        }
        String section = null;
        for (InfoItem i : items) {
            if (!i.section().equals(section)) {
                section = i.section();
                sb.append(section).append(System.lineSeparator());
            }
            sb.append(String.format(Locale.ROOT, "  %-" + width + "s  %-9s  %s%n", i.name(),
                    i.found() ? "found" : "not found", i.detail()));
        }
        return sb.toString();
    }

    /** The JSON form. */
    static String toJson(List<InfoItem> items) {
        StringBuilder sb = new StringBuilder("{\"jccl\": ").append(Json.quote(Jccl.VERSION)).append(", \"items\": [");
        for (int k = 0; k < items.size(); k++) {
            InfoItem i = items.get(k);
            sb.append(k == 0 ? "\n  " : ",\n  ").append("{\"section\": ").append(Json.quote(i.section()))
                    .append(", \"name\": ").append(Json.quote(i.name()))
                    .append(", \"found\": ").append(i.found())
                    .append(", \"detail\": ").append(Json.quote(i.detail())).append('}');
        }
        return sb.append(items.isEmpty() ? "]}\n" : "\n]}\n").toString();
    }
}
