package org.jccl.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Locale;

/**
 * Reads another process's memory in one copy: Linux's {@code process_vm_readv} (cross memory attach,
 * what Open MPI's shared-memory transport calls {@code cma}) through the FFM API, behind an
 * availability façade ({@link #unavailabilityCause()} says why not: another system, no native access
 * for jccl).
 *
 * <p>Whether one process may read another is the kernel's decision (same user, and Yama's {@code
 * ptrace_scope}, and a container's seccomp profile), so a caller probes each peer once ({@link
 * Reader#read} of a word it knows) and keeps the answer. {@link #allowReaders} lifts Yama's
 * restriction to descendants ({@code ptrace_scope} 1) for this process, as Open MPI does.
 *
 * <p>A {@link Reader} holds the native scratch one read needs (two iovecs and the errno capture),
 * so reads allocate nothing; one per thread, or used under a lock.
 */
public final class CrossMemory {
    /** prctl option and argument: any process of this user may ptrace (and so read) this one. */
    private static final int PR_SET_PTRACER = 0x59616d61;
    private static final long PR_SET_PTRACER_ANY = -1L;
    private static final MethodHandle READV;
    private static final MethodHandle PRCTL;
    private static final StructLayout CAPTURE;
    private static final VarHandle ERRNO;
    private static final String CAUSE;

    static {
        MethodHandle readv = null;
        MethodHandle prctl = null;
        StructLayout capture = null;
        VarHandle errno = null;
        String cause = null;
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
            cause = "process_vm_readv is Linux's (this is " + System.getProperty("os.name") + ")";
        } else if (!CrossMemory.class.getModule().isNativeAccessEnabled()) {
            cause = "native access is not enabled for jccl: start java with --enable-native-access=ALL-UNNAMED "
                    + "(or =org.jccl.core on the module path; ./jccl and jccl run do)";
        } else {
            try {
                Linker linker = Linker.nativeLinker();
                capture = Linker.Option.captureStateLayout();
                errno = capture.varHandle(MemoryLayout.PathElement.groupElement("errno"));
                readv = linker.downcallHandle(linker.defaultLookup().find("process_vm_readv").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                                ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
                        Linker.Option.captureCallState("errno"));
                prctl = linker.downcallHandle(linker.defaultLookup().find("prctl").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG),
                        Linker.Option.firstVariadicArg(1));
            } catch (RuntimeException | LinkageError e) {
                cause = "libc's process_vm_readv could not be bound: " + e;
                readv = null;
                prctl = null;
            }
        }
        READV = readv;
        PRCTL = prctl;
        CAPTURE = capture;
        ERRNO = errno;
        CAUSE = cause;
    }

    private CrossMemory() {
    }

    /** True when this JVM can call process_vm_readv (whether a given peer allows it is another matter). */
    public static boolean isAvailable() {
        return CAUSE == null;
    }

    /** Why {@link #isAvailable()} is false; null when it is true. */
    public static String unavailabilityCause() {
        return CAUSE;
    }

    /**
     * Lets every process of this user read this process's memory where Yama restricts that to
     * descendants ({@code /proc/sys/kernel/yama/ptrace_scope} 1). Without Yama, or with scope 0,
     * nothing changes; scopes 2 and 3 cannot be lifted (the peers' probes then fail). Best effort.
     */
    public static void allowReaders() {
        if (PRCTL == null) {
            return;
        }
        try {
            int ignored = (int) PRCTL.invokeExact(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
        } catch (Throwable t) {
            // best effort: a peer's probe will tell
        }
    }

    /** What one thread needs to read: the iovecs and the errno capture, in native memory of its own. */
    public static final class Reader {
        private final MemorySegment iov;
        private final MemorySegment state;

        /** Native scratch from {@code arena} (48 bytes and errno's). */
        public Reader(Arena arena) {
            if (!isAvailable()) {
                throw new UnsupportedOperationException(CAUSE);
            }
            this.iov = arena.allocate(32, 8);
            this.state = arena.allocate(CAPTURE);
        }

        /**
         * Copies {@code len} bytes from address {@code from} of process {@code pid} to {@code to}
         * (an address of this process), in as many calls as the kernel needs.
         *
         * @return {@code len}, or {@code -errno} of the call that failed (EPERM: not allowed; ESRCH: no
         *         such process; EFAULT: an address range is not mapped), or {@code -1000 - moved} when
         *         the peer's range ended early
         */
        public long read(long pid, long from, long to, long len) {
            long moved = 0;
            while (moved < len) {
                iov.set(ValueLayout.JAVA_LONG, 0, to + moved);
                iov.set(ValueLayout.JAVA_LONG, 8, len - moved);
                iov.set(ValueLayout.JAVA_LONG, 16, from + moved);
                iov.set(ValueLayout.JAVA_LONG, 24, len - moved);
                long n;
                try {
                    n = (long) READV.invokeExact(state, (int) pid, iov, 1L, iov.asSlice(16), 1L, 0L);
                } catch (Throwable t) {
                    throw new IllegalStateException("process_vm_readv failed: " + t, t);
                }
                if (n < 0) {
                    return -(int) ERRNO.get(state, 0L);
                }
                if (n == 0) {
                    return -1000 - moved;
                }
                moved += n;
            }
            return len;
        }
    }

    /**
     * Whether this process can read memory with process_vm_readv at all (it reads a word of its own):
     * null when it can, else why not. Reading another process may still be refused (Yama's
     * ptrace_scope 2 or 3, another user); a communicator probes each peer.
     */
    public static String selfCheck() {
        if (!isAvailable()) {
            return CAUSE;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment from = a.allocate(8, 8);
            MemorySegment to = a.allocate(8, 8);
            from.set(ValueLayout.JAVA_LONG, 0, 0x6a63636c_5f636d61L);
            long r = new Reader(a).read(ProcessHandle.current().pid(), from.address(), to.address(), 8);
            if (r != 8) {
                return "process_vm_readv failed: " + describe(r);
            }
            return to.get(ValueLayout.JAVA_LONG, 0) == 0x6a63636c_5f636d61L ? null : "process_vm_readv read the wrong bytes";
        }
    }

    /** Where Linux keeps Yama's ptrace_scope. */
    public static final java.nio.file.Path YAMA_SCOPE = java.nio.file.Path.of("/proc/sys/kernel/yama/ptrace_scope");

    /**
     * Yama's ptrace_scope read from {@code file} ({@link #YAMA_SCOPE}): 0 or 1 let a process of the
     * same user read another (1 after {@link #allowReaders}), 2 and 3 do not; -1 when there is no
     * Yama (the file is missing or unreadable).
     */
    public static int ptraceScope(java.nio.file.Path file) {
        try {
            return Integer.parseInt(java.nio.file.Files.readString(file).trim());
        } catch (java.io.IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** A readable name of {@link Reader#read}'s negative result. */
    public static String describe(long result) {
        if (result <= -1000) {
            return "the range ended after " + (-1000 - result) + " bytes";
        }
        return switch ((int) -result) {
            case 1 -> "EPERM (the kernel does not let this process read the other: ptrace_scope, seccomp or another user)";
            case 3 -> "ESRCH (no such process)";
            case 14 -> "EFAULT (the range is not mapped in one of the processes)";
            case 38 -> "ENOSYS (the kernel has no process_vm_readv)";
            default -> "errno " + (-result);
        };
    }
}
