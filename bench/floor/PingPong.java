import java.lang.foreign.*;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.*;

/**
 * Java's floor for a 2-rank all-reduce of 2 floats over shared memory, with no library: each of
 * two processes writes its input and a sequence number into one cache line of its own file in
 * /dev/shm (a ring of 4 such entries), spins on the peer's line, and sums. What the host engine's
 * small all-reduce could take at best on a machine (docs/BENCHMARKS.md, fourteenth set).
 *
 * <p>{@code javac -d out PingPong.java}, then {@code java -cp out PingPong 1 3000000 pause &
 * java -cp out PingPong 0 3000000 pause} (rank, iterations, and {@code pause} for
 * Thread.onSpinWait in the spin loop); rank 0 prints microseconds per iteration for five rounds.
 * Remove /dev/shm/pp0 and /dev/shm/pp1 before each run. bench/gpu/host-vs-mpi.sh phase small2c
 * runs it from .gpu/pp.
 */
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
        // Both processes mapped both files: a start word after the ring, then go
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
                // (an entry is written again K iterations later: the peer read it long before, as it waits every iteration)
            }
            long t1 = System.nanoTime();
            if (rank == 0) System.out.printf("round %d: %.3f us/iter%n", round, (t1 - t0) / 1e3 / iters);
        }
    }
}
