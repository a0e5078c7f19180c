package org.jccl.internal;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.Locale;

/**
 * {@code JCCL_WARMUP}, read the same way by every backend that warms its call path at communicator
 * creation (the host engine's {@code JitWarmup}, the NCCL backend's {@code NcclWarmup}), and the
 * JVM's compilation clock both use to tell when the JIT has gone quiet.
 */
public final class WarmupSetting {
    /** The default bound, in seconds. */
    public static final double DEFAULT_SECONDS = 3.0;


    private WarmupSetting() {
    }

    /** JCCL_WARMUP as it applies now (the bound communicator settings first): seconds, 0 for none. */
    public static double seconds() {
        return seconds(Settings.get("JCCL_WARMUP"));
    }

    /**
     * A JCCL_WARMUP value (null: unset) as seconds: a number in [0, 600], {@code off/false/no} (0) or
     * {@code on/true/yes} (the default); anything else is an error naming the setting.
     */
    public static double seconds(String v) {
        if (v == null || v.isBlank()) {
            return DEFAULT_SECONDS;
        }
        String s = v.trim().toLowerCase(Locale.ROOT);
        if (s.equals("off") || s.equals("false") || s.equals("no")) {
            return 0;
        }
        if (s.equals("on") || s.equals("true") || s.equals("yes")) {
            return DEFAULT_SECONDS;
        }
        try {
            double d = Double.parseDouble(s);
            if (d >= 0 && d <= 600) {
                return d;
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        throw new IllegalArgumentException("JCCL_WARMUP=" + v + " is not a number of seconds between 0 and 600 "
                + "(0 or off: no warm-up at communicator creation; unset: " + DEFAULT_SECONDS + ")");
    }

    /**
     * The JIT's accumulated compilation time in milliseconds, or -1 when this JVM does not measure
     * it. It grows when a compilation ends, so an unchanged value over a stretch of time means no
     * compilation ended in it.
     */
    public static long compilationMillis() {
        return Jit.TIMED ? Jit.BEAN.getTotalCompilationTime() : -1;
    }

    /** The JIT's MXBean, looked up at the first warm-up (reading the setting alone does not start JMX). */
    private static final class Jit {
        static final CompilationMXBean BEAN = ManagementFactory.getCompilationMXBean();
        static final boolean TIMED = BEAN != null && BEAN.isCompilationTimeMonitoringSupported();
    }
}
