package org.jccl.host;

import java.time.Duration;
import org.jccl.AbortedException;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.bootstrap.Store;
import org.jccl.host.engine.EngineCommunicator;
import org.jccl.host.engine.OpCode;
import org.jccl.host.shm.ShmSegmentDescriptor;
import org.jccl.host.shm.ShmTransport;
import org.jccl.host.shm.algo.ChunkedAllGather;
import org.jccl.host.shm.algo.ChunkedAllToAll;
import org.jccl.host.shm.algo.ChunkedBroadcast;
import org.jccl.host.shm.algo.ChunkedReduce;
import org.jccl.host.shm.algo.ChunkedReduceScatter;
import org.jccl.host.shm.algo.OneShotAllReduce;
import org.jccl.host.shm.algo.ReduceScatterAllGather;
import org.jccl.host.shm.algo.ShmBarrier;
import org.jccl.host.shm.algo.ZeroCopyAllGather;
import org.jccl.host.shm.algo.ZeroCopyAllReduce;
import org.jccl.host.shm.algo.ZeroCopyAllToAll;
import org.jccl.host.shm.algo.ZeroCopyBroadcast;
import org.jccl.host.shm.algo.ZeroCopyReduce;
import org.jccl.host.shm.algo.ZeroCopyReduceScatter;
import org.jccl.host.tune.Tuner;

/**
 * The host engine over shared memory between the ranks of one host ({@link ShmTransport}): the
 * collectives and send/recv of {@link EngineCommunicator}, whose runtime it shares with the TCP and
 * hierarchical communicators. All-reduce one-shot or reduce-scatter + all-gather by size ({@link
 * Tuner}); broadcast, reduce, all-gather, reduce-scatter, all-to-all, gather and scatter chunked
 * through each rank's slots; send/recv through per-pair mailboxes.
 *
 * <p>Registered buffers ({@link #allocate}): a collective of at least {@code
 * JCCL_SHM_ZERO_COPY_BYTES} per rank first exchanges where every rank's buffers lie ({@code
 * shm.algo.ZeroCopy}); when every buffer the algorithm touches on a peer is registered, every rank
 * reads the peers' buffers in place ({@code shm.algo.ZeroCopy*}), else every rank takes the copy
 * path. Send/recv copy through the mailboxes; from {@code JCCL_SHM_SINGLE_COPY_BYTES} a send from
 * native memory is read by the receiver straight from the sender's buffer (one copy, {@code
 * process_vm_readv}, where the kernel lets the receiver read the sender: probed at creation).
 *
 * <p>After a failure (timeout, dead peer, mismatch, abort) the communicator is broken: later
 * calls fail at once with the original cause; create a new communicator to go on.
 */
public final class HostCommunicator extends EngineCommunicator<ShmTransport> {
    /** Default of JCCL_SHM_ZERO_COPY_BYTES. */
    static final long ZERO_COPY_BYTES = 256 << 10;

    private Tuner tuner;
    /** Smallest per-rank message that tries the zero-copy path (JCCL_SHM_ZERO_COPY_BYTES; MAX_VALUE: off). */
    private long zeroCopyBytes;

    HostCommunicator(String id, int rank, int size, Store store, ShmTransport t, Tuner tuner, Duration timeout,
                     org.jccl.spi.Liveness.Watch watch) {
        super(id, rank, size, timeout, t, store, watch);
        this.tuner = tuner;
        this.zeroCopyBytes = zeroCopyBytes();
        // JCCL_CHECK=1: no rank returns from a small rooted call before it checked every call
        t.eager(!org.jccl.internal.CheckSetting.enabled(System.getenv()));
    }

    /**
     * Default of JCCL_SHM_SINGLE_COPY_BYTES: from here a send/recv is read by the receiver straight
     * from the sender's buffer (process_vm_readv) instead of being copied through the mailbox twice.
     */
    static final long SINGLE_COPY_BYTES = 16 << 10;

    /** JCCL_SHM_SINGLE_COPY_BYTES: bytes >= 1, or off (Long.MAX_VALUE). */
    static long singleCopyBytes() {
        String v = org.jccl.internal.Settings.get("JCCL_SHM_SINGLE_COPY_BYTES");
        if (v != null && v.trim().equalsIgnoreCase("off")) {
            return Long.MAX_VALUE;
        }
        return envLong("JCCL_SHM_SINGLE_COPY_BYTES", SINGLE_COPY_BYTES, 1, Long.MAX_VALUE);
    }

    /** JCCL_SHM_ZERO_COPY_BYTES: bytes >= 1, or off. */
    static long zeroCopyBytes() {
        String v = org.jccl.internal.Settings.get("JCCL_SHM_ZERO_COPY_BYTES");
        if (v != null && v.trim().equalsIgnoreCase("off")) {
            return Long.MAX_VALUE;
        }
        return envLong("JCCL_SHM_ZERO_COPY_BYTES", ZERO_COPY_BYTES, 1, Long.MAX_VALUE);
    }

    /**
     * Sets the smallest per-rank message that tries the zero-copy path on registered buffers
     * (JCCL_SHM_ZERO_COPY_BYTES; {@code Long.MAX_VALUE}: never). Every rank must set the same. For
     * tests and tools.
     */
    public void zeroCopyBytes(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("bytes is " + bytes + ": give at least 1 (Long.MAX_VALUE: never)");
        }
        zeroCopyBytes = bytes;
    }

    /** Messages this rank received by one copy from the sender's buffer (JCCL_SHM_SINGLE_COPY_BYTES); for tests and tools. */
    public long singleCopyReceives() {
        return transport.singleCopies();
    }

    /**
     * Reads of peers' memory so far with process_vm_readv: the pieces of single-copy messages and the
     * blocks of collectives that read peers' unregistered send buffers; for tests and tools.
     */
    public long crossMemoryReads() {
        return transport.crossReads();
    }

    /** Registered memory in a shared-memory file of this communicator (see {@link org.jccl.Communicator#allocate}). */
    @Override
    protected HostBuffer allocateMemory(DataType type, long count) {
        return transport.regions().allocate(type, count);
    }

    @Override
    protected boolean registered(HostBuffer buffer) {
        return transport.regions().holds(buffer);
    }

    /**
     * Largest block (bytes) that all-gather, gather and all-to-all read from a peer's unregistered
     * send buffer with process_vm_readv; above it they copy through the slots, whose pipeline spreads
     * the copying over every rank's core. Scatter reads blocks of any size (its copy path is the
     * root's alone); broadcast never reads through this exchange (every rank reading the root's same
     * pages at once was 2-5x slower than the slots; between two ranks ChunkedBroadcast reads the root's
     * buffer itself). Measured on a 32-core host, 4 and 8 ranks: BENCHMARKS.md. Not between two ranks,
     * where the slots' pipeline has one other core to spread over: there reading blocks of any size
     * was 1.1-1.8x faster at 4-16 MiB (all-gather, gather, all-to-all; 16-core host, BENCHMARKS.md).
     */
    static final long READ_PEERS_MAX_BLOCK = 1 << 20;

    /**
     * Whether a collective that only copies blocks of {@code block} bytes may read peers' unregistered
     * native buffers: up to {@link #READ_PEERS_MAX_BLOCK}, or any size between two ranks.
     */
    private boolean readPeers(long block) {
        return block <= READ_PEERS_MAX_BLOCK || size() == 2;
    }

    /** True when a call of {@code bytes} per rank tries the zero-copy path (the same on every rank). */
    private boolean zeroCopy(long bytes) {
        return bytes >= zeroCopyBytes;
    }

    /** The largest all-reduce this communicator's tuner sends one-shot (the JIT warm-up warms both sides of it). */
    long oneShotMaxBytes() {
        return tuner.oneShotMaxBytes(size());
    }

    /** The health check a parked wait makes (the JIT warm-up's; see {@link ShmTransport#warmParkedCheck}). */
    void warmParkedCheck() {
        transport.warmParkedCheck();
    }

    /** Forces an all-reduce algorithm on this communicator (null: back to JCCL_ALGO / the tuner). For tests and tools. */
    public void forceAllReduceAlgorithm(Tuner.AllReduceAlgo algo) {
        tuner = algo == null ? Tuner.fromEnv() : new Tuner(algo.name(), 0);
    }

    // ------------------------------------------------------------------ the collectives (two ranks or more)

    @Override
    protected void doAllReduce(HostBuffer s, HostBuffer r, ReduceOp op) {
        if (zeroCopy(s.byteSize()) && ZeroCopyAllReduce.tryRun(transport, s, r, op, true)) {
            return;
        }
        if (tuner.allReduce(s.byteSize(), size()) == Tuner.AllReduceAlgo.ONESHOT) {
            OneShotAllReduce.run(transport, s, r, op);
        } else {
            ReduceScatterAllGather.run(transport, s, r, op);
        }
    }

    @Override
    protected void doBroadcast(HostBuffer s, HostBuffer r, int root) {
        if (zeroCopy(r.byteSize()) && ZeroCopyBroadcast.tryRun(transport, s, r, root, true, false)) {
            return;
        }
        ChunkedBroadcast.run(transport, s, r, root);
    }

    @Override
    protected void doReduce(HostBuffer s, HostBuffer r, ReduceOp op, int root) {
        if (zeroCopy(s.byteSize()) && ZeroCopyReduce.tryRun(transport, s, r, op, root, true)) {
            return;
        }
        if (tuner.reduceOneShot(s.byteSize(), size())) {
            OneShotAllReduce.run(transport, s, r, op, root);
        } else {
            ChunkedReduce.run(transport, s, r, op, root);
        }
    }

    @Override
    protected void doAllGather(HostBuffer s, HostBuffer r) {
        if (zeroCopy(s.byteSize()) && ZeroCopyAllGather.tryRun(transport, s, r, -1, true, readPeers(s.byteSize()))) {
            return;
        }
        ChunkedAllGather.run(transport, s, r, -1);
    }

    @Override
    protected void doGather(HostBuffer s, HostBuffer r, int root) {
        if (zeroCopy(s.byteSize()) && ZeroCopyAllGather.tryRun(transport, s, r, root, true, readPeers(s.byteSize()))) {
            return;
        }
        ChunkedAllGather.run(transport, s, r, root);
    }

    @Override
    protected void doReduceScatter(HostBuffer s, HostBuffer r, ReduceOp op) {
        if (zeroCopy(r.byteSize()) && ZeroCopyReduceScatter.tryRun(transport, s, r, op, true)) {
            return;
        }
        ChunkedReduceScatter.run(transport, s, r, op);
    }

    @Override
    protected void doAllToAll(HostBuffer s, HostBuffer r) {
        if (zeroCopy(s.byteSize() / size()) && ZeroCopyAllToAll.tryRun(transport, s, r, s.count() / size(), -1, true,
                readPeers(s.byteSize() / size()))) {
            return;
        }
        ChunkedAllToAll.run(transport, s, r, s.count() / size(), -1);
    }

    @Override
    protected void doScatter(HostBuffer s, HostBuffer r, int root) {
        if (zeroCopy(r.byteSize()) && ZeroCopyAllToAll.tryRun(transport, s, r, r.count(), root, true, true)) {
            return;
        }
        ChunkedAllToAll.run(transport, s, r, r.count(), root);
    }

    @Override
    protected void doBarrier() {
        ShmBarrier.run(transport);
    }

    // ------------------------------------------------------------------ the transport's hooks

    @Override
    protected void beginCall(long seq, int opcode, DataType type, ReduceOp op, int root, long count, long timeoutNanos) {
        transport.beginCollective(seq, opcode, type, op, root, count, timeoutNanos);
    }

    @Override
    protected void beginP2p(int op, HostBuffer b, int peer, long timeoutNanos) {
        if (b == null) {
            transport.call.set(0, op, 0, OpCode.NO_REDOP, -1, 0, timeoutNanos);
        } else {
            transport.call.set(0, op, b.type().ordinal(), OpCode.NO_REDOP, peer, b.count(), timeoutNanos);
        }
    }

    @Override
    protected void idleP2p(int iteration, int peer) {
        transport.idleP2p(iteration, peer);
    }

    @Override
    protected void touchP2pBatch() {
        transport.call.set(0, OpCode.SEND, 0, OpCode.NO_REDOP, -1, 0, callNanos);
    }

    /**
     * A mismatch or an abort is relayed as what it is, so that a rank that hears of it from this
     * one (and not from the rank that saw it first) fails with the same kind of error.
     */
    @Override
    protected void propagate(JcclException e, int culprit) {
        long code = e instanceof org.jccl.CollectiveMismatchException ? ShmTransport.ABORT_MISMATCH
                : e instanceof AbortedException ? ShmTransport.ABORT_ABORTED : ShmTransport.ABORT_FAILED;
        transport.fail(code, e.getMessage(), culprit);
    }

    /** The pair's mailbox is one stream: its messages move one after the other. */
    @Override
    protected boolean p2pInPostingOrder() {
        return true;
    }

    /** Publishing the failure word is safe while a call waits on another thread. */
    @Override
    protected boolean propagatesFromAnyThread() {
        return true;
    }

    @Override
    protected Communicator createSub(String subId, int[] members, int newRank, Store sub) {
        return HostBackend.create(subId, newRank, members.length, members.length, sub, timeout(), watch.sub(members));
    }

    /** Peers whose process is gone (the pid each rank published). */
    @Override
    protected java.util.Set<Integer> transportDeadRanks() {
        return transport.deadRanks();
    }

    @Override
    public String toString() {
        return "HostCommunicator[" + id + ", rank " + rank() + " of " + size() + "]";
    }

    /** Segment geometry used by new communicators (JCCL_SHM_SLOT_BYTES, JCCL_SHM_SLOTS). */
    static ShmSegmentDescriptor.Geometry geometry(int size) {
        long slot = envLong("JCCL_SHM_SLOT_BYTES", 256 << 10, 4096, 1L << 30);
        slot = (slot + 4095) / 4096 * 4096;
        int k = (int) envLong("JCCL_SHM_SLOTS", 4, 2, 64);
        return new ShmSegmentDescriptor.Geometry(size, k, slot, 4, 64 << 10);
    }

    static long envLong(String name, long dflt, long min, long max) {
        String v = org.jccl.internal.Settings.get(name);
        if (v == null || v.isBlank()) {
            return dflt;
        }
        try {
            long x = Long.parseLong(v.trim());
            if (x < min || x > max) {
                throw new NumberFormatException();
            }
            return x;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + "=" + v + " is invalid: give an integer in [" + min + ", " + max + "]");
        }
    }
}
