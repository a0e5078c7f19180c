package org.jccl.internal;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * Stores into the reused arrays of segments (and buffers) of the hot paths, without the array
 * store bytecode. For a plain {@code a[i] = v}, C2 speculates on the array's exact class
 * (MonomorphicArrayCheck), and its first compiled code of every method that inlines such a store
 * takes an {@code array_check} trap at the first store it runs, four times, then is thrown away
 * and compiled again: the same with one array class and one segment class only. Where that
 * compilation ended after the warm-up, the trap and the recompilation fell into a user's first
 * calls (100 ms for the first 8-byte all-reduce on 2 cores). A store through a VarHandle checks the
 * element's class without that speculation.
 */
public final class SegmentArrays {
    private SegmentArrays() {
    }

    private static final VarHandle SEGMENTS = MethodHandles.arrayElementVarHandle(MemorySegment[].class);
    private static final VarHandle BUFFERS = MethodHandles.arrayElementVarHandle(ByteBuffer[].class);

    /** {@code a[i] = v}. */
    public static void set(MemorySegment[] a, int i, MemorySegment v) {
        SEGMENTS.set(a, i, v);
    }

    /** {@code a[i] = v}. */
    public static void set(ByteBuffer[] a, int i, ByteBuffer v) {
        BUFFERS.set(a, i, v);
    }
}
