package org.jccl.internal;

import java.lang.System.Logger.Level;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * jccl's logging: one line per event, the rank once, through a {@link System.Logger} named after
 * the package that logs ({@code org.jccl.host.engine}).
 *
 * <p>Where the application set up no logging (the JDK's default {@code LoggerFinder}, with no
 * {@code java.util.logging.config.file} or {@code .class}), java.util.logging would print two
 * lines naming this class; jccl then writes the line itself to standard error, like NCCL:
 * {@code [0] jccl WARN org.jccl.host.engine: message}, showing what {@code JCCL_DEBUG} asks for
 * (WARN, the default; INFO; TRACE; or NONE). Where the application routes System.Logger
 * somewhere (SLF4J, Log4j, a java.util.logging configuration), every event goes there, its
 * configured levels decide, and an explicit {@code JCCL_DEBUG} also lets the levels it names
 * through (a level the logger drops is logged at INFO with its name).
 */
public final class Log {
    /** Levels in increasing verbosity. */
    private static final int NONE = 0, WARN = 1, INFO = 2, TRACE = 3;
    private static final String SETTING = Settings.get("JCCL_DEBUG");
    private static final int THRESHOLD = parse(SETTING);
    /** Whether jccl writes its own lines (nothing routes System.Logger). */
    private static final boolean OWN_LINES = !configured();

    private final String name;
    private final System.Logger logger;

    private Log(String name) {
        this.name = name;
        this.logger = OWN_LINES ? null : System.getLogger(name);
    }

    /** The logger of {@code type}'s package. */
    public static Log get(Class<?> type) {
        return new Log(type.getPackageName());
    }

    static int parse(String value) {
        if (value == null || value.isBlank()) {
            return WARN;
        }
        return switch (value.trim().toUpperCase(Locale.ROOT)) {
            case "NONE", "OFF" -> NONE;
            case "WARN", "WARNING" -> WARN;
            case "INFO" -> INFO;
            case "TRACE", "DEBUG", "ALL" -> TRACE;
            default -> {
                System.err.println("jccl: JCCL_DEBUG=" + value + " is not one of WARN, INFO, TRACE, NONE; using WARN");
                yield WARN;
            }
        };
    }

    /** Whether the application routes System.Logger: a LoggerFinder of its own, or a java.util.logging configuration. */
    private static boolean configured() {
        if (System.getProperty("java.util.logging.config.file") != null
                || System.getProperty("java.util.logging.config.class") != null) {
            return true;
        }
        try {
            String finder = System.LoggerFinder.getLoggerFinder().getClass().getName();
            return !(finder.startsWith("jdk.internal.logger.") || finder.startsWith("sun.util.logging."));
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** True when an INFO message would be logged. */
    public boolean infoEnabled() {
        return enabled(INFO, Level.INFO);
    }

    /** True when a TRACE message would be logged. */
    public boolean traceEnabled() {
        return enabled(TRACE, Level.TRACE);
    }

    private boolean enabled(int level, Level systemLevel) {
        if (THRESHOLD >= level) {
            return true;
        }
        // with the application's logging and no JCCL_DEBUG, its levels decide
        return logger != null && SETTING == null && logger.isLoggable(systemLevel);
    }

    /** A warning; rank -1 for messages that belong to no rank. */
    public void warn(int rank, String message) {
        if (enabled(WARN, Level.WARNING)) {
            emit(Level.WARNING, rank, message);
        }
    }

    /** An informational message. */
    public void info(int rank, Supplier<String> message) {
        if (enabled(INFO, Level.INFO)) {
            emit(Level.INFO, rank, message.get());
        }
    }

    /** A trace message. */
    public void trace(int rank, Supplier<String> message) {
        if (enabled(TRACE, Level.TRACE)) {
            emit(Level.TRACE, rank, message.get());
        }
    }

    private void emit(Level level, int rank, String message) {
        String who = rank >= 0 ? "[" + rank + "] " : "";
        if (logger == null) {
            System.err.println(line(who, level, name, message));
        } else if (logger.isLoggable(level)) {
            logger.log(level, who + message);
        } else {
            logger.log(Level.INFO, level.getName() + " " + who + message);
        }
    }

    /** jccl's own line: {@code [rank] jccl LEVEL logger: message}, one line whatever the message holds. */
    static String line(String who, Level level, String name, String message) {
        String l = switch (level) {
            case WARNING -> "WARN";
            default -> level.getName();
        };
        return who + "jccl " + l + " " + name + ": " + message.replace('\n', ' ');
    }
}
