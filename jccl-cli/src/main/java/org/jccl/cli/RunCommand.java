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

/**
 * {@code jccl run -n N [--] COMMAND...} and {@code jccl run -n N --cp CLASSPATH MAIN [ARGS...]}: the
 * launcher (see {@link Launcher}); a {@code java} command gets this JDK and jccl's JVM flags (see
 * {@link JavaCommand}).
 */
@Command(name = "run", mixinStandardHelpOptions = true,
        header = "Start N ranks of a command on this host, as one job.",
        description = {"Start N ranks of COMMAND on this host with JCCL_RANK, JCCL_WORLD_SIZE, JCCL_LOCAL_RANK, "
            + "JCCL_LOCAL_WORLD_SIZE, JCCL_STORE, JCCL_STORE_SERVED=1, JCCL_JOB_ID and JCCL_TOKEN set (a fresh store, "
            + "job id and token per job, so two jobs never merge).",
            "Every output line is prefixed with [rank]. When a rank exits non-zero the others are stopped (SIGTERM, "
            + "then SIGKILL after the grace period, with every process they started) and that exit code is "
            + "returned; Ctrl-C stops every rank the same way.",
            "A bare 'java' runs as the java of the JDK jccl runs on ($JCCL_JAVA when set; --java-from-path keeps "
            + "PATH's; a path such as /usr/bin/java is kept), and any java command gets "
            + "--enable-native-access=ALL-UNNAMED (not with -m) and --add-modules jdk.incubator.vector "
            + "unless it has them (--no-jvm-flags: none). JCCL_DEBUG=INFO prints the command.", ""},
        footer = {"", "Examples:", "  jccl run -n 4 -- java -cp app.jar com.example.Train",
            "  jccl run -n 4 --cp app.jar com.example.Train --epochs 3",
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

    @Option(names = {"--cp", "--class-path", "-cp"}, paramLabel = "CLASSPATH",
            description = "Short form for Java: the ranks run java <jccl's flags> -cp CLASSPATH MAIN [ARGS...], "
                + "COMMAND being MAIN [ARGS...].")
    String classPath;

    @Option(names = "--java-from-path",
            description = "Start a bare 'java' from PATH instead of the JDK jccl runs on.")
    boolean javaFromPath;

    @Option(names = "--no-jvm-flags",
            description = "Do not add --enable-native-access / --add-modules jdk.incubator.vector to a java command.")
    boolean noJvmFlags;

    @Parameters(arity = "1..*", paramLabel = "COMMAND", description = "The program and its arguments ('--' before it is optional); "
            + "with --cp, the main class and its arguments.")
    List<String> command;

    private static final org.jccl.internal.Log LOG = org.jccl.internal.Log.get(RunCommand.class);

    /** The command the ranks start: the short form expanded, java resolved, jccl's flags added. */
    JavaCommand.Resolved rankCommand() {
        List<String> cmd = command;
        if (classPath != null) {
            if (command.getFirst().startsWith("-")) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--cp takes the main class after it, "
                        + "not '" + command.getFirst() + "': put JVM flags in the long form (jccl run -n N -- java FLAGS "
                        + "-cp CLASSPATH MAIN)");
            }
            cmd = new java.util.ArrayList<>(List.of("java", "-cp", classPath));
            cmd.addAll(command);
        }
        return JavaCommand.resolve(cmd, javaFromPath, !noJvmFlags, org.jccl.internal.Settings.get("JCCL_JAVA"),
                System.getenv("JDK_JAVA_OPTIONS"));
    }

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
        JavaCommand.Resolved rc = rankCommand();
        if (rc.java() != null && LOG.infoEnabled()) {
            // JCCL_DEBUG=INFO: one plain line next to the launcher's other messages.
            parent.err.println("jccl run: INFO: ranks run " + rc.java() + " (" + rc.source() + "): "
                    + String.join(" ", rc.command()));
        }
        Launcher l = new Launcher(ranks, rc.command()).grace(Duration.ofMillis(Math.round(graceSeconds * 1000)));
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
