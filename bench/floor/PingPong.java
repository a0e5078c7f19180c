import java.lang.foreign.*;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.*;

// Minimal 2-process "all-reduce" of 2 floats: each rank writes its data + id into its own line
// (ring of K entries), spins on the peer's line, sums. Measures the floor for Java on this machine.
public class PingPong {
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    public static void main(String[] a) throws Exception {
        int rank = Integer.parseInt(a[0]);
        long iters = Long.parseLong(a[1]);
        boolean pause = a.length > 2 && a[2].equals("pause");
        int K = 4; long ENTRY = 4096 + 64;
        Path[] p = {Path.of("/dev/shm/pp0"), Path.of("/dev/shm/pp1")};
        MemorySegment[] seg = new MemorySegment[2];
        Arena arena = Arena.global();
        long total = K * ENTRY + 4096;
        try (FileChannel ch = FileChannel.open(p[rank], StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.allocate(1), total - 1);
            seg[rank] = ch.map(FileChannel.MapMode.READ_WRITE, 0, total, arena);
        }
        while (!Files.exists(p[1 - rank]) || Files.size(p[1 - rank]) < total) Thread.sleep(10);
        try (FileChannel ch = FileChannel.open(p[1 - rank], StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            seg[1 - rank] = ch.map(FileChannel.MapMode.READ_WRITE, 0, total, arena);
        }
        MemorySegment mine = seg[rank], peer = seg[1 - rank];
        MemorySegment in = Arena.ofAuto().allocate(8, 64), out = Arena.ofAuto().allocate(8, 64);
        in.set(ValueLayout.JAVA_FLOAT, 0, rank + 1); in.set(ValueLayout.JAVA_FLOAT, 4, rank + 2);
        // handshake: wait for the peer's id 0 area to be reset: use a start word at 4096*K+...
        long base = 4096;
        long start = K * ENTRY;
        LONG.setRelease(mine, start, 1L);
        while ((long) LONG.getAcquire(peer, start) != 1L) Thread.onSpinWait();
        for (int round = 0; round < 5; round++) {
            long t0 = System.nanoTime();
            long id0 = round * iters;
            for (long i = 1; i <= iters; i++) {
                long id = id0 + i;
                long h = (id % K) * ENTRY;
                MemorySegment.copy(in, 0, mine, h + 40, 8);
                LONG.setRelease(mine, h, id);
                while ((long) LONG.getAcquire(peer, h) < id) { if (pause) Thread.onSpinWait(); }
                float s0 = mine.get(ValueLayout.JAVA_FLOAT, h + 40) + peer.get(ValueLayout.JAVA_FLOAT, h + 40);
                float s1 = mine.get(ValueLayout.JAVA_FLOAT, h + 44) + peer.get(ValueLayout.JAVA_FLOAT, h + 44);
                out.set(ValueLayout.JAVA_FLOAT, 0, s0); out.set(ValueLayout.JAVA_FLOAT, 4, s1);
                // entry reuse: peer's done = its id (it read ours when it posted id... simplified: K entries ahead needs peer >= id-K+1, implied by peer posted id)
            }
            long t1 = System.nanoTime();
            if (rank == 0) System.out.printf("round %d: %.3f us/iter%n", round, (t1 - t0) / 1e3 / iters);
        }
    }
}
