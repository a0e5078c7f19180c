package org.jccl.host.tcp;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import org.jccl.AbortedException;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.bootstrap.Store;
import org.jccl.host.engine.OpCode;
import org.jccl.host.engine.Transport;
import org.jccl.internal.Log;
import org.jccl.internal.SegmentArrays;
import org.jccl.spi.TimedIdleStrategy;

/**
 * The TCP transport of one communicator: non-blocking {@link SocketChannel}s to the peers
 * (TCP_NODELAY), {@code JCCL_SOCKETS_PER_PEER} sockets per peer for collectives plus one for
 * send/recv (so point-to-point traffic never queues behind a collective), set up through the
 * store: each rank publishes its listen address, the higher rank of each pair connects and proves
 * the job token ({@link Handshake}).
 *
 * <p>Messages are posted ({@link #send}, {@link #recv}) and complete as the calling thread
 * progresses the sockets ({@link #await}); a message is cut into frames ({@link Frame}) of at
 * most {@code JCCL_TCP_CHUNK_BYTES}, spread round-robin over the peer's sockets, and matched in
 * order per peer and direction. Every frame header carries the communicator id, the collective's
 * sequence number and fingerprint: the receiver checks them and a difference is a {@link
 * CollectiveMismatchException}.
 *
 * <p>Every wait polls for {@code JCCL_TCP_SPIN_US} after the last byte moved (yielding the core
 * between polls after 20 microseconds), large transfers included, then sleeps in a selector that
 * also watches
 * every other socket, so a peer's ABORT frame, a closed or reset connection ({@link
 * PeerFailureException} naming the rank) and {@link #abort} end it at once; the call's deadline
 * ({@link CollectiveTimeoutException} naming the ranks that did not send) ends it at the latest.
 * When this rank fails it sends an ABORT frame with the reason on every socket it can and closes
 * them, so its peers stop waiting too.
 *
 * <p>Not thread-safe, except {@link #abort}: the communicator serialises calls.
 *
 * <p>This class keeps the path of a message (posting, progress, waits); the setup is in {@code
 * TcpMesh} and {@code TcpAcceptor}, the failure paths (ABORT frames, broken connections,
 * mismatches) in {@code TcpFailures}.
 */
public final class TcpTransport implements Transport {
    static final Log LOG = Log.get(TcpTransport.class);
    /** Marks a connection the selector found ready (no allocation: it captures nothing). */
    private static final Consumer<SelectionKey> MARK = k -> ((TcpConnection) k.attachment()).ready = true;
    /** Handshakes the listener runs at once during setup; one more closes the oldest. */
    static final int ACCEPT_MAX_PENDING = 64;
    /** Polls of a wait yield the core after this long. */
    private static final long YIELD_AFTER_NANOS = 20_000;

    private final String name;
    private final long commId;
    private final int rank;
    private final int size;
    private final TcpConfig cfg;
    private final int chunk;
    private final long spinNanos;
    private final TcpConnection[][] coll;
    private final TcpConnection[] p2p;
    private final Selector selector;
    private final Arena arena = Arena.ofShared();
    private final long[] collSendFrames;
    private final long[] collRecvFrames;
    private TcpOp[] ops = new TcpOp[0];
    private int[] free = new int[0];
    private int freeTop;
    private final long[] sendMessages;
    private final long[] recvMessages;
    private MemorySegment[] scratch = new MemorySegment[0];

    /** Reused by the algorithms: one entry per rank, no allocation per call. */
    public final MemorySegment[] srcs;
    /** Reused by the algorithms: one offset per rank. */
    public final long[] srcOffsets;

    /** The call in progress (header fingerprint, deadline). Set by the communicator per call. */
    public final TcpCall call = new TcpCall();

    private volatile String localAbort;
    private boolean failed;
    private boolean closed;
    /** Deaths the store's heartbeats report, in this transport's ranks (set once, before use). */
    org.jccl.spi.Liveness.Watch watch;
    private final int localRanks;

    @Override
    public int localRanks() {
        return localRanks;
    }

    TcpTransport(String name, long commId, int rank, int size, TcpConfig cfg, TcpConnection[][] coll,
                         TcpConnection[] p2p, Selector selector, int localRanks) {
        this.spinNanos = cfg.spinNanos(localRanks);
        this.localRanks = localRanks;
        this.poll = new TimedIdleStrategy(Math.min(YIELD_AFTER_NANOS, spinNanos), spinNanos, 1);
        this.name = name;
        this.commId = commId;
        this.rank = rank;
        this.size = size;
        this.cfg = cfg;
        this.chunk = cfg.chunkBytes();
        this.coll = coll;
        this.p2p = p2p;
        this.selector = selector;
        this.srcs = new MemorySegment[size];
        this.srcOffsets = new long[size];
        this.collSendFrames = new long[size];
        this.collRecvFrames = new long[size];
        this.sendMessages = new long[size];
        this.recvMessages = new long[size];
    }

    // ------------------------------------------------------------------ setup

    /**
     * Collective: connects this rank to its peers through {@code store}.
     *
     * @param name      the communicator's name (for messages and thread names)
     * @param storeHost host of the store, to choose the interface by route (null: first interface)
     * @param token     the job token every connection proves, or null
     * @param collPeer  peers this rank runs collectives with (must be symmetric; never itself)
     * @param p2pPeer   peers this rank may send to / receive from (symmetric; may include itself)
     * @param localRanks ranks of the job on this host (they share its cores: the polling time)
     */
    public static TcpTransport open(String name, int rank, int size, Store store, Duration timeout, String token,
                                    TcpConfig cfg, String storeHost, IntPredicate collPeer, IntPredicate p2pPeer,
                                    int localRanks) {
        return TcpMesh.open(name, rank, size, store, timeout, token, cfg, storeHost, collPeer, p2pPeer, localRanks);
    }

    /** Wraps a connected channel (and its read side) in a connection on this transport's selector ({@link TcpMesh}). */
    TcpConnection register(SocketChannel ch, SocketChannel rch, int peer, int index, int sockets) throws IOException {
        ch.configureBlocking(false);
        TcpConnection c = new TcpConnection(this, ch, rch, peer, index, sockets, cfg.bufferBytes());
        c.key = ch.register(selector, 0, c);
        if (rch != ch) {
            rch.configureBlocking(false);
            c.rkey = rch.register(selector, 0, c);
        }
        return c;
    }

    /** Fills {@link #allRef} after the connections exist (the constructor saw empty arrays). */
    void rebuild() {
        List<TcpConnection> list = new ArrayList<>();
        for (TcpConnection[] cs : coll) {
            if (cs != null) {
                list.addAll(List.of(cs));
            }
        }
        for (TcpConnection c : p2p) {
            if (c != null) {
                list.add(c);
            }
        }
        allRef = list.toArray(new TcpConnection[0]);
    }

    /** Every connection, collective and send/recv: what progress, waits and failures go over. */
    TcpConnection[] allRef = new TcpConnection[0];

    static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing: nothing to report
            }
        }
    }

    // ------------------------------------------------------------------ accessors

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** Ranks. */
    public int size() {
        return size;
    }

    /** The communicator's name. */
    public String name() {
        return name;
    }

    /** Largest frame payload: the pipelining unit of the algorithms. */
    public int chunkBytes() {
        return chunk;
    }

    /** Sockets per peer for collectives. */
    public int socketsPerPeer() {
        return cfg.socketsPerPeer();
    }

    /** JCCL_CHECK: algorithms add the checks that cost a round trip ({@link TcpConfig#check()}). */
    public boolean checkCalls() {
        return cfg.check();
    }

    long commId() {
        return commId;
    }

    Arena arena() {
        return arena;
    }

    /**
     * Scratch memory {@code slot} of at least {@code bytes} bytes, kept and reused by later calls
     * (it grows only; memory of a transport is reclaimed with it).
     */
    public MemorySegment scratch(int slot, long bytes) {
        if (slot >= scratch.length) {
            scratch = java.util.Arrays.copyOf(scratch, slot + 1);
        }
        MemorySegment s = scratch[slot];
        if (s == null || s.byteSize() < bytes) {
            s = Arena.ofAuto().allocate(Math.max(bytes, 64), 64);
            scratch[slot] = s;
        }
        return s;
    }

    private static final int VIEWS = 8;
    private final MemorySegment[] viewSegs = new MemorySegment[VIEWS];
    private final long[] viewStart = new long[VIEWS];
    private final long[] viewEnd = new long[VIEWS];
    private final ByteBuffer[] views = new ByteBuffer[VIEWS];
    private int viewNext;

    /**
     * Sets {@code op.view} to a ByteBuffer over native memory that contains the whole of {@code
     * seg}, and {@code op.viewAt} to the position of {@code seg}'s first byte in it, for reading
     * and writing large payloads in place; null for heap segments and segments over 2 GiB (those go
     * through the staging buffers). Once per message, not per frame. Views are kept for the last 8
     * segments and found by address range, not identity: a slice of a buffer seen before (another
     * size, in place, a part) reuses its view, so a caller allocates nothing per call and a new
     * slice takes no path the JIT has not seen. A view is reused only while its segment is alive
     * and accessible by this thread.
     */
    private void resolveView(TcpOp op, MemorySegment seg) {
        long a = seg.address();
        long e = a + seg.byteSize();
        Thread me = Thread.currentThread();
        for (int i = 0; i < VIEWS; i++) {
            MemorySegment v = viewSegs[i];
            if (v != null && viewStart[i] <= a && e <= viewEnd[i] && v.scope().isAlive() && v.isAccessibleBy(me)) {
                op.view = views[i];
                op.viewAt = a - viewStart[i];
                return;
            }
        }
        newView(op, seg);
    }

    private void newView(TcpOp op, MemorySegment seg) {
        op.viewAt = 0;
        if (!seg.isNative() || seg.byteSize() > Integer.MAX_VALUE) {
            op.view = null;
            return;
        }
        ByteBuffer b = seg.asByteBuffer();
        int i = viewNext;
        viewNext = (viewNext + 1) % VIEWS;
        SegmentArrays.set(viewSegs, i, seg);
        viewStart[i] = seg.address();
        viewEnd[i] = seg.address() + seg.byteSize();
        SegmentArrays.set(views, i, b);
        op.view = b;
    }

    // ------------------------------------------------------------------ posting

    private TcpOp acquire() {
        if (freeTop == 0) {
            int n = ops.length;
            int m = Math.max(16, n * 2);
            ops = java.util.Arrays.copyOf(ops, m);
            free = java.util.Arrays.copyOf(free, m);
            for (int i = m - 1; i >= n; i--) {
                ops[i] = new TcpOp(i);
                free[freeTop++] = i;
            }
        }
        TcpOp op = ops[free[--freeTop]];
        op.inUse = true;
        return op;
    }

    /** Releases a completed operation's slot. */
    public void release(int id) {
        TcpOp op = ops[id];
        if (op.inUse) {
            op.inUse = false;
            op.seg = null;
            op.view = null;
            free[freeTop++] = id;
        }
    }

    /**
     * Posts a send of {@code bytes} bytes of {@code seg} at {@code off} to {@code peer} within the
     * current collective ({@link #call}); {@code tag} names the algorithm's step. The bytes must
     * stay unchanged until the send completes. Returns the operation's id.
     */
    public int send(int peer, MemorySegment seg, long off, long bytes, long tag) {
        return post(true, false, peer, seg, off, bytes, tag, call.seq, call.packed(), call.count, call.prev);
    }

    /** Posts a receive into {@code seg} at {@code off}, matching the peer's send of the same step. */
    public int recv(int peer, MemorySegment seg, long off, long bytes, long tag) {
        return post(false, false, peer, seg, off, bytes, tag, call.seq, call.packed(), call.count, call.prev);
    }

    /** Posts a point-to-point send (matched in order per pair; its header carries the type and count). */
    public int sendP2p(int peer, MemorySegment seg, long off, long bytes, DataType type, long count) {
        long no = ++sendMessages[peer];
        return post(true, true, peer, seg, off, bytes, 0, no, TcpCall.pack(OpCode.SEND, type.ordinal(), OpCode.NO_REDOP, -1), count, 0);
    }

    /** Posts a point-to-point receive. */
    public int recvP2p(int peer, MemorySegment seg, long off, long bytes, DataType type, long count) {
        long no = ++recvMessages[peer];
        return post(false, true, peer, seg, off, bytes, 0, no, TcpCall.pack(OpCode.SEND, type.ordinal(), OpCode.NO_REDOP, -1), count, 0);
    }

    private int post(boolean send, boolean isP2p, int peer, MemorySegment seg, long off, long bytes, long tag, long seq,
                     long packed, long count, long prev) {
        TcpConnection[] cs;
        if (isP2p) {
            TcpConnection c = p2p[peer];
            if (c == null) {
                throw new IllegalStateException("rank " + rank + " has no send/recv connection to rank " + peer);
            }
            cs = null;
        } else {
            cs = coll[peer];
            if (cs == null) {
                throw new IllegalStateException("rank " + rank + " has no collective connection to rank " + peer);
            }
        }
        TcpOp op = acquire();
        op.send = send;
        op.p2p = isP2p;
        op.peer = peer;
        op.seg = seg;
        op.off = off;
        op.bytes = bytes;
        op.seq = seq;
        op.call = packed;
        op.count = count;
        op.prev = prev;
        op.tag = tag;
        op.frames = (int) Math.max(1, (bytes + chunk - 1) / chunk); // an empty message is one empty frame
        if (bytes >= TcpConnection.DIRECT_MIN_BYTES) {
            resolveView(op, seg);
        } else {
            op.view = null;
        }
        op.framesLeft = op.frames;
        incomplete++;
        if (isP2p) {
            op.base = 0;
            op.sockets = 1;
            enqueue(p2p[peer], op);
        } else {
            int k = cs.length;
            long[] counter = send ? collSendFrames : collRecvFrames;
            op.base = counter[peer];
            op.sockets = k;
            counter[peer] += op.frames;
            for (int i = 0; i < k; i++) {
                if (op.firstFrameOn(i) < op.frames) {
                    enqueue(cs[i], op);
                }
            }
        }
        return op.id;
    }

    private static void enqueue(TcpConnection c, TcpOp op) {
        if (op.send) {
            c.sendQ.add(op);
        } else {
            c.recvQ.add(op);
        }
    }

    /** True when the operation completed (a send's bytes reached the kernel; a receive's arrived). */
    public boolean isDone(int id) {
        return ops[id].framesLeft == 0;
    }

    // ------------------------------------------------------------------ progress and waiting

    /** Progresses until operation {@code id} completes, then releases it. */
    public void await(int id) {
        TcpOp op = ops[id];
        int i = 0;
        while (op.framesLeft > 0) {
            if (progress(false)) {
                i = 0;
            } else {
                idle(i++);
            }
        }
        release(id);
    }

    /** Progresses until every posted operation completed, and releases them all. */
    public void awaitAll() {
        int i = 0;
        while (pendingOps() > 0) {
            if (progress(false)) {
                i = 0;
            } else {
                idle(i++);
            }
        }
        for (TcpOp op : ops) {
            if (op.inUse) {
                release(op.id);
            }
        }
    }

    private int pendingOps() {
        return incomplete;
    }

    /** A frame of {@code op} completed (flushed, or received). */
    void frameDone(TcpOp op) {
        if (--op.framesLeft == 0) {
            incomplete--;
        }
    }

    private int incomplete;
    private int[] idsA = new int[64];
    private long[] longsA = new long[64];

    /** A reusable array of at least {@code n} longs for an algorithm's bookkeeping. */
    public long[] longs(int n) {
        if (longsA.length < n) {
            longsA = new long[n];
        }
        return longsA;
    }

    /** Two input segments for a two-input {@code Reductions.reduce}, reused (the calling thread's). */
    public MemorySegment[] pairSources() {
        return pairSrcs;
    }

    /** Their byte offsets, reused as {@link #pairSources()}. */
    public long[] pairOffsets() {
        return pairOffs;
    }

    private final MemorySegment[] pairSrcs = new MemorySegment[2];
    private final long[] pairOffs = new long[2];

    /** A reusable array of at least {@code n} ints for an algorithm's operation ids. */
    public int[] ids(int n) {
        if (idsA.length < n) {
            idsA = new int[n];
        }
        return idsA;
    }

    /**
     * One pass over the sockets with work: appends, writes, reads and parses what can move now.
     *
     * @param any also read sockets with no receive posted (to notice failures while idle)
     * @return true when any byte moved
     */
    public boolean progress(boolean any) {
        boolean moved = false;
        TcpConnection[] cs = allRef;
        for (TcpConnection c : cs) {
            try {
                if (c.sendPending()) {
                    moved |= c.progressSend();
                }
                if (c.recvPending() || any && c.ready) {
                    c.ready = false;
                    moved |= c.progressRecv(any);
                }
            } catch (IOException e) {
                c.ioError = e;
            }
            if (c.abortCode != 0 || c.eof || c.ioError != null) {
                checkConnection(c);
            }
        }
        return moved;
    }

    /** Throws when {@code c}'s peer aborted, failed, or closed while this rank needs its data. */
    private void checkConnection(TcpConnection c) {
        if (c.abortCode != 0) {
            throw TcpFailures.peerAbort(this, c.peer, c.abortCode, c.abortReason, c.abortCulprit);
        }
        if (c.ioError != null || (c.eof && (!c.peerClosed || c.recvPending() || c.sendPending()))) {
            if (c.peerClosed) {
                throw new PeerFailureException(c.peer, "rank " + c.peer + " of communicator " + name
                        + " closed the communicator while rank " + rank + " was in " + call.describe()
                        + ": all ranks must run the same collectives before close()");
            }
            throw TcpFailures.broken(this, c);
        }
    }

    /**
     * Idles once in a wait ({@code iteration} counts the waits without progress): polls for the
     * spin time, then sleeps in the selector; checks abort, peers and the deadline.
     */
    public void idle(int iteration) {
        if (iteration == 0) {
            poll.idle(0);
            checkAbort();
            return;
        }
        long now = System.nanoTime();
        if ((iteration & 15) == 0) {
            checkAbort();
            checkDeadline(now);
        }
        long idleFor = poll.waited();
        // Poll also while a large transfer is in flight (as Open MPI does): a rank that sleeps in
        // the selector is woken by the softirq of the peer's send, on the peer's core, and the
        // scheduler tends to run it there (wake-affine), so on few cores the two ranks end up
        // taking turns on one core (measured on 2 cores over veth: 128 KiB-32 MiB all-reduce
        // up to 1.3x slower, bimodal from run to run). A rank whose core is shared polls only for
        // the short spin time (see TcpConfig) and then sleeps.
        if (idleFor < spinNanos) {
            // Poll with PAUSE first; then yield between polls, so that a peer rank or the JIT
            // waiting for this core gets it (a pure spin would hold it for the whole poll time).
            poll.idle(iteration);
            return;
        }
        checkAbort();
        checkDeadline(now);
        try {
            for (TcpConnection c : allRef) {
                c.updateInterest(true);
            }
            long ms = Math.max(1, Math.min(100, (call.deadline - now) / 1_000_000 + 1));
            selector.select(MARK, ms);
        } catch (IOException e) {
            throw new JcclException("rank " + rank + ": waiting on the sockets of communicator " + name + " failed: " + e, e);
        }
        progress(true);
    }

    /** The polling part of a wait: PAUSE for {@link #YIELD_AFTER_NANOS}, then yields until the spin time. */
    private final TimedIdleStrategy poll;

    /**
     * Makes every wait also end, with a {@link PeerFailureException} naming the rank, when the
     * store's heartbeats declare a peer dead (checked with the abort checks of a wait: one volatile
     * read). Set before the first call.
     */
    @Override
    public void watch(org.jccl.spi.Liveness.Watch w) {
        this.watch = w;
    }

    private void checkAbort() {
        String a = localAbort;
        if (a != null) {
            throw new AbortedException("communicator " + name + " aborted on rank " + rank + " during " + call.describe() + ": " + a);
        }
        org.jccl.spi.Liveness.Watch w = watch;
        if (w != null) {
            int d = w.firstDead();
            if (d >= 0 && d != rank) {
                throw w.failure(d, call.describe() + " on rank " + rank + " of communicator " + name);
            }
        }
        if (closed || failed) {
            throw new AbortedException("communicator " + name + " is closed or failed on rank " + rank);
        }
        if (Thread.currentThread().isInterrupted()) {
            throw new AbortedException("rank " + rank + ": interrupted during " + call.describe());
        }
    }

    private void checkDeadline(long now) {
        if (now - call.deadline <= 0) {
            return;
        }
        List<Integer> missing = new ArrayList<>();
        for (TcpConnection c : allRef) {
            if (c.recvPending() && !missing.contains(c.peer)) {
                missing.add(c.peer);
            }
        }
        String what = "send its data";
        if (missing.isEmpty()) {
            for (TcpConnection c : allRef) {
                if (c.sendPending() && !missing.contains(c.peer)) {
                    missing.add(c.peer);
                }
            }
            what = "take the data this rank sends";
        }
        if (LOG.traceEnabled()) {
            for (TcpConnection c : allRef) {
                LOG.trace(rank, c::state);
            }
        }
        throw new CollectiveTimeoutException(call.describe() + " timed out after " + Duration.ofNanos(call.timeoutNanos)
                + " on rank " + rank + " of communicator " + name + ": waiting for rank(s) " + missing + " to " + what
                + " (a rank is stuck, dead, unreachable or called a different collective; raise JCCL_TIMEOUT if it is just slow)"
                + (watch == null ? "" : watch.silentNote(missing)), missing);
    }

    // ------------------------------------------------------------------ failure, abort, close

    /**
     * Marks this rank failed: tells every peer with an ABORT frame (a socket in the middle of a
     * data frame finishes it first), shuts the output down, discards what the peers still send
     * until they close (so that no reset destroys the ABORT frame in flight), then closes the
     * sockets: peers see the ABORT, or the closed connection, and stop waiting. Bounded: at most
     * 200 ms to write, 150 ms to drain ({@code TcpFailures.abortPeers}). The first reason stands;
     * later calls do nothing.
     */
    public void fail(long code, String reason) {
        fail(code, reason, -1);
    }

    /**
     * {@link #fail(long, String)} blaming {@code culprit}: another rank (of this transport) that
     * died or did not arrive, whose peers then name it rather than this rank; -1 when this rank
     * itself failed.
     */
    public void fail(long code, String reason, int culprit) {
        if (failed || closed) {
            return;
        }
        failed = true;
        TcpFailures.abortPeers(allRef, code, reason, culprit);
        closeQuietly(selector);
    }

    private void flushAll(long nanos) {
        long end = System.nanoTime() + nanos;
        while (true) {
            boolean all = true;
            for (TcpConnection c : allRef) {
                if (c.unflushed() && c.ch.isOpen() && !c.sendBroken) {
                    all &= c.tryFlush() || c.sendBroken;
                }
            }
            if (all || System.nanoTime() - end > 0) {
                return;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(200_000);
        }
    }

    /** Ends every wait of this rank with an {@link AbortedException}; callable from any thread. */
    @Override
    public void abort(String reason) {
        localAbort = reason;
        try {
            selector.wakeup();
        } catch (RuntimeException ignored) {
            // closed meanwhile
        }
    }

    /** The reason of a local abort, or null. */
    public String abortReason() {
        return localAbort;
    }

    /** True once {@link #fail} ran. */
    public boolean isFailed() {
        return failed;
    }

    @Override
    public org.jccl.host.engine.P2p newP2p(boolean isSend, org.jccl.HostBuffer b, int peer) {
        return new org.jccl.host.tcp.algo.PointToPoint(this, isSend, b, peer);
    }

    /** Tells the peers this rank closes (CLOSE frames), then closes every socket. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (!failed) {
            for (TcpConnection c : allRef) {
                c.appendClose();
            }
            flushAll(100_000_000L);
        }
        closed = true;
        for (TcpConnection c : allRef) {
            c.close();
        }
        closeQuietly(selector);
        java.util.Arrays.fill(viewSegs, null);
        java.util.Arrays.fill(views, null);
        arena.close();
    }

    @Override
    public String toString() {
        return "TcpTransport[" + name + ", rank " + rank + " of " + size + ", " + allRef.length + " sockets]";
    }
}
