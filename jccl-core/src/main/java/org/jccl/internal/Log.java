package org.jccl.internal;

import java.lang.System.Logger.Level;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * jccl's logging: {@link System.Logger} with a {@code [rank]} prefix, gated by {@code JCCL_DEBUG}
 * (WARN, the default; INFO; TRACE; or NONE). When the installed logger would drop a level that
 * JCCL_DEBUG asked for (java.util.logging hides TRACE by default), the message is emitted at INFO
 * with its level named, so {@code JCCL_DEBUG=TRACE} works without a logging configuration.
 */
public final class Log {
    /** Levels in increasing verbosity. */
    private static final int NONE = 0, WARN = 1, INFO = 2, TRACE = 3;
    private static final int THRESHOLD = parse(Settings.get("JCCL_DEBUG"));

    private final System.Logger logger;

    private Log(String name) {
        this.logger = System.getLogger(name);
    }

    /** A logger named after the class. */
    public static Log get(Class<?> type) {
        return new Log(type.getName());
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

    /** True when JCCL_DEBUG lets INFO messages through. */
    public boolean infoEnabled() {
        return THRESHOLD >= INFO;
    }

    /** True when JCCL_DEBUG lets TRACE messages through. */
    public boolean traceEnabled() {
        return THRESHOLD >= TRACE;
    }

    /** A warning; rank -1 for messages that belong to no rank. */
    public void warn(int rank, String message) {
        if (THRESHOLD >= WARN) {
            emit(Level.WARNING, rank, message);
        }
    }

    /** An informational message. */
    public void info(int rank, Supplier<String> message) {
        if (THRESHOLD >= INFO) {
            emit(Level.INFO, rank, message.get());
        }
    }

    /** A trace message. */
    public void trace(int rank, Supplier<String> message) {
        if (THRESHOLD >= TRACE) {
            emit(Level.TRACE, rank, message.get());
        }
    }

    private void emit(Level level, int rank, String message) {
        String text = (rank >= 0 ? "[" + rank + "] " : "") + message;
        if (logger.isLoggable(level)) {
            logger.log(level, text);
        } else {
            logger.log(Level.INFO, level.getName() + " " + text);
        }
    }
}
