package org.jccl.host.shm;

/**
 * Layout of a registered-memory region ({@code Communicator.allocate} on the shared-memory
 * engine) and of the registration descriptors ranks exchange per call.
 *
 * <p>A region is one file, {@code <shm dir>/jccl-<communicator>-<rank>-reg<id>}, created and
 * written by its owner rank, mapped by the peers the first time a call names it (read and, for
 * reduce, written), unlinked by the owner when it closes the communicator. Its header names the
 * owner pid at the same offset as a segment's ({@link ShmSegmentDescriptor#PID_OFFSET}), so that
 * {@link ShmTransport#removeStaleFiles} removes a region whose owner died.
 *
 * <pre>
 *  offset
 *  0        +--------------------------------------------------------------+
 *           | magic u64 "JCCLREG1" | version u32 | rank u32 | region id u64 |  HEADER page
 *  24       | pid u64 | data bytes u64                                     |
 *  4096     +--------------------------------------------------------------+
 *           | data (the user's buffer), data bytes rounded up to a page    |  DATA
 *  total    +--------------------------------------------------------------+
 * </pre>
 *
 * <p>The exchange of a zero-copy-eligible call: the call's first chunk id {@code g} carries, in
 * the IN slot data of {@code g} (header from the call),
 *
 * <pre>
 *  +0   send region id i64 (-1: not registered, or not usable zero-copy)
 *  +8   send offset u64 (bytes from the start of the region's data)
 *  +16  recv region id i64 (-1: not registered)
 *  +24  recv offset u64
 *  +32  send address u64 (the send buffer's address in its owner; 0: a heap array, or not usable)
 *  +40  reads all u64 (1: this rank can read every peer's memory with process_vm_readv)
 * </pre>
 *
 * <p>Every rank reads every rank's descriptor and takes the zero-copy path only when every
 * buffer the algorithm reads or writes on a peer is registered, or, for the algorithms that only
 * read peers' send buffers, is in native memory that every rank can read (process_vm_readv): the
 * same inputs everywhere, so the same decision everywhere.
 */
public final class ShmRegionDescriptor {
    private ShmRegionDescriptor() {
    }

    /** "JCCLREG1". */
    public static final long MAGIC = 0x3147_4552_4c43_434aL;
    /** Layout version. */
    public static final int VERSION = 1;

    public static final long MAGIC_OFFSET = 0;
    public static final long VERSION_OFFSET = 8;
    public static final long RANK_OFFSET = 12;
    public static final long ID_OFFSET = 16;
    /** The owner's pid: the same offset as in a segment, for the stale-file scan. */
    public static final long PID_OFFSET = ShmSegmentDescriptor.PID_OFFSET;
    public static final long DATA_BYTES_OFFSET = 32;
    /** Where the data starts (page aligned). */
    public static final long DATA = ShmSegmentDescriptor.PAGE;

    public static final long X_SEND_ID = 0;
    public static final long X_SEND_OFFSET = 8;
    public static final long X_RECV_ID = 16;
    public static final long X_RECV_OFFSET = 24;
    public static final long X_SEND_ADDRESS = 32;
    public static final long X_READS_ALL = 40;
    /** Bytes of one descriptor. */
    public static final long X_BYTES = 48;
    /** A descriptor's region id when the buffer is not registered (or is not usable in place). */
    public static final long NONE = -1;

    /** File size of a region of {@code dataBytes}. */
    public static long fileBytes(long dataBytes) {
        return DATA + ShmSegmentDescriptor.align(Math.max(dataBytes, 1), ShmSegmentDescriptor.PAGE);
    }

    /** File name of region {@code id} of {@code rank} of communicator {@code name}. */
    public static String fileName(String name, int rank, long id) {
        return "jccl-" + name + "-" + rank + "-reg" + id;
    }
}
