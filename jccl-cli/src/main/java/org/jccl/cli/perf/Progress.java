package org.jccl.cli.perf;

import java.io.PrintStream;
import java.util.Locale;

/**
 * The progress line of a sweep on stderr: what runs, which size of how many, elapsed time and an
 * estimate of the rest. Shown only on a terminal and only once the sweep has run for 2 s, redrawn
 * in place (carriage return, no line feed) at most 5 times a second, and cleared before each table
 * line so the table stays clean.
 */
public final class Progress {
    private static final long SHOW_AFTER_NANOS = 2_000_000_000L;
    private static final long REDRAW_NANOS = 200_000_000L;

    private final PrintStream err;
    private final boolean enabled;
    private final long start = System.nanoTime();
    private long lastDraw;
    private int shown;

    /**
     * A progress line on {@code err}.
     *
     * @param err     where to draw
     * @param enabled whether to draw at all (stderr is a terminal and this is the reporting rank)
     */
    public Progress(PrintStream err, boolean enabled) {
        this.err = err;
        this.enabled = enabled;
    }

    /** A progress line that never draws. */
    public static Progress off() {
        return new Progress(null, false);
    }

    /**
     * Whether stderr is a terminal: the {@code jccl.stderr.tty} property when set (the {@code
     * ./jccl} script passes {@code [ -t 2 ]}, and {@code --ranks} passes it on to the ranks), else
     * whether the JVM has an interactive console.
     */
    public static boolean stderrIsTerminal() {
        String p = System.getProperty("jccl.stderr.tty");
        if (p != null) {
            return Boolean.parseBoolean(p);
        }
        java.io.Console c = System.console();
        return c != null && c.isTerminal();
    }

    /**
     * Redraws the line if due.
     *
     * @param what      what runs now ("allreduce float sum")
     * @param index     index of the size being measured, from 1
     * @param total     number of sizes of this part
     * @param doneWork  work done so far, in the caller's units
     * @param totalWork all the work of the sweep, in the same units
     */
    public void update(String what, int index, int total, double doneWork, double totalWork) {
        if (!enabled) {
            return;
        }
        long now = System.nanoTime();
        long elapsed = now - start;
        if (elapsed < SHOW_AFTER_NANOS || now - lastDraw < REDRAW_NANOS) {
            return;
        }
        lastDraw = now;
        String line = text(what, index, total, elapsed / 1e9, doneWork, totalWork);
        err.print(pad(line) + "\r");
        err.flush();
        shown = line.length();
    }

    /** The text of the line (without the carriage return). */
    static String text(String what, int index, int total, double elapsedSeconds, double doneWork, double totalWork) {
        String eta = doneWork > 0 && totalWork >= doneWork
                ? duration(elapsedSeconds / doneWork * (totalWork - doneWork)) : "?";
        return String.format(Locale.ROOT, "%s: size %d/%d, elapsed %s, ETA %s", what, index, total,
                duration(elapsedSeconds), eta);
    }

    private String pad(String line) {
        return line.length() >= shown ? line : line + " ".repeat(shown - line.length());
    }

    /** Erases the line if one is shown. */
    public void clear() {
        if (enabled && shown > 0) {
            err.print(" ".repeat(shown) + "\r");
            err.flush();
            shown = 0;
        }
    }

    static String duration(double seconds) {
        if (seconds < 60) {
            return String.format(Locale.ROOT, "%.1f s", seconds);
        }
        long s = Math.round(seconds);
        return s < 3600 ? String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60)
                : String.format(Locale.ROOT, "%dh%02dm", s / 3600, (s % 3600) / 60);
    }
}
