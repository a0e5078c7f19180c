package org.jccl.host.shm;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The stale-file scan removes a registered-memory region whose owner process is gone, and keeps a live one's. */
class ShmTransportStaleRegionTest {

    private static Path region(String name, long pid) throws Exception {
        Path f = ShmTransport.shmDirectory().resolve(ShmRegionDescriptor.fileName(name, 0, 0));
        ByteBuffer b = ByteBuffer.allocate((int) ShmRegionDescriptor.fileBytes(64)).order(ByteOrder.nativeOrder());
        b.putLong((int) ShmRegionDescriptor.MAGIC_OFFSET, ShmRegionDescriptor.MAGIC);
        b.putLong((int) ShmRegionDescriptor.PID_OFFSET, pid);
        Files.write(f, b.array());
        return f;
    }

    @Test
    void regionOfADeadOwnerIsRemoved() throws Exception {
        Process p = new ProcessBuilder("true").start();
        p.waitFor();
        String tag = "stale" + Long.toHexString(System.nanoTime());
        Path dead = region(tag + "d", p.pid());
        Path live = region(tag + "l", ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(1L));
        try {
            ShmTransport.removeStaleFiles();
            assertFalse(Files.exists(dead), dead + " of dead pid " + p.pid() + " was not removed");
            assertTrue(Files.exists(live), live + " of a live pid was removed");
        } finally {
            Files.deleteIfExists(dead);
            Files.deleteIfExists(live);
        }
    }
}
