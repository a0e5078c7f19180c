package org.jccl.cli.perf;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;

/**
 * Host buffers registered with the communicator ({@link Communicator#allocate}: the host engine's
 * zero-copy path on shared memory), for {@code -Djccl.perf.registered=true} (through {@code
 * JCCL_JAVA_OPTS} with {@code ./jccl perf}). Registered memory lives until the communicator
 * closes, so buffers are pieces of a few regions that are reused once every buffer handed out is
 * freed (the runner frees each group's buffers before the next group allocates).
 */
public final class RegisteredMemory implements PerfMemory {
    /** The system property that turns it on. */
    public static final String PROPERTY = "jccl.perf.registered";
    private static final long REGION = 64L << 20;

    /** Copies in and out of host buffers: HostMemory's (it allocates nothing for them). */
    private static final HostMemory COPIES = new HostMemory();
    private final Communicator comm;
    private final List<MemorySegment> regions = new ArrayList<>();
    private final Map<Buffer, Boolean> live = new IdentityHashMap<>();
    private int region;
    private long used;

    private RegisteredMemory(Communicator comm) {
        this.comm = comm;
    }

    /** {@code mem}, or registered memory of {@code comm} when {@link #PROPERTY} is true and {@code mem} is host memory. */
    public static PerfMemory ifRequested(Communicator comm, PerfMemory mem) {
        return Boolean.getBoolean(PROPERTY) && mem instanceof HostMemory ? new RegisteredMemory(comm) : mem;
    }

    @Override
    public synchronized Buffer allocate(DataType type, long count) {
        long bytes = Math.multiplyExact(count, (long) type.byteSize());
        long need = (bytes + 4095) & ~4095L;
        while (region < regions.size() && used + need > regions.get(region).byteSize()) {
            region++;
            used = 0;
        }
        if (region == regions.size()) {
            regions.add(comm.allocate(DataType.UINT8, Math.max(REGION, need)).segment());
            used = 0;
        }
        MemorySegment s = regions.get(region).asSlice(used, bytes);
        used += need;
        s.fill((byte) 0);
        HostBuffer b = HostBuffer.of(type, s, count);
        live.put(b, Boolean.TRUE);
        return b;
    }

    @Override
    public synchronized void free(Buffer buffer) {
        if (live.remove(buffer) == null) {
            throw new IllegalArgumentException("buffer " + buffer + " was not allocated by this RegisteredMemory or is "
                    + "freed already");
        }
        if (live.isEmpty()) {
            region = 0;
            used = 0;
        }
    }

    @Override
    public void upload(MemorySegment src, Buffer dst) {
        COPIES.upload(src, dst);
    }

    @Override
    public void download(Buffer src, MemorySegment dst) {
        COPIES.download(src, dst);
    }

    @Override
    public void clear(Buffer dst) {
        COPIES.clear(dst);
    }

    @Override
    public String device() {
        return "cpu (registered)";
    }

    /** Frees nothing: the memory is the communicator's until it closes. */
    @Override
    public synchronized void close() {
        live.clear();
        region = 0;
        used = 0;
    }
}
