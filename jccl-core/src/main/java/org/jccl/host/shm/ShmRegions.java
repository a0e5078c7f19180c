package org.jccl.host.shm;

import static org.jccl.host.shm.ShmRegionDescriptor.*;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.JcclException;

/**
 * The registered memory of one rank of a shared-memory communicator (layout in {@link
 * ShmRegionDescriptor}): the regions this rank allocated (address range to region id and offset,
 * for the per-call descriptor) and the peers' regions it mapped (lazily, the first time a call
 * names one; cached until close). All of it is unmapped, and this rank's files unlinked, at
 * {@link #close()}.
 *
 * <p>{@link #allocate} may run on any thread; {@link #find} reads a published array (no lock, no
 * allocation); {@link #peer} is called by the thread running the call (under the call lock).
 */
public final class ShmRegions {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long PID = ProcessHandle.current().pid();

    private final String name;
    private final int rank;
    private final Path dir;
    private final long[] peerPids;
    private final Arena arena = Arena.ofShared();
    /** This rank's regions by id: data segments (published copy-on-write; index = id). */
    private volatile MemorySegment[] own = new MemorySegment[0];
    private final List<Path> files = new ArrayList<>();
    /** Peers' regions by rank then id: whole-file mappings, null until first named. */
    private final MemorySegment[][] peers;
    private boolean closed;

    ShmRegions(String name, int rank, int size, long[] peerPids) {
        this.name = name;
        this.rank = rank;
        this.dir = ShmTransport.shmDirectory();
        this.peerPids = peerPids;
        this.peers = new MemorySegment[size][];
        for (int p = 0; p < size; p++) {
            peers[p] = new MemorySegment[0];
        }
    }

    /** A new registered region holding {@code count} zeroed elements of {@code type}. */
    public synchronized HostBuffer allocate(DataType type, long count) {
        if (closed) {
            throw new org.jccl.InvalidUsageException("the shared memory of rank " + rank + " of communicator " + name
                    + " is closed: allocate from an open communicator");
        }
        long bytes = Math.multiplyExact(count, (long) type.byteSize());
        long id = own.length;
        Path file = dir.resolve(fileName(name, rank, id));
        long total = fileBytes(bytes);
        boolean ok = false;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            files.add(file);
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, total, arena);
            seg.set(ValueLayout.JAVA_INT, VERSION_OFFSET, VERSION);
            seg.set(ValueLayout.JAVA_INT, RANK_OFFSET, rank);
            seg.set(ValueLayout.JAVA_LONG, ID_OFFSET, id);
            seg.set(ValueLayout.JAVA_LONG, PID_OFFSET, PID);
            seg.set(ValueLayout.JAVA_LONG, DATA_BYTES_OFFSET, bytes);
            LONG.setRelease(seg, MAGIC_OFFSET, MAGIC);
            MemorySegment data = seg.asSlice(DATA, bytes);
            MemorySegment[] next = java.util.Arrays.copyOf(own, own.length + 1);
            next[(int) id] = data;
            own = next;
            ok = true;
            return HostBuffer.of(type, data, count);
        } catch (IOException e) {
            throw new JcclException("cannot allocate " + bytes + " bytes of registered shared memory in " + dir
                    + " (rank " + rank + " of communicator " + name + "): " + e.getMessage() + " (check free space with df "
                    + dir + ", or allocate ordinary memory with HostBuffer.allocate)", e);
        } finally {
            if (!ok) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    // removed at close, or by the next start's stale-file scan
                }
            }
        }
    }

    /**
     * The id of the region that holds all of {@code seg} (a native segment), or {@link
     * ShmRegionDescriptor#NONE}. No allocation.
     */
    public long find(MemorySegment seg) {
        if (seg == null || !seg.isNative()) {
            return NONE;
        }
        long a = seg.address();
        long end = a + seg.byteSize();
        MemorySegment[] regions = own;
        for (int i = 0; i < regions.length; i++) {
            MemorySegment r = regions[i];
            long base = r.address();
            if (a >= base && end <= base + r.byteSize()) {
                return i;
            }
        }
        return NONE;
    }

    /** Byte offset of {@code seg} in the data of this rank's region {@code id} ({@link #find}'s). */
    public long offsetIn(long id, MemorySegment seg) {
        return seg.address() - own[(int) id].address();
    }

    /** True when {@code b} lies in one of this rank's regions. */
    public boolean holds(HostBuffer b) {
        return b != null && find(b.segment()) != NONE;
    }

    /**
     * Peer {@code p}'s region {@code id} as a whole-file mapping (its data starts at {@link
     * ShmRegionDescriptor#DATA}): mapped the first time, then cached.
     */
    public MemorySegment peer(int p, long id) {
        MemorySegment[] mine = peers[p];
        if (id < mine.length && mine[(int) id] != null) {
            return mine[(int) id];
        }
        return map(p, id);
    }

    private synchronized MemorySegment map(int p, long id) {
        if (closed) {
            throw new org.jccl.InvalidUsageException("the shared memory of rank " + rank + " of communicator " + name
                    + " is closed");
        }
        if (id < 0 || id > Integer.MAX_VALUE - 8) {
            throw new JcclException("rank " + p + " names registered region " + id + ": corrupt descriptor");
        }
        Path file = dir.resolve(fileName(name, p, id));
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long size = ch.size();
            if (size < DATA) {
                throw new JcclException("registered memory file " + file + " of rank " + p + " has " + size
                        + " bytes, less than its header");
            }
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            long magic = (long) LONG.getAcquire(seg, MAGIC_OFFSET);
            if (magic != MAGIC || seg.get(ValueLayout.JAVA_INT, RANK_OFFSET) != p
                    || seg.get(ValueLayout.JAVA_LONG, ID_OFFSET) != id
                    || seg.get(ValueLayout.JAVA_LONG, PID_OFFSET) != peerPids[p]
                    || fileBytes(seg.get(ValueLayout.JAVA_LONG, DATA_BYTES_OFFSET)) != size) {
                throw new JcclException("registered memory file " + file + " does not hold region " + id + " of rank " + p
                        + " (pid " + peerPids[p] + "): another job uses the same job id? Set a unique JCCL_JOB_ID");
            }
            MemorySegment[] cur = peers[p];
            if (id >= cur.length) {
                cur = java.util.Arrays.copyOf(cur, (int) Math.max(id + 1, 2L * cur.length));
                peers[p] = cur;
            }
            cur[(int) id] = seg;
            return seg;
        } catch (IOException e) {
            throw new JcclException("rank " + rank + " cannot map registered memory region " + id + " of rank " + p
                    + " (" + file + "): " + e.getMessage() + " (do the ranks share " + dir + "?)", e);
        }
    }

    /** The number of regions this rank allocated. */
    public int count() {
        return own.length;
    }

    /** Unlinks this rank's files and unmaps every region (its own buffers can no longer be accessed). */
    synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Path f : files) {
            try {
                Files.deleteIfExists(f);
            } catch (IOException ignored) {
                // the next start's stale-file scan removes it (owner pid gone)
            }
        }
        own = new MemorySegment[0];
        try {
            arena.close();
        } catch (IllegalStateException e) {
            // another thread is reading a buffer right now: the mappings go with the process
        }
    }
}
