package org.jccl.internal;

import java.util.Locale;

/**
 * {@code JCCL_WARMUP}, read the same way by every backend that warms its call path at communicator
 * creation (the host engine's {@code JitWarmup}, the NCCL backend's {@code NcclWarmup}), and the
 * JVM's compilation clock and the rule both use to tell when the JIT has gone quiet ({@link #busy}).
 */
public final class WarmupSetting {
    /**
     * The default bound, in seconds: a bound, not a length (the warm-up ends once the JIT is
     * quiet). 3 s stopped cold JVMs on 2 cores and 16 ranks on 16 cores before the JIT was done
     * (it went quiet after 3.7-7.8 s there), and their first calls ran up to 3x slower.
     */
    public static final double DEFAULT_SECONDS = 8.0;


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
     * A warm-up ends once no rank's JIT worked for this long ({@link #jitActivity}). Where only the
     * compilation time can be read, a compilation counts when it ends and a C2 compilation takes
     * tens of milliseconds, so only a quiet stretch that long says the queue is empty.
     */
    public static final long QUIET_NANOS = 60_000_000L;

    /**
     * Collectives the warm-ups of a JVM must have made before a quiet JIT may end one. A quiet
     * JIT alone says little early on: C2 compiles a method only once it has run about 15 000 times
     * in profiled C1 code (HotSpot's Tier4CompileThreshold), so for the first thousands of calls
     * no compilation is due and the queue is empty. A warm-up that stopped at that quiet (after 22
     * blocks on 2 cores) left the whole call path in C1 code, and C2 compiled it during the
     * caller's first sizes. Counted per JVM (each backend its own warm-ups): a second
     * communicator's warm-up, whose code is compiled, leaves at the first quiet stretch.
     */
    public static final long MIN_CALLS = 20_000;

    /**
     * A rank's vote after a warm-up block: go on while its JIT is not monitored, it worked (a
     * change of {@link #jitActivity}) less than {@link #QUIET_NANOS} before {@code now}, or the JVM's warm-ups made fewer than
     * {@link #MIN_CALLS} collectives.
     */
    public static boolean busy(boolean monitored, long now, long lastCompile, long jvmCalls) {
        return !monitored || now - lastCompile < QUIET_NANOS || jvmCalls < MIN_CALLS;
    }

    /**
     * How much the JIT has worked ({@link JitActivity#reading}): an unchanged value over a stretch
     * of time means the JIT did nothing in it; -1 when this JVM cannot tell.
     */
    public static long jitActivity() {
        return JitActivity.reading();
    }
}
