package org.jccl.mpi;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;

/**
 * A communicator's native scratch memory: staging copies of heap buffers (MPI may read and write
 * a buffer after the call that started an operation returns, and a Java array can move at any
 * garbage collection, so MPI only ever sees native memory), temporaries (scaled PREMUL_SUM
 * inputs, in-place results), and the control blocks (request, flag, status) of operations.
 *
 * <p>Blocks are powers of two from 4 KiB, reused through free lists, so a steady workload
 * allocates nothing after warm-up; everything is freed when the communicator closes. Blocks that
 * MPI may still touch (operations pending at close) are never freed: {@link #leak()}.
 */
final class Staging {
    /** Bytes of an operation's control block: MPI_Request at 0, flag at 8, MPI_Status at 16, count at 40. */
    static final long CONTROL_BYTES = 64;
    private static final int MIN_CLASS = 12;

    private final Arena arena = Arena.ofShared();
    @SuppressWarnings({"unchecked", "rawtypes"}) // an array of generic free lists
    private final ArrayDeque<MemorySegment>[] free = new ArrayDeque[64];
    private final ArrayDeque<MemorySegment> controls = new ArrayDeque<>();
    private boolean closed;

    /** A block of at least {@code bytes} bytes (64-byte aligned). */
    synchronized MemorySegment take(long bytes) {
        int cls = Math.max(MIN_CLASS, 64 - Long.numberOfLeadingZeros(Math.max(bytes, 1) - 1));
        ArrayDeque<MemorySegment> q = free[cls];
        MemorySegment s = q == null ? null : q.poll();
        return s != null ? s : arena.allocate(1L << cls, 64);
    }

    /** Returns a block from {@link #take}. */
    synchronized void give(MemorySegment block) {
        if (closed) {
            return;
        }
        int cls = 63 - Long.numberOfLeadingZeros(block.byteSize());
        if (free[cls] == null) {
            free[cls] = new ArrayDeque<>();
        }
        free[cls].push(block);
    }

    /** A zeroed control block. */
    synchronized MemorySegment control() {
        MemorySegment c = controls.poll();
        if (c == null) {
            c = arena.allocate(CONTROL_BYTES, 64);
        }
        c.fill((byte) 0);
        return c;
    }

    /** Returns a control block. */
    synchronized void giveControl(MemorySegment c) {
        if (!closed) {
            controls.push(c);
        }
    }

    /** Frees everything (no operation may use any block any more). */
    synchronized void close() {
        if (!closed) {
            closed = true;
            arena.close();
        }
    }

    /** Gives up the pool without freeing its memory: MPI may still write into it. */
    synchronized void leak() {
        closed = true;
    }
}
