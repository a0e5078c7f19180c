package org.jccl.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Arrays;
import java.util.Locale;

/**
 * The calling thread's CPU affinity on Linux: {@code sched_getaffinity} and {@code
 * sched_setaffinity} of libc through the FFM API, behind an availability façade (other systems, or
 * a JVM without native access for jccl, report why in {@link #unavailabilityCause()}).
 *
 * <p>Why the host engine pins: two ranks that spin on shared memory must not share a core. Once the
 * scheduler has put both on one core (a JIT thread had the other when one of them woke up), each
 * waits out the other's time slice: on a 2-core VM an 8-byte all-reduce then took 1.2 ms on every
 * other call, for seconds, while the other core idled.
 * Open MPI's launcher binds its ranks for the same reason.
 */
public final class Affinity {
    /** Bytes of glibc's {@code cpu_set_t} (1024 CPUs). */
    private static final int SET_BYTES = 128;
    private static final MethodHandle GET;
    private static final MethodHandle SET;
    private static final String CAUSE;

    static {
        MethodHandle get = null;
        MethodHandle set = null;
        String cause = null;
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
            cause = "CPU affinity is set on Linux only (this is " + System.getProperty("os.name") + ")";
        } else if (!Affinity.class.getModule().isNativeAccessEnabled()) {
            cause = "native access is not enabled for jccl: start java with --enable-native-access=ALL-UNNAMED "
                    + "(or =org.jccl.core on the module path; ./jccl and jccl run do)";
        } else {
            try {
                Linker linker = Linker.nativeLinker();
                FunctionDescriptor fd = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);
                get = linker.downcallHandle(linker.defaultLookup().find("sched_getaffinity").orElseThrow(), fd);
                set = linker.downcallHandle(linker.defaultLookup().find("sched_setaffinity").orElseThrow(), fd);
            } catch (RuntimeException | LinkageError e) {
                cause = "libc's sched_getaffinity/sched_setaffinity could not be bound: " + e;
                get = null;
                set = null;
            }
        }
        GET = get;
        SET = set;
        CAUSE = cause;
    }

    /** The mask each thread had before its first {@link #set}: later pins split that, not a share. */
    private static final ThreadLocal<int[]> ORIGINAL = new ThreadLocal<>();
    /** The most CPUs a thread of this process had before it was pinned; 0 until a pin. */
    private static volatile int cpusBeforePinning;

    private Affinity() {
    }

    /**
     * The CPUs of this machine that jccl counts with: as many as a thread of this process could use
     * before jccl pinned it. {@link Runtime#availableProcessors()} counts the calling thread's
     * CPUs, which on a pinned rank's thread is its share only (2 of 32 with 16 local ranks): a wait
     * sized by that would yield and park as if the ranks outnumbered the cores.
     */
    public static int cpus() {
        return Math.max(cpusBeforePinning, Runtime.getRuntime().availableProcessors());
    }

    /**
     * The CPUs the calling thread could run on before its first {@link #set} (what {@link
     * #allowed()} says when it was never pinned), ascending: a second communicator created on the
     * same thread splits these again rather than its first share.
     */
    public static int[] unpinned() {
        int[] o = ORIGINAL.get();
        return o != null ? o.clone() : allowed();
    }

    /** Whether this JVM can read and set thread affinity. */
    public static boolean isAvailable() {
        return CAUSE == null;
    }

    /** Why {@link #isAvailable()} is false; null when it is true. */
    public static String unavailabilityCause() {
        return CAUSE;
    }

    /** The CPUs the calling thread may run on, ascending. */
    public static int[] allowed() {
        check();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(SET_BYTES, 8);
            int rc = (int) GET.invokeExact(0, (long) SET_BYTES, mask);
            if (rc != 0) {
                throw new IllegalStateException("sched_getaffinity failed (" + rc + ")");
            }
            int[] cpus = new int[SET_BYTES * 8];
            int n = 0;
            for (int cpu = 0; cpu < SET_BYTES * 8; cpu++) {
                if ((mask.get(ValueLayout.JAVA_BYTE, cpu >> 3) & (1 << (cpu & 7))) != 0) {
                    cpus[n++] = cpu;
                }
            }
            return Arrays.copyOf(cpus, n);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Restricts the calling thread to {@code cpus} (each in 0..1023, at least one). */
    public static void set(int[] cpus) {
        check();
        if (cpus == null || cpus.length == 0) {
            throw new IllegalArgumentException("cpus is empty: pass at least one CPU number");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(SET_BYTES, 8);
            for (int cpu : cpus) {
                if (cpu < 0 || cpu >= SET_BYTES * 8) {
                    throw new IllegalArgumentException("CPU " + cpu + " is out of range: pass CPUs 0.." + (SET_BYTES * 8 - 1));
                }
                int i = cpu >> 3;
                mask.set(ValueLayout.JAVA_BYTE, i, (byte) (mask.get(ValueLayout.JAVA_BYTE, i) | (1 << (cpu & 7))));
            }
            rememberOriginal();
            int rc = (int) SET.invokeExact(0, (long) SET_BYTES, mask);
            if (rc != 0) {
                throw new IllegalStateException("sched_setaffinity to " + Arrays.toString(cpus) + " failed (" + rc + ")");
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Records the calling thread's mask before its first pin (the arguments were checked). */
    private static void rememberOriginal() {
        if (ORIGINAL.get() == null) {
            int[] before = allowed();
            ORIGINAL.set(before);
            synchronized (Affinity.class) {
                cpusBeforePinning = Math.max(cpusBeforePinning, before.length);
            }
        }
    }

    /**
     * Local rank {@code localRank}'s share of {@code allowed} among {@code localSize} ranks: the
     * {@code localRank}-th of {@code localSize} equal consecutive blocks (the remainder goes to
     * the first ranks); null when there are more ranks than CPUs (nothing to split).
     */
    public static int[] shareOf(int[] allowed, int localRank, int localSize) {
        if (localSize < 1 || localRank < 0 || localRank >= localSize) {
            throw new IllegalArgumentException("local rank " + localRank + " of " + localSize + ": pass 0 <= localRank < localSize");
        }
        if (localSize > allowed.length) {
            return null;
        }
        int base = allowed.length / localSize;
        int extra = allowed.length % localSize;
        int from = localRank * base + Math.min(localRank, extra);
        int len = base + (localRank < extra ? 1 : 0);
        return Arrays.copyOfRange(allowed, from, from + len);
    }

    /** "0-3,8" for {0, 1, 2, 3, 8}. */
    public static String format(int[] cpus) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < cpus.length; i++) {
            int j = i;
            while (j + 1 < cpus.length && cpus[j + 1] == cpus[j] + 1) {
                j++;
            }
            sb.append(sb.isEmpty() ? "" : ",").append(cpus[i]).append(j > i ? "-" + cpus[j] : "");
            i = j;
        }
        return sb.toString();
    }

    private static void check() {
        if (CAUSE != null) {
            throw new UnsupportedOperationException(CAUSE);
        }
    }
}
