package org.jccl.host.shm;

/**
 * Layout of one rank's shared-memory segment. Every rank writes only its own segment and reads
 * its peers'. Control words are 64-bit monotonically increasing counters, one per 64-byte cache
 * line, written with release and read with acquire.
 *
 * <pre>
 *  offset
 *  0        +--------------------------------------------------------------+
 *           | magic u64 | version u32 | rank u32 | size u32 | k u32 | pid u64 |  HEADER line
 *           | slotBytes u64 | p2pSlotBytes u64 | p2pSlots u32 | pad u32     |
 *           | self address u64: where this segment lies in its owner      |
 *  64       | abort code u64 (0 = running) | culprit rank i64 (-1: itself)  |  ABORT line
 *  128      | (unused: a chunk's input is published by its header's chunk id) |  IN_SEQ line
 *  192      | redSeq  u64: last chunk id whose reduced slice is in RES     |  RED_SEQ line
 *  256      | doneSeq u64: last chunk id this rank finished reading        |  DONE_SEQ line
 *  320      | abort reason: u32 length + UTF-8 bytes (up to 252)           |  REASON (256 B)
 *  576      | per peer q: canRead[q] u64 line, then ack[q] u64 line        |  P2P control
 *           |   (2 x size lines); canRead[q] = 1: this rank can read q's   |
 *           |   memory with process_vm_readv (probed at set-up)            |
 *  ctlEnd   +-- aligned to 4096 -------------------------------------------+
 *  inRing   | k x ( 40-byte chunk header | slotBytes data | 24 pad )    |  IN ring
 *           |   chunk header: chunk id u64 | coll seq u64 | call u64 |     |
 *           |                 count u64 | chain u64: a digest of the   |
 *           |                 poster's earlier collectives               |
 *           |   the chunk id is written last (release): readers poll it,  |
 *           |   and inputs up to 24 bytes share its cache line           |
 *           |   count bit 62 (COUNT_ADDRESS): the data is the poster's   |
 *           |   buffer address u64, read in place by the call's readers  |
 *  resRing  | k x slotBytes                                                |  RES ring
 *  p2p      | per destination d: p2pSlots x ( 40-byte header | p2pSlotBytes | 24 pad ) |  mailboxes
 *           |   header: chunk no u64 | message no u64 | message bytes u64 |   |
 *           |           dtype u64 | chunk offset u64                       |
 *           |   the chunk no (the pair's chunk count, from 1) is written   |
 *           |   last (release): the receiver polls it in the entry it      |
 *           |   expects, and chunks up to 24 bytes share its cache line    |
 *           |   single copy: dtype has bit 32 set, the data is the         |
 *           |   sender's buffer address u64; the receiver reads the whole  |
 *           |   message from there and acks this one entry                 |
 *  small    | SMALL_SLOTS x ( 40-byte chunk header | SMALL_SLOT_BYTES     |  SMALL ring
 *           |   data | 24 pad | 64 pad ): 4160 bytes an entry, the IN     |
 *           |   ring of small rooted calls (gather, scatter, broadcast,    |
 *           |   and reduce up to 4 ranks, of one chunk that fits), whose   |
 *           |   ranks may run ahead                                        |
 *  total    +--------------------------------------------------------------+
 * </pre>
 *
 * <p>Chunk ids are global per communicator and identical on every rank: every collective
 * consumes the same number of chunk ids everywhere, and takes the same ring for each. Chunk
 * {@code g} uses entry {@code g % k} of the IN ring, or entry {@code g % SMALL_SLOTS} of the
 * small ring. A rank overwrites an entry only after every peer's doneSeq reached the id of the
 * chunk that used that entry last (doneSeq covers both rings: chunks finish in id order).
 */
public final class ShmSegmentDescriptor {
    private ShmSegmentDescriptor() {
    }

    /** "JCCLSHM1". */
    public static final long MAGIC = 0x314d4853_4c43434aL;
    /**
     * Layout version (2: a mailbox entry's chunk number is its own header's first word; 3: the self
     * address, canRead words and single-copy entries; 4: the small ring; 5: a chunk header's chain
     * digest in place of its chunk offset; 6: a chunk's count may carry {@link #COUNT_ADDRESS}).
     */
    public static final int VERSION = 6;

    /** Cache line. */
    public static final int LINE = 64;
    /** Page alignment of the data areas. */
    public static final int PAGE = 4096;
    /**
     * Entries of the small ring. Small rooted calls let ranks run ahead (a gather's non-roots, a
     * small reduce's up to 4 ranks, a broadcast's or scatter's root post and return), at most as many calls as the
     * ring has entries: 4 entries of the IN ring held them back (docs/BENCHMARKS.md, the slot
     * ring's shape), and a deeper IN ring cost large calls their chunk size. A power of two: chunk
     * ids map to its entries by mask.
     */
    public static final int SMALL_SLOTS = 32;
    /** Data bytes of a small ring entry. */
    public static final long SMALL_SLOT_BYTES = 4096 - LINE;
    /**
     * Bytes from one small ring entry to the next: a page and a line, so that consecutive entries'
     * headers fall into different cache sets (a page apart, every header of the ring would share
     * one set of the L1 cache, and the header lines of the peers' entries that a root reads every
     * call would evict each other).
     */
    public static final long SMALL_ENTRY_BYTES = 4096 + LINE;

    public static final long MAGIC_OFFSET = 0;
    public static final long VERSION_OFFSET = 8;
    public static final long RANK_OFFSET = 12;
    public static final long SIZE_OFFSET = 16;
    public static final long K_OFFSET = 20;
    public static final long PID_OFFSET = 24;
    public static final long SLOT_BYTES_OFFSET = 32;
    public static final long P2P_SLOT_BYTES_OFFSET = 40;
    public static final long P2P_SLOTS_OFFSET = 48;
    /** The segment's address in its owner's address space: what a peer's single-copy probe reads. */
    public static final long SELF_ADDRESS_OFFSET = 56;

    public static final long ABORT_OFFSET = LINE;
    /** The rank a failure report blames (the writer itself when -1). */
    public static final long CULPRIT_OFFSET = LINE + 8;
    public static final long IN_SEQ_OFFSET = 2 * LINE;
    public static final long RED_SEQ_OFFSET = 3 * LINE;
    public static final long DONE_SEQ_OFFSET = 4 * LINE;
    public static final long REASON_OFFSET = 5 * LINE;
    public static final int REASON_BYTES = 256;
    public static final long P2P_CTL_OFFSET = REASON_OFFSET + REASON_BYTES;

    /** Chunk / mailbox header size. */
    public static final int CHUNK_HEADER = LINE;
    public static final long HDR_CHUNK_ID = 0;
    public static final long HDR_COLL_SEQ = 8;
    public static final long HDR_CALL = 16;
    public static final long HDR_COUNT = 24;
    /**
     * A digest of the poster's collectives before this one (sequence number, call and count of each):
     * equal on every rank that called the same ones (see ShmTransport#beginCollective).
     */
    public static final long HDR_CHAIN = 32;
    /**
     * Set in a posted count ({@link #HDR_COUNT}) when the chunk's data is the poster's buffer address
     * (u64) instead of the data itself: its readers read their blocks from there (process_vm_readv)
     * and the poster waits until they are done. Counts never reach it.
     */
    public static final long COUNT_ADDRESS = 1L << 62;
    /** Where a chunk's data starts after its header: small inputs share the header's line. */
    public static final long HDR_DATA = 40;

    /** A mailbox entry's chunk number: written last, with release; what the receiver polls. */
    public static final long MBX_CHUNK_NO = 0;
    public static final long MBX_MESSAGE_NO = 8;
    public static final long MBX_MESSAGE_BYTES = 16;
    public static final long MBX_DTYPE = 24;
    public static final long MBX_CHUNK_OFFSET = 32;
    /** Where a mailbox entry's data starts: chunks up to 24 bytes share the header's line. */
    public static final long MBX_DATA = 40;
    /** In a mailbox entry's dtype word: the entry carries the sender's buffer address, not data. */
    public static final long MBX_SINGLE_COPY = 1L << 32;

    /** Offset of canRead[q] (in the reader's segment, for owner q): 1 when the reader can read q's memory. */
    public static long canReadOffset(int peer) {
        return P2P_CTL_OFFSET + 2L * peer * LINE;
    }

    /** Offset of ack[q] (in the receiver's segment, for sender q). */
    public static long ackOffset(int peer) {
        return P2P_CTL_OFFSET + (2L * peer + 1) * LINE;
    }

    /** The computed offsets of one segment geometry. */
    public record Geometry(int size, int k, long slotBytes, int p2pSlots, long p2pSlotBytes) {

        /** End of the control area, page aligned. */
        public long controlEnd() {
            return align(P2P_CTL_OFFSET + 2L * size * LINE, PAGE);
        }

        /** Start of IN ring entry {@code e}'s header. */
        public long inEntry(int e) {
            return controlEnd() + e * (CHUNK_HEADER + slotBytes);
        }

        /** Start of IN ring entry {@code e}'s data. */
        public long inData(int e) {
            return inEntry(e) + HDR_DATA;
        }

        /** Start of the RES ring. */
        public long resRing() {
            return align(controlEnd() + k * (CHUNK_HEADER + slotBytes), PAGE);
        }

        /** Start of RES ring entry {@code e}. */
        public long resData(int e) {
            return resRing() + e * slotBytes;
        }

        /** Start of the mailboxes. */
        public long mailboxes() {
            return align(resRing() + k * slotBytes, PAGE);
        }

        /** Header of mailbox entry {@code e} for destination {@code dest}. */
        public long mailboxEntry(int dest, int e) {
            return mailboxes() + ((long) dest * p2pSlots + e) * (CHUNK_HEADER + p2pSlotBytes);
        }

        /** Start of the small ring. */
        public long smallRing() {
            return align(mailboxes() + (long) size * p2pSlots * (CHUNK_HEADER + p2pSlotBytes), PAGE);
        }

        /** Start of small ring entry {@code e}'s header. */
        public long smallEntry(int e) {
            return smallRing() + e * SMALL_ENTRY_BYTES;
        }

        /** Total segment size. */
        public long totalBytes() {
            return align(smallRing() + SMALL_SLOTS * SMALL_ENTRY_BYTES, PAGE);
        }
    }

    static long align(long v, long a) {
        return (v + a - 1) / a * a;
    }
}
