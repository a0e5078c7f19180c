package org.jccl.host.shm;

import org.jccl.host.engine.CallInfo;
import org.jccl.host.engine.OpCode;
import org.jccl.host.engine.Transport;
import static org.jccl.host.shm.ShmSegmentDescriptor.*;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.AbortedException;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.bootstrap.Store;
import org.jccl.spi.BackoffIdleStrategy;
import org.jccl.spi.IdleStrategy;
import org.jccl.internal.Log;

/**
 * Shared-memory transport of one communicator on one host: this rank's segment plus read-only
 * use of every peer's (see {@link ShmSegmentDescriptor} for the layout and the protocol).
 *
 * <p>Files are created under /dev/shm, mapped by every rank, then unlinked by their owner once
 * all ranks have mapped them, so a crashed job leaves nothing behind; a file left by a job that
 * died during setup names its owner pid in its header and is removed at the next start.
 *
 * <p>Not thread-safe: the communicator serialises calls.
 */
public final class ShmTransport implements Transport {
    private static final Log LOG = Log.get(ShmTransport.class);
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    /** Abort codes written to the ABORT line. */
    public static final long ABORT_NONE = 0, ABORT_ABORTED = 1, ABORT_FAILED = 2, ABORT_CLOSED = 3, ABORT_MISMATCH = 4;

    private static final long PID = ProcessHandle.current().pid();

    private final int rank;
    private final int size;
    private final Geometry geo;
    /** Header offset of every ring entry: the IN ring's k, then the small ring's (see {@link #entry}). */
    private final long[] entryHeader;
    /** k - 1 where the IN ring's k is a power of two (the default), else -1: chunk ids map to entries without a division. */
    private final int inMask;

    static {
        if (Integer.bitCount(SMALL_SLOTS) != 1) { // entry() masks ids into the small ring
            throw new AssertionError("SMALL_SLOTS must be a power of two, is " + SMALL_SLOTS);
        }
    }
    private final Arena arena;
    private final MemorySegment[] segs;
    private final MemorySegment mine;
    private final long[] peerPids;
    private final IdleStrategy idle;
    private final Path file;
    /** Registered memory: this rank's regions and the peers' it mapped. */
    private final ShmRegions regions;

    /** Reused by the algorithms: one entry per rank, no allocation per call. */
    public final MemorySegment[] srcs;
    /**
     * The sources of a reduction of the slots and this rank's own input: every rank's segment but
     * entry {@code rank}, which every such reduction sets to the caller's input. An array of its
     * own, not {@link #srcs}: the zero-copy algorithms leave the peers' views there, and the peers'
     * entries here stay their slots' segments, never written after construction. Only a changed
     * segment is stored (a store of a reference is a GC write barrier, and an old array's card
     * dirtied per call keeps the collector's refinement busy), through {@link
     * org.jccl.internal.SegmentArrays} (a plain array store trapped in every first compilation); the
     * warm-up changes it between its in-place and out-of-place calls, so both ways of that branch
     * are compiled.
     */
    public final MemorySegment[] slotAndOwnSrcs;
    /** Reused by the algorithms: one offset per rank. */
    public final long[] srcOffsets;
    /** The zero-copy path's view of every rank's send buffer (peers' registered regions), after the exchange. */
    public final MemorySegment[] peerSend;
    /** Byte offset of every rank's send buffer in {@link #peerSend}. */
    public final long[] peerSendOffsets;
    /** Where {@link #peerSend} is null: the address of that rank's send buffer in its process (read with {@link #readPeer}). */
    public final long[] peerSendAddress;
    /** The zero-copy path's view of every rank's recv buffer, after the exchange. */
    public final MemorySegment[] peerRecv;
    /** Byte offset of every rank's recv buffer in {@link #peerRecv}. */
    public final long[] peerRecvOffsets;

    private long chunkIds;
    /**
     * Per ring entry (the IN ring's k, then the small ring's), the id of the chunk that used it last:
     * what every peer's done word must reach before the entry is written again. The same on every
     * rank (every rank runs the same calls through the same rings).
     */
    private final long[] lastUse;
    /** A chunk id's tag: the chunk lives in the small ring (see {@link #beginSmallChunk}). */
    private static final long SMALL_RING = 1L << 62;
    /** The chunk whose input a wait in progress expects (tagged), for the other ring's check; 0: none. */
    private long postWait;
    /** The call that {@link #postWait}'s chunk belongs to on this rank (its header words). */
    private long waitSeq, waitPacked, waitCount;
    /** The smallest done word seen at the last check (done words only grow). */
    private long minPeerDone;
    /**
     * A digest of this rank's collectives so far ({@link #beginCollective}: sequence number, call and
     * count of each), and of those before the current one: what every header this rank posts
     * carries ({@code HDR_CHAIN}), and what a peer's must equal. Small rooted calls return without
     * waiting for every rank (a broadcast's or scatter's root, a gather's or reduce's non-roots), and
     * no rank reads a small broadcast's or scatter's receivers' headers, so a disagreement that no
     * rank of the call sees (two ranks that both act as root) shows at the next header a rank
     * checks: the calls before it differ.
     */
    private long chain, chainBefore;
    private final long[] sendChunks;
    private final long[] recvChunks;
    private final long[] sendMessages;
    private final long[] recvMessages;
    private volatile String localAbort;
    private volatile boolean closed;
    /** Deaths the store's heartbeats report, in this communicator's ranks (set once, before use). */
    private org.jccl.spi.Liveness.Watch watch;

    /** Smallest send/recv moved by one copy (JCCL_SHM_SINGLE_COPY_BYTES); Long.MAX_VALUE: never. */
    private final long singleCopyBytes;
    /** process_vm_readv's scratch (null when single copy is off or unavailable). */
    private final org.jccl.internal.CrossMemory.Reader reader;
    /** A receiver's single-copy source per peer: the sender's buffer address (set by tryRecvChunk). */
    private final long[] singleCopyFrom;
    /** Bounce buffer of a single-copy receive into a heap buffer (made on first use). */
    private MemorySegment bounce;
    /** Messages received by one copy. */
    private long singleCopies;
    /** Reads of peers' memory with process_vm_readv (single-copy messages' pieces and collectives' blocks). */
    private long crossReads;
    /** This rank can read every peer's memory (process_vm_readv, probed at set-up). */
    private final boolean readsAll;

    /** Description of the call in progress, for error messages (set per call, no allocation). */
    public final CallInfo call = new CallInfo();
    private final int localRanks;

    @Override
    public int localRanks() {
        return localRanks;
    }

    private ShmTransport(int rank, int size, Geometry geo, Arena arena, MemorySegment[] segs, long[] pids,
                         IdleStrategy idle, Path file, String name, int localRanks, long singleCopyBytes,
                         org.jccl.internal.CrossMemory.Reader reader) {
        this.localRanks = localRanks;
        this.singleCopyBytes = reader == null ? Long.MAX_VALUE : singleCopyBytes;
        this.reader = reader;
        this.singleCopyFrom = new long[size];
        boolean all = reader != null;
        for (int p = 0; p < size && all; p++) {
            all = p == rank || (long) LONG.getAcquire(segs[rank], canReadOffset(p)) == 1L;
        }
        this.readsAll = all;
        this.rank = rank;
        this.size = size;
        this.geo = geo;
        this.arena = arena;
        this.segs = segs;
        this.mine = segs[rank];
        this.peerPids = pids;
        this.idle = idle;
        this.firstParkedCheck = firstParkedCheck(idle);
        this.file = file;
        this.regions = new ShmRegions(name, rank, size, pids);
        this.srcs = new MemorySegment[size];
        this.slotAndOwnSrcs = segs.clone();
        this.srcOffsets = new long[size];
        this.lastUse = new long[geo.k() + SMALL_SLOTS];
        this.entryHeader = new long[geo.k() + SMALL_SLOTS];
        for (int e = 0; e < geo.k(); e++) {
            entryHeader[e] = geo.inEntry(e);
        }
        for (int e = 0; e < SMALL_SLOTS; e++) {
            entryHeader[geo.k() + e] = geo.smallEntry(e);
        }
        this.inMask = Integer.bitCount(geo.k()) == 1 ? geo.k() - 1 : -1;
        this.peerSend = new MemorySegment[size];
        this.peerSendOffsets = new long[size];
        this.peerSendAddress = new long[size];
        this.peerRecv = new MemorySegment[size];
        this.peerRecvOffsets = new long[size];
        this.sendChunks = new long[size];
        this.recvChunks = new long[size];
        this.sendMessages = new long[size];
        this.recvMessages = new long[size];
    }

    /** Directory the segment files live in: /dev/shm when present, else the temp directory. */
    public static Path shmDirectory() {
        Path dev = Path.of("/dev/shm");
        return Files.isDirectory(dev) && Files.isWritable(dev) ? dev : Path.of(System.getProperty("java.io.tmpdir"));
    }

    /**
     * Collective: creates this rank's segment, publishes it through {@code store}, maps every
     * peer's, and unlinks its own file once all have mapped theirs.
     *
     * @param name      unique name of the communicator on this host (job id + communicator id)
     * @param localRanks ranks of this communicator on this host (idle strategy choice)
     * @param singleCopyBytes smallest send/recv the receiver copies straight from the sender's buffer
     *                  (process_vm_readv, where the kernel lets it read that peer: probed here);
     *                  {@code Long.MAX_VALUE}: never
     */
    public static ShmTransport open(String name, int rank, int size, Geometry geo, Store store, Duration timeout,
                                    int localRanks, long singleCopyBytes) {
        removeStaleFiles();
        boolean single = singleCopyBytes != Long.MAX_VALUE && org.jccl.internal.CrossMemory.isAvailable();
        if (single) {
            org.jccl.internal.CrossMemory.allowReaders(); // before a peer can find this rank's segment
        }
        Path dir = shmDirectory();
        Path file = dir.resolve("jccl-" + name + "-" + rank);
        Arena arena = Arena.ofShared();
        boolean ok = false;
        try {
            MemorySegment mine = create(file, geo, rank, size, arena);
            store.set("shm/" + rank, file.toString().getBytes(StandardCharsets.UTF_8));
            MemorySegment[] segs = new MemorySegment[size];
            long[] pids = new long[size];
            segs[rank] = mine;
            pids[rank] = PID;
            for (int p = 0; p < size; p++) {
                if (p == rank) {
                    continue;
                }
                Path peerFile = Path.of(new String(store.get("shm/" + p, timeout), StandardCharsets.UTF_8));
                segs[p] = mapPeer(peerFile, geo, p, size, arena);
                pids[p] = segs[p].get(ValueLayout.JAVA_LONG, PID_OFFSET);
            }
            org.jccl.internal.CrossMemory.Reader reader = single ? new org.jccl.internal.CrossMemory.Reader(arena) : null;
            if (reader != null) {
                probeSingleCopy(reader, arena, rank, size, segs, pids, name);
            }
            // Once every rank has mapped every file, the names are no longer needed.
            if (store.add("shm/mapped", 1) == size) {
                store.set("shm/all-mapped", new byte[] {1});
            }
            store.get("shm/all-mapped", timeout);
            Files.deleteIfExists(file);
            ShmTransport t = new ShmTransport(rank, size, geo, arena, segs, pids, BackoffIdleStrategy.forRanks(localRanks), file,
                    name, localRanks, singleCopyBytes, reader);
            ok = true;
            String copyMode = singleCopyBytes == Long.MAX_VALUE ? "off (JCCL_SHM_SINGLE_COPY_BYTES=off)"
                    : reader == null ? "off (" + org.jccl.internal.CrossMemory.unavailabilityCause() + ")"
                    : "from " + singleCopyBytes + " bytes (process_vm_readv)";
            LOG.info(rank, () -> "shm transport " + name + ": " + size + " ranks, segment " + geo.totalBytes()
                    + " bytes, slot " + geo.slotBytes() + " x " + geo.k() + ", single-copy send/recv " + copyMode);
            return t;
        } catch (IOException e) {
            throw new JcclException("cannot set up shared memory in " + dir + " for communicator " + name
                    + ": " + e.getMessage() + " (check free space with df " + dir + ")", e);
        } finally {
            if (!ok) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    // best effort: the next start removes it (owner pid gone)
                }
                arena.close();
            }
        }
    }

    /**
     * Whether this rank can read each peer's memory with process_vm_readv: it reads the magic word of
     * the peer's segment at the address the peer published, and says so in its canRead words, which
     * the peer's sends consult. The kernel decides (same user, Yama's ptrace_scope, seccomp), so
     * the answer may differ by direction; where it is no, that direction keeps the mailboxes.
     */
    private static void probeSingleCopy(org.jccl.internal.CrossMemory.Reader reader, Arena arena, int rank, int size,
                                        MemorySegment[] segs, long[] pids, String name) {
        MemorySegment word = arena.allocate(8, 8);
        StringBuilder no = new StringBuilder();
        for (int p = 0; p < size; p++) {
            if (p == rank) {
                continue;
            }
            word.set(ValueLayout.JAVA_LONG, 0, 0);
            long at = segs[p].get(ValueLayout.JAVA_LONG, SELF_ADDRESS_OFFSET);
            long r = reader.read(pids[p], at + MAGIC_OFFSET, word.address(), 8);
            boolean ok = r == 8 && word.get(ValueLayout.JAVA_LONG, 0) == MAGIC;
            if (!ok) {
                no.append(no.isEmpty() ? "" : ", ").append(p).append(r < 0 ? " (" + org.jccl.internal.CrossMemory.describe(r) + ")" : "");
            }
            LONG.setRelease(segs[rank], canReadOffset(p), ok ? 1L : 0L);
        }
        if (!no.isEmpty()) {
            LOG.info(rank, () -> "shm transport " + name + ": large sends from rank(s) " + no + " go through the mailboxes "
                    + "(two copies): this process cannot read theirs with process_vm_readv");
        }
    }

    private static MemorySegment create(Path file, Geometry geo, int rank, int size, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, geo.totalBytes(), arena);
            seg.set(ValueLayout.JAVA_LONG, PID_OFFSET, PID);
            seg.set(ValueLayout.JAVA_INT, VERSION_OFFSET, VERSION);
            seg.set(ValueLayout.JAVA_INT, RANK_OFFSET, rank);
            seg.set(ValueLayout.JAVA_INT, SIZE_OFFSET, size);
            seg.set(ValueLayout.JAVA_INT, K_OFFSET, geo.k());
            seg.set(ValueLayout.JAVA_LONG, SLOT_BYTES_OFFSET, geo.slotBytes());
            seg.set(ValueLayout.JAVA_LONG, P2P_SLOT_BYTES_OFFSET, geo.p2pSlotBytes());
            seg.set(ValueLayout.JAVA_INT, P2P_SLOTS_OFFSET, geo.p2pSlots());
            seg.set(ValueLayout.JAVA_LONG, SELF_ADDRESS_OFFSET, seg.address());
            LONG.setRelease(seg, MAGIC_OFFSET, MAGIC);
            return seg;
        }
    }

    static MemorySegment mapPeer(Path file, Geometry geo, int peer, int size, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (ch.size() != geo.totalBytes()) {
                throw new JcclException("shared memory file " + file + " of rank " + peer + " has " + ch.size()
                        + " bytes, expected " + geo.totalBytes() + ": ranks disagree on the segment geometry "
                        + "(different JCCL_SHM_* settings or jccl versions?)");
            }
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, geo.totalBytes(), arena);
            long magic = (long) LONG.getAcquire(seg, MAGIC_OFFSET);
            int version = seg.get(ValueLayout.JAVA_INT, VERSION_OFFSET);
            if (magic == MAGIC && version != VERSION) {
                throw new JcclException("shared memory file " + file + " of rank " + peer + " has layout version "
                        + version + ", this rank's jccl writes " + VERSION + ": run the same jccl version on every rank");
            }
            if (magic != MAGIC || seg.get(ValueLayout.JAVA_INT, RANK_OFFSET) != peer
                    || seg.get(ValueLayout.JAVA_INT, SIZE_OFFSET) != size) {
                throw new JcclException("shared memory file " + file + " does not hold rank " + peer + " of " + size
                        + ": another job uses the same job id? Set a unique JCCL_JOB_ID");
            }
            return seg;
        }
    }

    /**
     * Removes segment files whose owner process is gone (left by a job that crashed during setup)
     * and registered-memory regions ({@link ShmRegionDescriptor}) whose owner process is gone.
     */
    public static int removeStaleFiles() {
        int removed = 0;
        Path dir = shmDirectory();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "jccl-*")) {
            for (Path p : ds) {
                try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                    if (ch.size() < LINE) {
                        continue;
                    }
                    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(32).order(java.nio.ByteOrder.nativeOrder());
                    ch.read(b, 0);
                    long magic = b.getLong(0);
                    long pid = b.getLong((int) PID_OFFSET);
                    if ((magic == MAGIC || magic == ShmRegionDescriptor.MAGIC) && pid != PID && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false) == false) {
                        Files.deleteIfExists(p);
                        removed++;
                        LOG.info(-1, () -> "removed stale shared memory file " + p + " of dead pid " + pid);
                    }
                } catch (IOException | RuntimeException e) {
                    // another job may be creating or deleting it right now
                }
            }
        } catch (IOException e) {
            LOG.warn(-1, "cannot scan " + dir + " for stale jccl files: " + e.getMessage());
        }
        return removed;
    }

    // ------------------------------------------------------------------ accessors

    /**
     * Makes every wait also end, with a {@link PeerFailureException} naming the rank, when the
     * store's heartbeats declare a peer dead (checked with the other health checks, every 128 idle
     * rounds: one volatile read). Set before the first call.
     */
    @Override
    public void watch(org.jccl.spi.Liveness.Watch w) {
        this.watch = w;
    }

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** Ranks. */
    public int size() {
        return size;
    }

    /** Geometry of every segment. */
    public Geometry geometry() {
        return geo;
    }

    /** This rank's registered memory and the peers' regions it mapped. */
    public ShmRegions regions() {
        return regions;
    }

    /** True once closed. */
    public boolean isClosed() {
        return closed;
    }

    /** Segment of {@code r}. */
    public MemorySegment segment(int r) {
        return segs[r];
    }

    /** Bytes one IN/RES ring entry holds. */
    public long slotBytes() {
        return geo.slotBytes();
    }

    // ------------------------------------------------------------------ chunk protocol

    /**
     * Starts collective {@code seq} on this rank ({@link #call}, the digest of the calls before it):
     * before any of its chunks.
     */
    public void beginCollective(long seq, int opcode, org.jccl.DataType type, org.jccl.ReduceOp op, int root, long count,
                                long timeoutNanos) {
        call.set(seq, opcode, type, op, root, count, timeoutNanos);
        long before = chain;
        chainBefore = before;
        chain = chainNext(before, seq, call.packed(), count);
    }

    /** The digest after a call ({@link #chain}): a 64-bit mix of the one before and the call's words. */
    static long chainNext(long chain, long seq, long packed, long count) {
        long h = (chain ^ packed) * 0x9E3779B97F4A7C15L;
        h = (h ^ (h >>> 29) ^ count) * 0xBF58476D1CE4E5B9L;
        h = (h ^ (h >>> 32) ^ seq) * 0x94D049BB133111EBL;
        return h ^ (h >>> 31);
    }

    /**
     * Starts the next chunk in the IN ring: waits until every peer finished the chunk that last
     * used this ring entry. Returns the chunk id.
     */
    public long beginChunk() {
        return begin(false, false);
    }

    /**
     * Starts the next chunk in the small ring ({@link ShmSegmentDescriptor#SMALL_SLOTS} entries of
     * {@link ShmSegmentDescriptor#SMALL_SLOT_BYTES}), for a small rooted call of one chunk whose
     * ranks may run ahead of each other. Every rank must take the same ring for the same call.
     * Returns the chunk id (tagged: pass it as it is to this transport's other chunk methods).
     */
    public long beginSmallChunk() {
        return begin(true, false);
    }

    /**
     * {@link #beginSmallChunk} for a call whose root reads every rank's input (a small gather or
     * reduce), up to {@link #READ_BY_ROOT_MAX_RANKS} ranks: a rank that finds the ring full (in a
     * loop, a non-root a ring ahead of its root) waits for it paced ({@link #awaitDonePaced}), so
     * that the root, the slow side, rarely finds its done word's line taken; and notes whether the
     * chunk continues a stream of the same call ({@link #touchAhead}).
     */
    public long beginSmallChunkReadByRoot() {
        boolean tuned = size <= READ_BY_ROOT_MAX_RANKS;
        long g = begin(true, tuned);
        long id = id(g);
        long packed = call.packed();
        readByRootStream = tuned && id - 1 == readByRootLast && packed == readByRootPacked;
        readByRootLast = id;
        readByRootPacked = packed;
        return g;
    }

    /** The id and call of the last {@link #beginSmallChunkReadByRoot} chunk. */
    private long readByRootLast = -1, readByRootPacked;
    /** Whether the current chunk is the next chunk id after the last one of the same call (same collective, type, root). */
    private boolean readByRootStream;

    /**
     * The most ranks for which a small call that its root reads ({@link #beginSmallChunkReadByRoot})
     * waits paced and its root fetches ahead ({@link #touchAhead}), and a small reduce takes the
     * small ring: measured faster at 2 and 4 ranks, and no faster, at times slower, at 16 (8 not
     * measured) on the 16-core host (docs/BENCHMARKS.md, nineteenth set).
     */
    public static final int READ_BY_ROOT_MAX_RANKS = 4;

    private long begin(boolean small, boolean paced) {
        long id = ++chunkIds;
        int e = entry(small ? id | SMALL_RING : id);
        long need = lastUse[e];
        lastUse[e] = id;
        if (need > 0 && minPeerDone < need) {
            // Peers' done words change every chunk (their lines live in the peers' caches): read
            // them only when the last values seen are not enough. A rank that found the small
            // ring full (the eager side of small rooted calls, a ring ahead: a gather's or reduce's
            // non-root, a broadcast's or scatter's root) then waits until the peers are half a ring further,
            // not one chunk: otherwise it reads a done word every call just after its owner wrote
            // it, and the line crosses twice a call. Only chunks before this one, all posted here
            // already: no wait on itself. (Not in the IN ring, whose few entries pipeline large
            // calls: there the same slack made a 2-rank 1 MiB reduce 10% slower.)
            long target = small ? Math.min(need + SMALL_SLOTS / 2, id - 1) : need;
            if (paced) {
                awaitDonePaced(target);
            }
            awaitAll(DONE_SEQ_OFFSET, target, "finish reading an earlier chunk");
            long min = Long.MAX_VALUE;
            for (int p = 0; p < size; p++) {
                if (p != rank) {
                    min = Math.min(min, (long) LONG.getAcquire(segs[p], DONE_SEQ_OFFSET));
                }
            }
            minPeerDone = min;
        }
        return small ? id | SMALL_RING : id;
    }

    /** How long a paced wait ({@link #awaitDonePaced}) expects a peer to take per chunk: below a small call's time. */
    private static final long PACE_NANOS_PER_CHUNK = 100;
    /** The longest paced wait; the ordinary wait (health checks, deadline) takes over after it. */
    private static final long PACED_WAIT_NANOS = 200_000;

    /**
     * Waits until every peer's done word reaches {@code target}, reading a peer's word only about
     * once per {@link #PACE_NANOS_PER_CHUNK} for each chunk it still has to finish; gives up once
     * {@link #PACED_WAIT_NANOS} have passed (checked between reads: a few microseconds more at
     * most). A waiter that polls the word pulls its line out of the owner's cache every poll, so
     * the owner's next done write, once a call, has to fetch the line back: on the critical side of
     * a loop of small gathers or reduces (the root, which the non-roots wait for half a ring
     * ahead). The caller finishes with the ordinary wait (health checks, abort, deadline), which
     * returns at once when this one succeeded.
     */
    private void awaitDonePaced(long target) {
        long start = System.nanoTime();
        int i = 0;
        for (int p = 0; p < size; p++) {
            if (p == rank) {
                continue;
            }
            MemorySegment s = segs[p];
            long d;
            while ((d = (long) LONG.getAcquire(s, DONE_SEQ_OFFSET)) < target) {
                long now = System.nanoTime();
                if (now - start > PACED_WAIT_NANOS) {
                    return;
                }
                long until = now + (target - d) * PACE_NANOS_PER_CHUNK;
                do {
                    idle.idle(i++); // spins, or yields and parks where ranks outnumber cores
                } while (System.nanoTime() - until < 0);
            }
        }
    }

    /** How far ahead {@link #touchAhead} fetches, in chunks; it fetches {@link #TOUCH_BATCH} chunks at once. */
    private static final int TOUCH_DISTANCE = 4;
    /** Chunks {@link #touchAhead} fetches together (a power of two). */
    private static final int TOUCH_BATCH = 4;

    /**
     * For a small gather's or reduce's root: every {@link #TOUCH_BATCH}th chunk of the small ring,
     * starts fetching the header lines (which hold a small input) of every peer's entries {@link
     * #TOUCH_DISTANCE} to {@code TOUCH_DISTANCE + TOUCH_BATCH - 1} chunks ahead, without waiting.
     * The non-roots post and return, so in a loop they are ahead and those lines are written: they
     * then cross together, a batch for the latency of one, rather than one a call (entries lie a
     * page and a line apart, beyond the hardware prefetcher's reach). Only in a stream of the same
     * call (the chunk right after one of the same collective, type and root, from {@link
     * #beginSmallChunkReadByRoot}) and where non-roots return at once ({@link #eager()}): a line
     * fetched before its owner writes it crosses twice (measured slower for a broadcast's and a
     * scatter's receivers, whose root is not always ahead), as it would where other calls come in
     * between (a hierarchical all-reduce's reduce and broadcast) or under {@code JCCL_CHECK=1}. Up
     * to {@link #READ_BY_ROOT_MAX_RANKS} ranks: beyond, the batch's lines outnumber the misses a
     * core keeps in flight, and a 16-rank gather measured slower.
     */
    public void touchAhead(long g) {
        if (!readByRootStream || !eager || (g & SMALL_RING) == 0 || (id(g) & (TOUCH_BATCH - 1)) != 0) {
            return;
        }
        long sum = 0;
        for (int j = TOUCH_DISTANCE; j < TOUCH_DISTANCE + TOUCH_BATCH; j++) {
            long h = header(g + j) + HDR_CHUNK_ID;
            for (int p = 0; p < size; p++) {
                if (p != rank) {
                    sum += (long) LONG.getOpaque(segs[p], h);
                }
            }
        }
        touched += sum;
    }

    /** The id of chunk {@code g} (without its ring's tag): what headers and done words hold. */
    private static long id(long g) {
        return g & ~SMALL_RING;
    }

    /**
     * The ring entry of chunk {@code g}: {@code id % k} in the IN ring, {@code k + id % SMALL_SLOTS}
     * in the small ring (the index of {@link #lastUse} and {@link #entryHeader}). Several calls a
     * chunk: by mask, not division, where the ring's size is a power of two.
     */
    private int entry(long g) {
        long id = id(g);
        if ((g & SMALL_RING) != 0) {
            return geo.k() + (int) (id & (SMALL_SLOTS - 1));
        }
        return inMask >= 0 ? (int) (id & inMask) : (int) (id % geo.k());
    }

    /** Offset of the header of chunk {@code g}'s ring entry (in any rank's segment). */
    private long header(long g) {
        return entryHeader[entry(g)];
    }

    /** Offset of the IN data of chunk {@code g} (in any rank's segment). */
    public long inData(long g) {
        return header(g) + HDR_DATA;
    }

    /** Offset of the RES data of chunk {@code g}. */
    public long resData(long g) {
        if ((g & SMALL_RING) != 0) {
            throw new IllegalStateException("chunk " + id(g) + " of the small ring has no RES entry");
        }
        return geo.resData(entry(g));
    }

    /**
     * Publishes this rank's input for chunk {@code g} (header from {@link #call} and the digest of
     * the calls before it).
     */
    public void postIn(long g) {
        post(g, call.count);
    }

    /** Writes chunk {@code g}'s header with {@code count} (the call's, or flagged), the chunk id last. */
    private void post(long g, long count) {
        long h = header(g);
        mine.set(ValueLayout.JAVA_LONG, h + HDR_COLL_SEQ, call.seq);
        mine.set(ValueLayout.JAVA_LONG, h + HDR_CALL, call.packed());
        mine.set(ValueLayout.JAVA_LONG, h + HDR_COUNT, count);
        mine.set(ValueLayout.JAVA_LONG, h + HDR_CHAIN, chainBefore);
        // Last, with release: a reader that sees the id sees the header and the data.
        LONG.setRelease(mine, h + HDR_CHUNK_ID, id(g));
    }

    /**
     * {@link #postIn} of a chunk whose data is the address of this rank's buffer {@code src} (native
     * memory): its readers read their blocks from there ({@link #postedAddress}, {@link #readPosted});
     * the caller must not return before they are done ({@link #awaitAllDone}).
     */
    public void postInAddress(long g, MemorySegment src) {
        mine.set(ValueLayout.JAVA_LONG, header(g) + HDR_DATA, src.address());
        post(g, call.count | COUNT_ADDRESS);
    }

    /**
     * The buffer address {@code peer} posted for chunk {@code g} with {@link #postInAddress}, or 0
     * when it posted data (call after a wait for that chunk).
     */
    public long postedAddress(int peer, long g) {
        long h = header(g);
        return (segs[peer].get(ValueLayout.JAVA_LONG, h + HDR_COUNT) & COUNT_ADDRESS) == 0 ? 0L
                : segs[peer].get(ValueLayout.JAVA_LONG, h + HDR_DATA);
    }

    /**
     * Whether {@code peer} can read this rank's {@code src} in place: native memory, reading peers'
     * memory not off on this rank (JCCL_SHM_SINGLE_COPY_BYTES), and the peer said at set-up that it
     * can read this process.
     */
    public boolean peerReads(int peer, MemorySegment src) {
        return singleCopyBytes != Long.MAX_VALUE && src.isNative()
                && (long) LONG.getAcquire(segs[peer], canReadOffset(rank)) == 1L;
    }

    /**
     * {@link #readPeer} of what {@code peer} posted with {@link #postInAddress}, then a check that the
     * peer had not given up on the call meanwhile (a deadline, an abort): its caller may have changed
     * the buffer since, so what was read is not to be trusted (as {@link #finishSingleCopy}).
     */
    public void readPosted(int peer, long from, MemorySegment dst, long dstOffset, long len) {
        readPeer(peer, from, dst, dstOffset, len);
        checkReadFrom(peer);
    }

    /**
     * After this rank read {@code peer}'s buffer in place: throws when the peer had given up on the
     * call meanwhile (a deadline, a failure, an abort), as its caller may have changed the buffer
     * while it was read. A peer returns from a call whose buffer others read only once they are done
     * (their done words), so a peer that is still in the call has not: the check fails only a read
     * that overlapped the peer's giving up, which would otherwise return what it read.
     */
    public void checkReadFrom(int peer) {
        long code = (long) LONG.getAcquire(segs[peer], ABORT_OFFSET);
        if (code != ABORT_NONE) {
            throw peerAbort(peer, code);
        }
    }

    /** Sink of {@link #touchIn}'s loads (so that the JIT keeps them). */
    private long touched;

    /**
     * Starts fetching the header line of every peer's input of chunk {@code g} (a small input
     * shares it), without waiting: the lines then cross from the peers' caches together instead of
     * one after another in the waits and copies that follow (at 4 ranks a gather's root spent a
     * third of its time in three such transfers in a row). Only where the peers are usually ahead:
     * touching a line a peer has yet to write costs that peer an extra transfer (measured slower
     * for a broadcast's and a scatter's receivers).
     */
    public void touchIn(long g) {
        long h = header(g) + HDR_CHUNK_ID;
        long sum = 0;
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                sum += (long) LONG.getOpaque(segs[p], h);
            }
        }
        touched = sum;
    }

    /** Notes that the waits that follow expect the peers' input of chunk {@code g} of the call (seq, packed, count). */
    private void expect(long g, long seq, long packed, long count) {
        postWait = g;
        waitSeq = seq;
        waitPacked = packed;
        waitCount = count;
    }

    /**
     * A wait for {@code peer}'s input of chunk {@link #postWait} that lasts: has the peer posted
     * that chunk in the other ring? Then it runs another call (every rank takes the same ring for
     * the same call), which would never post here: a mismatch, failed now rather than at the
     * deadline.
     */
    private void probeOtherRing(int peer) {
        long other = header(postWait ^ SMALL_RING); // the same chunk id's entry in the other ring
        long id = id(postWait);
        if ((long) LONG.getAcquire(segs[peer], other + HDR_CHUNK_ID) == id) {
            checkHeaderAt(peer, other, id, waitSeq, waitPacked, waitCount);
        }
    }

    /**
     * A wait for {@code peer}'s input of chunk {@link #postWait} that lasts: has the peer finished
     * that chunk (its done word) without posting it? Then it ran another call, one in which it posts
     * nothing at that chunk (a later chunk of a broadcast's receiver): a mismatch, failed now rather
     * than at the deadline. (A rank posts a chunk before it marks it done, and cannot post that
     * entry again before this rank marks it done: a header without the id now was never posted.)
     */
    private void probeFinished(int peer) {
        long id = id(postWait);
        if ((long) LONG.getAcquire(segs[peer], DONE_SEQ_OFFSET) >= id
                && (long) LONG.getAcquire(segs[peer], header(postWait) + HDR_CHUNK_ID) != id) {
            String msg = "collective mismatch: rank " + rank + " called " + OpCode.describe(waitPacked, waitCount, waitSeq)
                    + " and waited for rank " + peer + "'s data, but rank " + peer + " finished its call of that step "
                    + "without posting any: it does not act as the root this rank names, or called another collective; "
                    + OpCode.SAME_CALLS;
            fail(ABORT_MISMATCH, msg);
            throw new CollectiveMismatchException(msg);
        }
    }

    /** Waits for {@code peer}'s input of chunk {@code g} and checks it belongs to the same call. */
    public void awaitIn(int peer, long g) {
        expect(g, call.seq, call.packed(), call.count);
        try {
            await(peer, header(g) + HDR_CHUNK_ID, id(g), "post its input");
        } finally {
            postWait = 0;
        }
        checkHeader(peer, g);
    }

    /** Waits for every rank's input of chunk {@code g}, checking each. */
    public void awaitAllIn(long g) {
        expect(g, call.seq, call.packed(), call.count);
        try {
            awaitAll(header(g) + HDR_CHUNK_ID, id(g), "post its input");
        } finally {
            postWait = 0;
        }
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                checkHeader(p, g);
            }
        }
    }

    /** Publishes this rank's reduced slice of chunk {@code g}. */
    public void postReduced(long g) {
        LONG.setRelease(mine, RED_SEQ_OFFSET, id(g));
    }

    /** Waits for every rank's reduced slice of chunk {@code g}. */
    public void awaitAllReduced(long g) {
        awaitAll(RED_SEQ_OFFSET, id(g), "publish its reduced slice");
    }

    /** Waits for {@code peer}'s reduced slice of chunk {@code g}. */
    public void awaitReduced(int peer, long g) {
        await(peer, RED_SEQ_OFFSET, id(g), "publish its reduced slice");
    }

    /** This rank finished reading everything of chunk {@code g}. */
    public void endChunk(long g) {
        LONG.setRelease(mine, DONE_SEQ_OFFSET, id(g));
    }

    private boolean eager = true;

    /**
     * Whether small rooted calls may return without waiting for every rank (a small broadcast's
     * root, a small reduce's non-roots), their disagreements then found by the next collective;
     * false under {@code JCCL_CHECK=1}, where every rank checks every call in the call.
     */
    public boolean eager() {
        return eager;
    }

    /** Sets {@link #eager()}. */
    public void eager(boolean on) {
        eager = on;
    }

    /** Blocks until every rank finished chunk {@code g} (used before a root returns data it read). */
    public void awaitAllDone(long g) {
        awaitAll(DONE_SEQ_OFFSET, id(g), "finish the chunk");
    }

    private void checkHeader(int peer, long g) {
        checkHeaderAt(peer, header(g), id(g), call.seq, call.packed(), call.count);
    }

    /**
     * Fails the call unless {@code peer}'s header at {@code h} (either ring) is chunk id {@code g}
     * of this rank's call ({@code seq}, {@code packed}, {@code count}) with the same calls before it
     * ({@link #chainBefore}): with the peer's failure when it aborted after posting, else as a
     * mismatch naming both calls.
     */
    private void checkHeaderAt(int peer, long h, long g, long seq, long packed, long count) {
        MemorySegment s = segs[peer];
        long id = s.get(ValueLayout.JAVA_LONG, h + HDR_CHUNK_ID);
        long theirSeq = s.get(ValueLayout.JAVA_LONG, h + HDR_COLL_SEQ);
        long theirPacked = s.get(ValueLayout.JAVA_LONG, h + HDR_CALL);
        long theirCount = s.get(ValueLayout.JAVA_LONG, h + HDR_COUNT) & ~COUNT_ADDRESS;
        long theirChain = s.get(ValueLayout.JAVA_LONG, h + HDR_CHAIN);
        if (id != g || theirSeq != seq || theirPacked != packed || theirCount != count || theirChain != chainBefore) {
            long code = (long) LONG.getAcquire(s, ABORT_OFFSET);
            if (code != ABORT_NONE) {
                // The peer failed or aborted after posting; that, not the mismatch, is the news.
                throw peerAbort(peer, code);
            }
            String msg;
            if (id == g && theirSeq == seq && theirPacked == packed && theirCount == count) {
                msg = "collective mismatch: ranks " + rank + " and " + peer + " both called " + OpCode.describe(packed, count, seq)
                        + " but disagreed on an earlier call: a small broadcast, scatter, gather or reduce returns without "
                        + "waiting for every rank (one that two ranks both ran as its root, for instance, has no rank that "
                        + "could see it), and this is the first call since that compares the ranks' histories; "
                        + OpCode.SAME_CALLS;
            } else {
                msg = "collective mismatch: rank " + rank + " called " + OpCode.describe(packed, count, seq)
                        + " but rank " + peer + " called " + OpCode.describe(theirPacked, theirCount, theirSeq)
                        + " at the same step: " + OpCode.SAME_CALLS;
            }
            fail(ABORT_MISMATCH, msg);
            throw new CollectiveMismatchException(msg);
        }
    }

    // ------------------------------------------------------------------ point to point

    /** Entries per mailbox. */
    public int mailboxSlots() {
        return geo.p2pSlots();
    }

    /** Bytes per mailbox entry. */
    public long mailboxBytes() {
        return geo.p2pSlotBytes();
    }

    /** Starts a message to {@code peer}; returns its number. */
    public long nextSendMessage(int peer) {
        return ++sendMessages[peer];
    }

    /** Starts a message from {@code peer}; returns its number. */
    public long nextRecvMessage(int peer) {
        return ++recvMessages[peer];
    }

    /**
     * Tries to put one chunk of a message into the mailbox for {@code peer}.
     *
     * @return false when the mailbox is full (the peer has not read older chunks yet)
     */
    public boolean trySendChunk(int peer, long messageNo, long messageBytes, int dtype, MemorySegment src,
                                long srcOffset, long chunkOffset, long len) {
        long h = beginEntry(peer, messageNo, messageBytes, dtype, chunkOffset);
        if (h < 0) {
            return false;
        }
        if (len > 0) {
            MemorySegment.copy(src, srcOffset, mine, h + MBX_DATA, len);
        }
        publishEntry(peer, h);
        return true;
    }

    /**
     * The header offset of this rank's next mailbox entry for {@code peer}, its message fields
     * written, or -1 while the entry still holds a chunk the peer has not taken. The caller writes
     * the data, then {@link #publishEntry}.
     */
    private long beginEntry(int peer, long messageNo, long messageBytes, long dtypeWord, long chunkOffset) {
        long k = sendChunks[peer] + 1;
        long need = k - geo.p2pSlots();
        if (need > 0 && !acked(peer, need)) {
            return -1;
        }
        long h = geo.mailboxEntry(peer, (int) (k % geo.p2pSlots()));
        mine.set(ValueLayout.JAVA_LONG, h + MBX_MESSAGE_NO, messageNo);
        mine.set(ValueLayout.JAVA_LONG, h + MBX_MESSAGE_BYTES, messageBytes);
        mine.set(ValueLayout.JAVA_LONG, h + MBX_DTYPE, dtypeWord);
        mine.set(ValueLayout.JAVA_LONG, h + MBX_CHUNK_OFFSET, chunkOffset);
        return h;
    }

    /**
     * Publishes the entry {@link #beginEntry} returned by its own first word, its chunk number,
     * written last with release (a receiver's poll, header and a small chunk are one line); returns
     * that number.
     */
    private long publishEntry(int peer, long h) {
        long k = ++sendChunks[peer];
        LONG.setRelease(mine, h + MBX_CHUNK_NO, k);
        return k;
    }

    /** Consumes {@code peer}'s next entry: its ack, which frees the entry for the peer's next chunk. */
    private void consumeEntry(int peer) {
        LONG.setRelease(mine, ackOffset(peer), ++recvChunks[peer]);
    }

    /**
     * Tries to take the next chunk of a message from {@code peer} into {@code dst}.
     *
     * @return the number of bytes taken, -1 when the peer has not sent it yet, or {@link #SINGLE_COPY}
     *         when the peer sent the message's address instead (read it with {@link #readSingleCopy})
     */
    public long tryRecvChunk(int peer, long messageNo, long messageBytes, int dtype, MemorySegment dst,
                             long dstOffset, long chunkOffset) {
        long k = recvChunks[peer] + 1;
        MemorySegment s = segs[peer];
        long h = geo.mailboxEntry(rank, (int) (k % geo.p2pSlots()));
        if ((long) LONG.getAcquire(s, h + MBX_CHUNK_NO) != k) {
            return -1; // the entry still holds chunk k - p2pSlots (or nothing yet)
        }
        long no = s.get(ValueLayout.JAVA_LONG, h + MBX_MESSAGE_NO);
        long bytes = s.get(ValueLayout.JAVA_LONG, h + MBX_MESSAGE_BYTES);
        long word = s.get(ValueLayout.JAVA_LONG, h + MBX_DTYPE);
        long type = word & ~MBX_SINGLE_COPY;
        long off = s.get(ValueLayout.JAVA_LONG, h + MBX_CHUNK_OFFSET);
        if (no != messageNo || bytes != messageBytes || type != dtype || off != chunkOffset) {
            String msg = "send/recv mismatch: rank " + rank + " posts recv #" + messageNo + " of " + messageBytes
                    + " bytes of " + org.jccl.DataType.values()[dtype] + " from rank " + peer + ", but rank " + peer
                    + " sent message #" + no + " of " + bytes + " bytes of "
                    + (type >= 0 && type < org.jccl.DataType.values().length ? org.jccl.DataType.values()[(int) type] : "type " + type)
                    + ": sends and receives between a pair must match in order, type and count";
            fail(ABORT_MISMATCH, msg);
            throw new CollectiveMismatchException(msg);
        }
        if ((word & MBX_SINGLE_COPY) != 0) {
            singleCopyFrom[peer] = s.get(ValueLayout.JAVA_LONG, h + MBX_DATA);
            return SINGLE_COPY; // consumed by finishSingleCopy once read
        }
        long len = Math.min(geo.p2pSlotBytes(), messageBytes - chunkOffset);
        if (len > 0) {
            MemorySegment.copy(s, h + MBX_DATA, dst, dstOffset, len);
        }
        consumeEntry(peer);
        return len;
    }

    /** What {@link #tryRecvChunk} returns for a single-copy entry: read it with {@link #readSingleCopy}. */
    public static final long SINGLE_COPY = -2;

    /**
     * Whether a message of {@code bytes} from {@code src} to {@code peer} goes by one copy: at least
     * JCCL_SHM_SINGLE_COPY_BYTES, in native memory (a heap array has no stable address), and the
     * peer said at set-up that it can read this process. The same answer for the whole message.
     */
    public boolean singleCopy(int peer, MemorySegment src, long bytes) {
        return bytes >= singleCopyBytes && src.isNative()
                && (long) LONG.getAcquire(segs[peer], canReadOffset(rank)) == 1L;
    }

    /**
     * Tries to post a single-copy entry for {@code peer}: the message's header and the address of
     * {@code src}. The send is complete once {@link #acked} says the peer read it.
     *
     * @return the entry's chunk number, or -1 when the mailbox is full
     */
    public long trySendSingleCopy(int peer, long messageNo, long messageBytes, int dtype, MemorySegment src) {
        long h = beginEntry(peer, messageNo, messageBytes, dtype | MBX_SINGLE_COPY, 0L);
        if (h < 0) {
            return -1;
        }
        mine.set(ValueLayout.JAVA_LONG, h + MBX_DATA, src.address());
        return publishEntry(peer, h);
    }

    /** True once {@code peer} consumed this rank's chunk {@code k} (for a single-copy entry: read the whole message). */
    public boolean acked(int peer, long k) {
        return (long) LONG.getAcquire(segs[peer], ackOffset(rank)) >= k;
    }

    /**
     * Copies {@code len} bytes at {@code offset} of the single-copy message {@code peer} is sending
     * (after {@link #tryRecvChunk} returned {@link #SINGLE_COPY}) into {@code dst} at the same offset.
     * Heap buffers go through a bounce buffer. Failures (the kernel refused, the sender's range is
     * gone) fail the communicator on every rank.
     */
    public void readSingleCopy(int peer, MemorySegment dst, long offset, long len) {
        readPeer(peer, singleCopyFrom[peer] + offset, dst, offset, len);
    }

    /** True when this rank can read every peer's memory (probed at set-up; false when single copy is off). */
    public boolean readsAllPeers() {
        return readsAll;
    }

    /** Reads of peers' memory so far (for tests and tools). */
    public long crossReads() {
        return crossReads;
    }

    /**
     * Copies {@code len} bytes at address {@code from} of {@code peer}'s process into {@code dst} at
     * {@code dstOffset} (process_vm_readv; heap destinations through a bounce buffer). Failures (the
     * kernel refused, the range is gone, the peer died) fail the communicator on every rank.
     */
    public void readPeer(int peer, long from, MemorySegment dst, long dstOffset, long len) {
        crossReads++;
        if (dst.isNative()) {
            if (!dst.scope().isAlive()) {
                throw new IllegalStateException("the receive buffer was closed during the receive from rank " + peer);
            }
            checkRead(peer, reader.read(peerPids[peer], from, dst.address() + dstOffset, len), len);
            return;
        }
        if (bounce == null) {
            bounce = arena.allocate(1L << 20, 64);
        }
        for (long done = 0; done < len; ) {
            long n = Math.min(bounce.byteSize(), len - done);
            checkRead(peer, reader.read(peerPids[peer], from + done, bounce.address(), n), n);
            MemorySegment.copy(bounce, 0, dst, dstOffset + done, n);
            done += n;
        }
    }

    private void checkRead(int peer, long r, long len) {
        if (r == len) {
            return;
        }
        checkReadFrom(peer); // the sender gave up (and may have let go of its buffer)
        if (r == -3 || !ProcessHandle.of(peerPids[peer]).map(ProcessHandle::isAlive).orElse(false)) { // ESRCH: gone
            String msg = "rank " + peer + " (pid " + peerPids[peer] + ") died while rank " + rank
                    + " was reading its send buffer";
            fail(ABORT_FAILED, msg, peer);
            throw new PeerFailureException(peer, msg);
        }
        String msg = "rank " + rank + " could not read rank " + peer + "'s buffer (process_vm_readv: "
                + org.jccl.internal.CrossMemory.describe(r) + "): was it closed or freed during the call? "
                + "JCCL_SHM_SINGLE_COPY_BYTES=off turns reading peers' memory off";
        fail(ABORT_FAILED, msg);
        throw new JcclException(msg);
    }

    /**
     * Ends a single-copy receive from {@code peer}: the entry is consumed and acked, which completes
     * the sender's send. A sender that failed before the ack may have let go of its buffer while it
     * was read: then this receive fails too rather than return what it read.
     */
    public void finishSingleCopy(int peer) {
        checkReadFrom(peer); // closed, failed or aborted before this rank acked: its buffer is not to be trusted
        consumeEntry(peer);
        singleCopies++;
    }

    /** Messages this rank received by one copy so far (for tests and tools). */
    public long singleCopies() {
        return singleCopies;
    }

    // ------------------------------------------------------------------ waiting

    /** Waits until {@code peer}'s word at {@code offset} reaches {@code target}. */
    private void await(int peer, long offset, long target, String what) {
        MemorySegment s = segs[peer];
        if ((long) LONG.getAcquire(s, offset) >= target) {
            return;
        }
        for (int i = 0; ; i++) {
            if ((long) LONG.getAcquire(s, offset) >= target) {
                return;
            }
            if ((i & 127) == 127) {
                try {
                    checkHealth(peer, offset, target, what, i);
                } catch (JcclException e) {
                    // The peer may have posted what we wait for just before it closed or failed:
                    // its words were written before its abort word, which we have now seen.
                    if ((long) LONG.getAcquire(s, offset) >= target) {
                        return;
                    }
                    throw e;
                }
            }
            idle.idle(i);
        }
    }

    /** Waits until every peer's word at {@code offset} reaches {@code target}. */
    private void awaitAll(long offset, long target, String what) {
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                await(p, offset, target, what);
            }
        }
    }

    /**
     * Idles one step of a point-to-point progress loop, checking abort, peer health and the
     * deadline on the way.
     */
    public void idleP2p(int iteration, int peer) {
        if ((iteration & 127) == 127) {
            checkHealth(peer, -1, peer, "match this send/recv", iteration);
        }
        idle.idle(iteration);
    }

    /**
     * Fails the wait when this rank aborted, a peer failed, aborted or saw a mismatch, the awaited
     * {@code peer} closed, a peer process died, or the deadline passed. A peer that closed after
     * finishing its part is no failure unless this rank waits on it.
     */
    private void checkHealth(int peer, long offset, long target, String what, int iteration) {
        String local = localAbort;
        if (local != null) {
            throw new AbortedException("communicator aborted on rank " + rank + " during " + call.describe() + ": " + local);
        }
        for (int p = 0; p < size; p++) {
            if (p == rank) {
                continue;
            }
            long code = (long) LONG.getAcquire(segs[p], ABORT_OFFSET);
            if (code != ABORT_NONE && (code != ABORT_CLOSED || p == peer)) {
                throw peerAbort(p, code);
            }
        }
        org.jccl.spi.Liveness.Watch w = watch;
        if (w != null) {
            int d = w.firstDead();
            if (d >= 0 && d != rank) {
                String msg = w.message(d, call.describe() + " on rank " + rank);
                fail(ABORT_FAILED, msg, d);
                throw new PeerFailureException(d, msg);
            }
        }
        checkPeerProcesses(iteration);
        if (postWait != 0 && offset >= 0 && peer != rank) {
            probeOtherRing(peer);
            probeFinished(peer);
        }
        long now = System.nanoTime();
        if (call.deadline == 0) {
            // The hot path takes no clock reading: the deadline starts at the first slow wait.
            call.deadline = now + call.timeoutNanos;
        }
        if (now - call.deadline > 0) {
            List<Integer> missing = new ArrayList<>();
            if (offset < 0) {
                missing.add((int) target);
            } else {
                for (int p = 0; p < size; p++) {
                    if (p != rank && (long) LONG.getAcquire(segs[p], offset) < target) {
                        missing.add(p);
                    }
                }
            }
            String msg = call.describe() + " timed out after " + Duration.ofNanos(call.timeoutNanos) + " on rank " + rank
                    + ": waiting for " + (missing.isEmpty() ? offset < 0 ? "rank " + target : "a peer" : "rank(s) " + missing)
                    + " to " + what + (offset >= 0 ? " (chunk " + target + ")" : "")
                    + " (a rank is stuck, dead or called a different collective; raise JCCL_TIMEOUT if it is just slow)"
                    + (watch == null ? "" : watch.silentNote(missing));
            throw new CollectiveTimeoutException(msg, missing);
        }
    }

    /**
     * Once a wait parks, every 1024th poll: fails when a peer's process is gone (a rank killed
     * before its liveness watch could tell).
     */
    private void checkPeerProcesses(int iteration) {
        if (idle.isParking(iteration) && (iteration & 1023) == 1023) {
            for (int p = 0; p < size; p++) {
                if (p != rank && peerPids[p] != PID && !ProcessHandle.of(peerPids[p]).map(ProcessHandle::isAlive).orElse(false)) {
                    String msg = "rank " + p + " (pid " + peerPids[p] + ") died during " + call.describe()
                            + " on rank " + rank;
                    fail(ABORT_FAILED, msg, p);
                    throw new PeerFailureException(p, msg);
                }
            }
        }
    }

    /**
     * For the JIT warm-up: the check of {@link #checkPeerProcesses} that a wait makes once it
     * parks. Back-to-back calls never wait that long (tens of milliseconds on a virtual machine,
     * whose spins are slow), so the compiled health check had never taken that branch, and a
     * caller's first long wait (a rank still computing) threw it away.
     */
    public void warmParkedCheck() {
        if (firstParkedCheck >= 0 && size > 1) {
            // Through the whole health check, which C2 compiles early with this check inlined; as
            // a wait on no chunk (no other ring to probe), its deadline started now, between calls
            // (and a poll between two such checks, where it passes over the peers' processes)
            call.deadline = 0;
            int peer = rank == 0 ? 1 : 0;
            checkHealth(peer, -1, peer, "warm up", firstParkedCheck);
            checkHealth(peer, -1, peer, "warm up", firstParkedCheck + 128);
            call.deadline = 0;
        }
    }

    /** The first poll of a wait at which {@link #checkPeerProcesses} looks at the peers' processes (-1: none). */
    private final int firstParkedCheck;

    private static int firstParkedCheck(IdleStrategy idle) {
        for (int i = 1023; i < 1 << 24; i += 1024) {
            if (idle.isParking(i)) {
                return i;
            }
        }
        return -1;
    }

    private JcclException peerAbort(int p, long code) {
        String reason = readReason(p);
        long culprit = segs[p].get(ValueLayout.JAVA_LONG, CULPRIT_OFFSET);
        if (code == ABORT_FAILED && culprit >= 0 && culprit < size && culprit != p) {
            // p only reports another rank's failure: blame that one.
            return new PeerFailureException((int) culprit, "rank " + culprit + " failed (reported by rank " + p + "): " + reason);
        }
        return switch ((int) code) {
            // A relayed one already says which rank saw it first.
            case (int) ABORT_MISMATCH -> new CollectiveMismatchException(reason.startsWith("rank ") && reason.contains(" detected a mismatch: ")
                    ? reason : "rank " + p + " detected a mismatch: " + reason);
            case (int) ABORT_CLOSED -> new PeerFailureException(p, "rank " + p + " closed the communicator while rank "
                    + rank + " was in " + call.describe() + ": all ranks must run the same collectives before close()");
            case (int) ABORT_ABORTED -> new AbortedException(reason.contains(" aborted the communicator")
                    ? reason : "rank " + p + " aborted the communicator: " + reason);
            default -> new PeerFailureException(p, "rank " + p + " failed: " + reason);
        };
    }

    private String readReason(int p) {
        MemorySegment s = segs[p];
        int len = Math.min(s.get(ValueLayout.JAVA_INT, REASON_OFFSET), REASON_BYTES - 4);
        if (len <= 0) {
            return "(no reason given)";
        }
        byte[] b = new byte[len];
        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, REASON_OFFSET + 4, b, 0, len);
        return new String(b, StandardCharsets.UTF_8);
    }

    /** Peers whose process is gone (same host: checked by pid) or that the store's heartbeats declared dead. */
    public java.util.Set<Integer> deadRanks() {
        java.util.Set<Integer> dead = new java.util.TreeSet<>();
        if (watch != null) {
            dead.addAll(watch.deadMembers());
            dead.remove(rank);
        }
        for (int p = 0; p < size; p++) {
            if (p != rank && peerPids[p] != PID && !ProcessHandle.of(peerPids[p]).map(ProcessHandle::isAlive).orElse(false)) {
                dead.add(p);
            }
        }
        return dead;
    }

    /** Marks this rank failed/aborted in its segment so that every peer's waits end. */
    public void fail(long code, String reason) {
        fail(code, reason, -1);
    }

    /**
     * Marks this rank failed/aborted, blaming {@code culprit} (another rank that died or did not
     * arrive; -1 when this rank itself failed), so that every peer's waits end.
     */
    public void fail(long code, String reason, int culprit) {
        if (closed || (long) LONG.getAcquire(mine, ABORT_OFFSET) != ABORT_NONE) {
            return; // the first reason stands
        }
        byte[] b = reason.getBytes(StandardCharsets.UTF_8);
        int len = Math.min(b.length, REASON_BYTES - 4);
        MemorySegment.copy(b, 0, mine, ValueLayout.JAVA_BYTE, REASON_OFFSET + 4, len);
        mine.set(ValueLayout.JAVA_INT, REASON_OFFSET, len);
        mine.set(ValueLayout.JAVA_LONG, CULPRIT_OFFSET, culprit);
        LONG.setRelease(mine, ABORT_OFFSET, code);
    }

    /** Local abort: every wait of this rank ends; peers see it too. Any thread. */
    @Override
    public void abort(String reason) {
        localAbort = reason;
        fail(ABORT_ABORTED, "rank " + rank + ": " + reason);
    }

    /** The reason of a local abort, or null. */
    public String abortReason() {
        return localAbort;
    }

    @Override
    public org.jccl.host.engine.P2p newP2p(boolean isSend, org.jccl.HostBuffer b, int peer) {
        return new org.jccl.host.shm.algo.PointToPoint(this, isSend, b, peer);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if ((long) LONG.getAcquire(mine, ABORT_OFFSET) == ABORT_NONE) {
            LONG.setRelease(mine, ABORT_OFFSET, ABORT_CLOSED);
        }
        closed = true;
        regions.close();
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // unlinked during setup already
        }
        arena.close();
    }
}
