package org.jccl.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Opens one native library and turns its symbols into downcall handles. Never throws: a library
 * or a required symbol that is missing is recorded as the failure, and the handle returned for it
 * throws a {@link JcclUnavailable} naming the symbol when called, so the owning class can keep
 * every handle in a {@code static final} field and still initialise on a machine without the
 * library.
 */
final class NativeBinder {
    private static final Linker LINKER = Linker.nativeLinker();

    private final String library;
    private final SymbolLookup lookup;
    private final String path;
    private String failure;

    private NativeBinder(String library, SymbolLookup lookup, String path, String failure) {
        this.library = library;
        this.lookup = lookup;
        this.path = path;
        this.failure = failure;
    }

    /**
     * Opens the first of {@code candidates} that dlopen accepts (a bare soname searches the system
     * path; an absolute path must exist). The library stays loaded for the life of the process.
     */
    static NativeBinder open(String library, List<String> candidates) {
        List<String> tried = new ArrayList<>();
        for (String c : candidates) {
            if (c == null || c.isBlank()) {
                continue;
            }
            if (c.contains("/") && !Files.isRegularFile(Path.of(c))) {
                tried.add(c + " (no such file)");
                continue;
            }
            try {
                SymbolLookup l = SymbolLookup.libraryLookup(c, Arena.global());
                return new NativeBinder(library, l, c, null);
            } catch (IllegalArgumentException e) {
                tried.add(c + " (" + e.getMessage() + ")");
            }
        }
        return new NativeBinder(library, null, null, library + " could not be loaded; tried " + tried);
    }

    /**
     * Where {@link #open} looks for {@code soname}: the path the setting {@code setting} names (if
     * set), the soname itself (the dynamic linker's search), then {@code soname} in each of
     * {@code dirs}. A mutable list, for a caller that knows more places.
     */
    static List<String> candidates(String setting, String soname, String... dirs) {
        List<String> c = new ArrayList<>();
        c.add(org.jccl.internal.Settings.get(setting));
        c.add(soname);
        for (String d : dirs) {
            c.add(d + "/" + soname);
        }
        return c;
    }

    /** The candidate that loaded, or null. */
    String loadedName() {
        return path;
    }

    /** Why the library cannot be used, or null. */
    String failure() {
        return failure;
    }

    /** A handle for the first of {@code names} found; a missing one makes the library unusable. */
    MethodHandle required(FunctionDescriptor fd, String... names) {
        return bind(fd, names);
    }

    /**
     * A critical handle that may be passed heap segments (Java arrays) directly; the GC waits
     * while it runs, so use it only for bounded work such as a copy.
     */
    MethodHandle bindHeap(FunctionDescriptor fd, String... names) {
        Optional<MemorySegment> s = find(names);
        if (s.isPresent()) {
            return LINKER.downcallHandle(s.get(), fd, Linker.Option.critical(true));
        }
        return bind(fd, names);
    }

    /** A handle for the first of {@code names} found, or null when none is exported. */
    MethodHandle optional(FunctionDescriptor fd, String... names) {
        Optional<MemorySegment> s = find(names);
        return s.map(seg -> LINKER.downcallHandle(seg, fd)).orElse(null);
    }

    private MethodHandle bind(FunctionDescriptor fd, String... names) {
        Optional<MemorySegment> s = find(names);
        if (s.isPresent()) {
            return LINKER.downcallHandle(s.get(), fd);
        }
        String why = lookup == null ? failure : library + " (" + path + ") exports none of " + List.of(names);
        if (failure == null) {
            failure = why;
        }
        return thrower(fd.toMethodType(), names[0] + " is unavailable: " + why);
    }

    private Optional<MemorySegment> find(String... names) {
        if (lookup == null) {
            return Optional.empty();
        }
        for (String n : names) {
            Optional<MemorySegment> s = lookup.find(n);
            if (s.isPresent()) {
                return s;
            }
        }
        return Optional.empty();
    }

    /** A handle of {@code type} that throws {@link JcclUnavailable} with {@code message}. */
    private static MethodHandle thrower(MethodType type, String message) {
        MethodHandle t = MethodHandles.throwException(type.returnType(), JcclUnavailable.class);
        t = MethodHandles.insertArguments(t, 0, new JcclUnavailable(message));
        return MethodHandles.dropArguments(t, 0, type.parameterList());
    }

    /** Thrown by the handle of a symbol that could not be bound. */
    static final class JcclUnavailable extends org.jccl.JcclException {
        private static final long serialVersionUID = 1L;

        JcclUnavailable(String message) {
            super(message);
        }
    }
}
