package org.jccl.cli;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;

/**
 * Makes the launcher a Linux child subreaper ({@code prctl(PR_SET_CHILD_SUBREAPER)}), so that a
 * process a rank started and left behind when it exited is re-parented to the launcher instead of
 * to init: the launcher can then still find it (as one of its children) and stop it, and reap it.
 * Without this, a failed rank's background children could not be found once the rank is gone.
 *
 * <p>Everything here is best effort: off Linux, or without native access, {@link #enable()}
 * returns false and the launcher stops what {@link ProcessHandle#descendants()} still shows.
 */
final class Subreaper {
    private static final int PR_SET_CHILD_SUBREAPER = 36;
    private static final int WNOHANG = 1;
    private static final MethodHandle PRCTL;
    private static final MethodHandle WAITPID;
    private static volatile boolean enabled;

    static {
        MethodHandle prctl = null;
        MethodHandle waitpid = null;
        if (System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                // int prctl(int option, ...): the four unsigned long arguments are variadic.
                prctl = linker.downcallHandle(libc.find("prctl").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
                        Linker.Option.firstVariadicArg(1));
                waitpid = linker.downcallHandle(libc.find("waitpid").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                                ValueLayout.JAVA_INT));
            } catch (RuntimeException | LinkageError e) {
                // No native access or no such symbol: stay without a subreaper.
                prctl = null;
                waitpid = null;
            }
        }
        PRCTL = prctl;
        WAITPID = waitpid;
    }

    private Subreaper() {
    }

    /** Makes this JVM a child subreaper; true when it is one (idempotent). */
    static synchronized boolean enable() {
        if (enabled || PRCTL == null) {
            return enabled;
        }
        try {
            enabled = (int) PRCTL.invokeExact(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) == 0;
        } catch (Throwable t) {
            enabled = false;
        }
        return enabled;
    }

    /**
     * Reaps {@code pid} if it is an exited child that Java did not start (an adopted orphan);
     * true when it was reaped. Never call it for a process Java started: Java reaps those itself.
     */
    static boolean reap(long pid) {
        if (WAITPID == null) {
            return false;
        }
        try {
            return (int) WAITPID.invokeExact((int) pid, MemorySegment.NULL, WNOHANG) == (int) pid;
        } catch (Throwable t) {
            return false;
        }
    }
}
