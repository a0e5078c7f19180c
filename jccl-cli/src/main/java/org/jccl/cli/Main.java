package org.jccl.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import org.jccl.Jccl;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The {@code jccl} command: {@code run}, {@code perf} and {@code info}.
 *
 * <p>Exit codes: 0 success; 1 failure (wrong results, an error while running); 2 bad usage (an
 * unknown flag or a bad value: one line on stderr that names the flag and its valid values);
 * {@code jccl run} returns the first non-zero exit code of its ranks.
 */
@Command(name = "jccl", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        subcommands = {RunCommand.class, PerfCommand.class, InfoCommand.class, DoctorCommand.class, CommandLine.HelpCommand.class},
        description = {"jccl: the collective communication library of the JVM.", ""},
        footer = {"", "Examples:",
            "  jccl perf allreduce --ranks 4",
            "  jccl run -n 2 -- java -cp app.jar com.example.Main",
            "  jccl info",
            "", "Exit codes: 0 ok, 1 failed, 2 bad usage; jccl run returns the first non-zero exit code of its ranks."})
public final class Main implements Runnable {
    /** Exit code of bad usage (picocli's convention, as nccl-tests' users expect a non-zero code). */
    public static final int USAGE = 2;
    /** Exit code of a failure. */
    public static final int FAILED = 1;

    @Spec
    CommandSpec spec;

    /** Byte streams of the command (the launcher forwards the ranks' raw bytes there). */
    final PrintStream out;
    final PrintStream err;
    /** The arguments as given, for {@code jccl perf --ranks} to re-launch itself. */
    final String[] args;

    private Main(PrintStream out, PrintStream err, String[] args) {
        this.out = out;
        this.err = err;
        this.args = args.clone();
    }

    /** Prints {@code jccl --version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"jccl " + Jccl.VERSION + " (JDK " + Runtime.version() + ", "
                    + System.getProperty("os.name") + " " + System.getProperty("os.arch") + ")"};
        }
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "no command given: use run, perf or info");
    }

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        int code = run(args, System.out, System.err);
        System.out.flush();
        System.err.flush();
        awaitStderrFilter();
        System.exit(code);
    }

    /**
     * ./jccl passes stderr through a filter process (it drops the JVM's incubator notice) and
     * names it in {@code jccl.stderr.filter}: close stderr so the filter sees its end, and wait
     * for it to write the rest, so that nothing is printed after this command has returned.
     */
    static void awaitStderrFilter() {
        String pid = System.getProperty("jccl.stderr.filter");
        if (pid == null || pid.isBlank()) {
            return;
        }
        System.err.close();
        try {
            ProcessHandle.of(Long.parseLong(pid.trim())).ifPresent(h -> {
                try {
                    h.onExit().get(2, java.util.concurrent.TimeUnit.SECONDS);
                } catch (Exception e) {
                    // Exit anyway: a filter that does not end within 2 s is not waited for.
                }
            });
        } catch (NumberFormatException e) {
            // Not a pid: nothing to wait for.
        }
    }

    /**
     * Runs the command line with the given streams and returns the exit code (for tests and for
     * re-launching).
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        try {
            return commandLine(out, err, args).execute(args);
        } catch (Error e) {
            // picocli hands Errors (a broken class path, out of memory) through: still one line and a code.
            err.println("jccl: error: " + describe(e));
            if (org.jccl.internal.Settings.get("JCCL_DEBUG") != null) {
                e.printStackTrace(err);
            }
            return FAILED;
        }
    }

    /** The configured picocli command line. */
    static CommandLine commandLine(PrintStream out, PrintStream err, String[] args) {
        CommandLine cl = new CommandLine(new Main(out, err, args));
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        // `jccl run -n 2 sh -c x`: everything from the command on belongs to the command.
        cl.getSubcommands().get("run").setStopAtPositional(true);
        cl.setParameterExceptionHandler((ex, given) -> {
            CommandLine c = ex.getCommandLine();
            String msg = ex.getMessage();
            c.getErr().println(c.getCommandSpec().qualifiedName() + ": " + msg
                    + (msg.endsWith(".") ? "" : ".") + " See '" + c.getCommandSpec().qualifiedName() + " --help'.");
            return USAGE;
        });
        cl.setExecutionExceptionHandler((ex, c, parseResult) -> {
            if (ex instanceof CommandLine.ParameterException pe) {
                return c.getParameterExceptionHandler().handleParseException(pe, parseResult.originalArgs().toArray(String[]::new));
            }
            c.getErr().println(c.getCommandSpec().qualifiedName() + ": error: " + describe(ex));
            if (org.jccl.internal.Settings.get("JCCL_DEBUG") != null) {
                ex.printStackTrace(c.getErr());
            }
            return FAILED;
        });
        return cl;
    }

    /** The message of an exception and of its causes, on one line. */
    static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            String m = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
            if (sb.indexOf(m) < 0) {
                sb.append(sb.length() == 0 ? "" : ": caused by ").append(m);
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return sb.toString();
    }
}
