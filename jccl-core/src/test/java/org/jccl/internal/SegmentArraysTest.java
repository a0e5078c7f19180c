package org.jccl.internal;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class SegmentArraysTest {
    @Test
    void storesLikeAnArrayStore() {
        MemorySegment[] a = new MemorySegment[3];
        MemorySegment heap = MemorySegment.ofArray(new int[2]);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment nat = arena.allocate(16);
            SegmentArrays.set(a, 0, heap);
            SegmentArrays.set(a, 2, nat);
            assertSame(heap, a[0]);
            assertNull(a[1]);
            assertSame(nat, a[2]);
            SegmentArrays.set(a, 2, null);
            assertNull(a[2]);
        }
        assertThrows(IndexOutOfBoundsException.class, () -> SegmentArrays.set(a, 3, heap));
        ByteBuffer[] b = new ByteBuffer[1];
        ByteBuffer bb = ByteBuffer.allocate(4);
        SegmentArrays.set(b, 0, bb);
        assertSame(bb, b[0]);
    }
}
