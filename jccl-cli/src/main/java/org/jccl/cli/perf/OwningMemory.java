package org.jccl.cli.perf;

import java.util.IdentityHashMap;
import java.util.Map;
import org.jccl.Buffer;

/**
 * The bookkeeping of a {@link PerfMemory}: each buffer it allocated, with what frees its memory,
 * until {@link #free} or {@link #close()}.
 */
abstract class OwningMemory implements PerfMemory {
    private final Map<Buffer, Runnable> owned = new IdentityHashMap<>();

    /** Keeps {@code buffer} until it is freed; {@code release} frees its memory. */
    final synchronized <B extends Buffer> B own(B buffer, Runnable release) {
        owned.put(buffer, release);
        return buffer;
    }

    @Override
    public final synchronized void free(Buffer buffer) {
        Runnable release = owned.remove(buffer);
        if (release == null) {
            throw new IllegalArgumentException("buffer " + buffer + " was not allocated by this "
                    + getClass().getSimpleName() + " or is freed already");
        }
        release.run();
    }

    @Override
    public final synchronized void close() {
        for (Runnable release : owned.values()) {
            release.run();
        }
        owned.clear();
    }
}
