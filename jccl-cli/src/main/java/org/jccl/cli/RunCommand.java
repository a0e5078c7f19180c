package org.jccl.cli;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code jccl run -n N [--] COMMAND...}: the launcher (see {@link Launcher}). */
@Command(name = "run", mixinStandardHelpOptions = true,
        header = "Start N ranks of a command on this host, as one job.",
        description = {"Start N ranks of COMMAND on this host with JCCL_RANK, JCCL_WORLD_SIZE, JCCL_LOCAL_RANK, "
            + "JCCL_LOCAL_WORLD_SIZE, JCCL_STORE, JCCL_STORE_SERVED=1, JCCL_JOB_ID and JCCL_TOKEN set (a fresh store, "
            + "job id and token per job, so two jobs never merge).",
            "Every output line is prefixed with [rank]. When a rank exits non-zero the others are stopped (SIGTERM, "
            + "then SIGKILL after the grace period, with every process they started) and that exit code is "
            + "returned; Ctrl-C stops every rank the same way.", ""},
        footer = {"", "Examples:", "  jccl run -n 4 -- java -cp app.jar com.example.Train",
            "  jccl run -n 2 sh -c 'echo rank $JCCL_RANK of $JCCL_WORLD_SIZE'"})
final class RunCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @CommandLine.ParentCommand
    Main parent;

    @Option(names = {"-n", "--nproc"}, required = true, paramLabel = "N",
            description = "Number of ranks (processes) to start, 1.." + Launcher.MAX_RANKS + ".")
    int ranks;

    @Option(names = "--grace", paramLabel = "SECONDS", defaultValue = "5",
            description = "Seconds between SIGTERM and SIGKILL when ranks are stopped (default: ${DEFAULT-VALUE}).")
    double graceSeconds;

    @Parameters(arity = "1..*", paramLabel = "COMMAND", description = "The program and its arguments ('--' before it is optional).")
    List<String> command;

    @Override
    public Integer call() {
        if (ranks < 1 || ranks > Launcher.MAX_RANKS) {
            throw new CommandLine.ParameterException(spec.commandLine(), "invalid value for option '-n': " + ranks
                    + " (give a rank count from 1 to " + Launcher.MAX_RANKS + ")");
        }
        if (!(graceSeconds >= 0) || graceSeconds > 3600) {
            throw new CommandLine.ParameterException(spec.commandLine(), "invalid value for option '--grace': "
                    + graceSeconds + " (give seconds from 0 to 3600)");
        }
        Launcher l = new Launcher(ranks, command).grace(Duration.ofMillis(Math.round(graceSeconds * 1000)));
        int code = l.run(parent.out, parent.err);
        String traceDir = org.jccl.internal.Settings.get("JCCL_TRACE_DIR");
        if (code != 0 && traceDir != null && !traceDir.isBlank()) {
            try {
                parent.err.println("jccl run: flight recorder verdict (jccl doctor " + traceDir + "):");
                parent.err.print(org.jccl.diag.Doctor.diagnose(java.nio.file.Path.of(traceDir.trim())));
            } catch (java.io.IOException | RuntimeException e) {
                parent.err.println("jccl run: cannot read the flight recorder dumps in " + traceDir + ": " + e.getMessage());
            }
        }
        return code;
    }
}
