package org.jccl.host.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.jccl.JcclException;
import org.junit.jupiter.api.Test;

/** A peer's segment of another layout version (a rank of another jccl version) is refused by name; its own is mapped. */
class ShmSegmentVersionTest {
    private static final ShmSegmentDescriptor.Geometry GEO = new ShmSegmentDescriptor.Geometry(2, 4, 4096, 4, 4096);

    private static Path segment(int version) throws Exception {
        Path f = Files.createTempFile("jccl-version-test", ".seg");
        ByteBuffer b = ByteBuffer.allocate((int) GEO.totalBytes()).order(ByteOrder.nativeOrder());
        b.putLong((int) ShmSegmentDescriptor.MAGIC_OFFSET, ShmSegmentDescriptor.MAGIC);
        b.putInt((int) ShmSegmentDescriptor.VERSION_OFFSET, version);
        b.putInt((int) ShmSegmentDescriptor.RANK_OFFSET, 1);
        b.putInt((int) ShmSegmentDescriptor.SIZE_OFFSET, 2);
        Files.write(f, b.array());
        return f;
    }

    @Test
    void aSegmentOfAnotherLayoutVersionIsRefusedNamingBoth() throws Exception {
        Path old = segment(ShmSegmentDescriptor.VERSION - 1);
        try (Arena arena = Arena.ofConfined()) {
            JcclException e = assertThrows(JcclException.class, () -> ShmTransport.mapPeer(old, GEO, 1, 2, arena));
            assertTrue(e.getMessage().contains("layout version " + (ShmSegmentDescriptor.VERSION - 1))
                    && e.getMessage().contains("writes " + ShmSegmentDescriptor.VERSION)
                    && e.getMessage().contains("same jccl version on every rank"), e.getMessage());
        } finally {
            Files.deleteIfExists(old);
        }
    }

    @Test
    void aSegmentOfThisVersionIsMapped() throws Exception {
        Path same = segment(ShmSegmentDescriptor.VERSION);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = ShmTransport.mapPeer(same, GEO, 1, 2, arena);
            assertEquals(GEO.totalBytes(), s.byteSize());
        } finally {
            Files.deleteIfExists(same);
        }
    }
}
