package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.bootstrap.Store;
import org.jccl.host.engine.EngineCommunicator;
import org.jccl.host.engine.OpCode;
import org.jccl.host.tcp.algo.Barrier;
import org.jccl.host.tcp.algo.ChainBroadcast;
import org.jccl.host.tcp.algo.ChainReduce;
import org.jccl.host.tcp.algo.DirectAllGather;
import org.jccl.host.tcp.algo.DirectGather;
import org.jccl.host.tcp.algo.DirectReduce;
import org.jccl.host.tcp.algo.DirectReduceScatter;
import org.jccl.host.tcp.algo.DirectScatter;
import org.jccl.host.tcp.algo.OneShotAllReduce;
import org.jccl.host.tcp.algo.PairwiseAllToAll;
import org.jccl.host.tcp.algo.RhdAllReduce;
import org.jccl.host.tcp.algo.RingAllGather;
import org.jccl.host.tcp.algo.RingAllReduce;
import org.jccl.host.tcp.algo.RingReduceScatter;
import org.jccl.host.tcp.algo.TreeBroadcast;
import org.jccl.host.tune.Tuner;
import org.jccl.spi.Liveness;

/**
 * The host engine with every pair of ranks connected over TCP ({@link TcpTransport}): what ranks
 * on different hosts use when each host has one rank, what the leaders of a {@link
 * org.jccl.host.hier.HierarchicalCommunicator} use among themselves, and what {@code JCCL_TRANSPORT=tcp} gives on any
 * placement. Every collective of the API, send/recv (also to itself) and split.
 *
 * <p>Algorithms by size (thresholds in the javadoc of each choice below): all-reduce one-shot,
 * recursive halving-doubling or pipelined ring ({@link Tuner#tcpAllReduce}); broadcast a binomial
 * tree or a pipelined chain; reduce direct to the root or a pipelined chain; all-gather direct or
 * ring; reduce-scatter direct or ring; gather, scatter, all-to-all direct; barrier by
 * dissemination.
 *
 * <p>Like the shared-memory communicator: blocking calls run on the caller's thread without
 * allocating after warm-up; async calls run in order on a worker thread; after a failure the
 * communicator is broken and later calls fail with the original cause.
 */
public final class TcpCommunicator extends EngineCommunicator<TcpTransport> {
    /** Largest message broadcast through the binomial tree (larger: the pipelined chain). */
    static final long TREE_BCAST_MAX_BYTES = 256 << 10;
    /** Largest message reduced directly at the root (larger: the pipelined chain). */
    static final long DIRECT_REDUCE_MAX_BYTES = 64 << 10;
    /** Largest all-gather result gathered directly (larger: the ring). */
    static final long DIRECT_ALLGATHER_MAX_BYTES = 256 << 10;
    /** Largest reduce-scatter input scattered directly (larger: the ring). */
    static final long DIRECT_RS_MAX_BYTES = 64 << 10;

    private final String token;
    private final TcpConfig cfg;
    private final String storeHost;
    private final String[] hostOf;
    private final int hosts;
    private Tuner tuner;
    private final Staging staging = new Staging();

    private TcpCommunicator(String id, int rank, int size, Duration timeout, TcpTransport t, Store store, String token,
                            TcpConfig cfg, String storeHost, String[] hostOf, Tuner tuner, Liveness.Watch watch) {
        super(id, rank, size, timeout, t, store, watch);
        this.token = token;
        this.cfg = cfg;
        this.storeHost = storeHost;
        this.hostOf = hostOf;
        Set<String> distinct = new HashSet<>(java.util.Arrays.asList(hostOf));
        this.hosts = distinct.size();
        this.tuner = tuner;
    }

    /**
     * Collective: connects the {@code size} ranks through {@code store} (which the communicator
     * closes when it closes).
     *
     * @param id        the communicator's id (names threads; unique per job)
     * @param token     the job token every connection proves, or null
     * @param storeHost the store's host, to choose the interface by route
     * @param hostOf    host id of every rank (the tuner counts hosts); null: all distinct
     */
    public static TcpCommunicator create(String id, int rank, int size, Store store, Duration timeout, String token,
                                         TcpConfig cfg, String storeHost, String[] hostOf) {
        return create(id, rank, size, store, timeout, token, cfg, storeHost, hostOf, 0);
    }

    /**
     * As {@link #create(String, int, int, Store, Duration, String, TcpConfig, String, String[])},
     * telling how many ranks of the job share this host ({@code localRanks}, 0: those of {@code
     * hostOf}) for the polling time of waits.
     */
    public static TcpCommunicator create(String id, int rank, int size, Store store, Duration timeout, String token,
                                         TcpConfig cfg, String storeHost, String[] hostOf, int localRanks) {
        return create(id, rank, size, store, timeout, token, cfg, storeHost, hostOf, localRanks, null);
    }

    /**
     * As {@link #create(String, int, int, Store, Duration, String, TcpConfig, String, String[], int)},
     * the waits also ending with a {@link org.jccl.PeerFailureException} when {@code watch} (null:
     * none) reports a member dead.
     */
    public static TcpCommunicator create(String id, int rank, int size, Store store, Duration timeout, String token,
                                         TcpConfig cfg, String storeHost, String[] hostOf, int localRanks,
                                         Liveness.Watch watch) {
        String[] h = hostOf;
        if (h == null) {
            h = new String[size];
            for (int i = 0; i < size; i++) {
                h[i] = "rank" + i;
            }
        }
        int local = 0;
        for (String x : h) {
            local += x.equals(h[rank]) ? 1 : 0;
        }
        TcpTransport t = TcpTransport.open(id, rank, size, store, timeout, token, cfg, storeHost, p -> p != rank, p -> true,
                localRanks > 0 ? localRanks : local);
        return new TcpCommunicator(id, rank, size, timeout, t, store, token, cfg, storeHost, h, Tuner.fromEnv(),
                watch != null ? watch : Liveness.NONE.watch(size));
    }

    /** Forces an all-reduce algorithm (null: back to JCCL_ALGO / the tuner). For tests and tools. */
    public void forceAllReduceAlgorithm(Tuner.AllReduceAlgo algo) {
        tuner = algo == null ? Tuner.fromEnv() : new Tuner(algo.name(), 0);
    }

    /** The algorithm an all-reduce of {@code bytes} bytes runs with now. */
    public Tuner.AllReduceAlgo allReduceAlgorithm(long bytes) {
        return tuner.tcpAllReduce(bytes, size(), hosts);
    }

    @Override
    protected void beginCall(long seq, int opcode, DataType type, ReduceOp op, int root, long count, long timeoutNanos) {
        transport.call.set(seq, opcode, type, op, root, count, timeoutNanos);
    }

    @Override
    protected void doAllReduce(HostBuffer s, HostBuffer r, ReduceOp op) {
        if (onHeap(s, r)) {
            // Heap arrays: reduce in native memory (see Staging) and copy the result back.
            HostBuffer w = staging.copyOf(s);
            allReduceNative(w, w, op);
            copy(w, r);
            return;
        }
        allReduceNative(s, r, op);
    }

    private void allReduceNative(HostBuffer s, HostBuffer r, ReduceOp op) {
        Tuner.AllReduceAlgo a = s.count() == 0 ? Tuner.AllReduceAlgo.ONESHOT : tuner.tcpAllReduce(s.byteSize(), size(), hosts);
        switch (a) {
            case RHD -> RhdAllReduce.run(transport, s, r, op);
            case RING, RSAG -> RingAllReduce.run(transport, s, r, op);
            default -> OneShotAllReduce.run(transport, s, r, op);
        }
    }

    @Override
    protected void doBroadcast(HostBuffer s, HostBuffer r, int root) {
        if (r.byteSize() <= TREE_BCAST_MAX_BYTES) {
            TreeBroadcast.run(transport, s, r, root);
        } else {
            ChainBroadcast.run(transport, s, r, root);
        }
    }

    @Override
    protected void doReduce(HostBuffer s, HostBuffer r, ReduceOp op, int root) {
        if (onHeap(s, r)) {
            HostBuffer w = staging.copyOf(s);
            reduceNative(w, r == null ? null : w, op, root);
            if (r != null) {
                copy(w, r);
            }
            return;
        }
        reduceNative(s, r, op, root);
    }

    private void reduceNative(HostBuffer s, HostBuffer r, ReduceOp op, int root) {
        if (s.byteSize() <= DIRECT_REDUCE_MAX_BYTES) {
            DirectReduce.run(transport, s, r, op, root);
        } else {
            ChainReduce.run(transport, s, r, op, root);
        }
    }

    @Override
    protected void doAllGather(HostBuffer s, HostBuffer r) {
        if (r.byteSize() <= DIRECT_ALLGATHER_MAX_BYTES) {
            DirectAllGather.run(transport, s, r);
        } else {
            RingAllGather.run(transport, s, r);
        }
    }

    @Override
    protected void doGather(HostBuffer s, HostBuffer r, int root) {
        DirectGather.run(transport, s, r, root);
    }

    @Override
    protected void doReduceScatter(HostBuffer s, HostBuffer r, ReduceOp op) {
        if (onHeap(s, r)) {
            HostBuffer w = staging.copyOf(s);
            HostBuffer mine = staging.part(w, rank() * r.count(), r.count());
            reduceScatterNative(w, mine, op);
            copy(mine, r);
            return;
        }
        reduceScatterNative(s, r, op);
    }

    private void reduceScatterNative(HostBuffer s, HostBuffer r, ReduceOp op) {
        if (s.byteSize() <= DIRECT_RS_MAX_BYTES) {
            DirectReduceScatter.run(transport, s, r, op);
        } else {
            RingReduceScatter.run(transport, s, r, op);
        }
    }

    @Override
    protected void doAllToAll(HostBuffer s, HostBuffer r) {
        PairwiseAllToAll.run(transport, s, r);
    }

    @Override
    protected void doScatter(HostBuffer s, HostBuffer r, int root) {
        DirectScatter.run(transport, s, r, root);
    }

    @Override
    protected void doBarrier() {
        Barrier.run(transport);
    }

    @Override
    protected void beginP2p(int op, HostBuffer b, int peer, long timeoutNanos) {
        transport.call.set(0, OpCode.SEND, DataType.INT8, null, -1, 0, timeoutNanos);
    }

    @Override
    protected void idleP2p(int iteration, int peer) {
        transport.idle(iteration);
    }

    @Override
    protected void touchP2pBatch() {
        transport.call.touch();
    }

    @Override
    protected void propagate(org.jccl.JcclException e, int culprit) {
        transport.fail(Frame.abortCode(e), e.getMessage(), culprit);
    }

    @Override
    protected Communicator createSub(String subId, int[] members, int newRank, Store sub) {
        String[] h = new String[members.length];
        for (int i = 0; i < members.length; i++) {
            h[i] = hostOf[members[i]];
        }
        return create(subId, newRank, members.length, sub, timeout(), token, cfg, storeHost, h, 0, watch.sub(members));
    }

    @Override
    public String toString() {
        return "TcpCommunicator[" + id + ", rank " + rank() + " of " + size() + "]";
    }

    /** Whether {@code s} or {@code r} (null: none) is a heap array, so that the reduction runs in {@link Staging}. */
    private static boolean onHeap(HostBuffer s, HostBuffer r) {
        return !s.segment().isNative() || r != null && !r.segment().isNative();
    }

    /** Copies {@code to}'s size of {@code from} into {@code to}. */
    private static void copy(HostBuffer from, HostBuffer to) {
        MemorySegment.copy(from.segment(), 0, to.segment(), 0, to.byteSize());
    }

    /**
     * Native memory the reductions of heap-array buffers run in: the reduction kernels are fast
     * (and allocation-free) on native segments, and large native payloads skip the staging
     * copies of the sockets. Grows only; the buffer views are reused while the shape repeats.
     */
    private static final class Staging {
        private static final int VIEWS = 4;
        private MemorySegment seg;
        private final HostBuffer[] wholes = new HostBuffer[VIEWS];
        private final HostBuffer[] parts = new HostBuffer[VIEWS];
        private int next;

        /** A native buffer of {@code count} elements (views kept per shape: calls alternate shapes). */
        HostBuffer whole(org.jccl.DataType type, long count) {
            long bytes = count * type.byteSize();
            if (seg == null || seg.byteSize() < bytes) {
                seg = java.lang.foreign.Arena.ofAuto().allocate(Math.max(64, bytes), 64);
                java.util.Arrays.fill(wholes, null);
                java.util.Arrays.fill(parts, null);
            }
            for (HostBuffer w : wholes) {
                if (w != null && w.type() == type && w.count() == count) {
                    return w;
                }
            }
            HostBuffer w = HostBuffer.of(type, seg.asSlice(0, bytes), count);
            wholes[next] = w;
            parts[next] = null;
            next = (next + 1) % VIEWS;
            return w;
        }

        /** A {@link #whole} buffer holding a copy of {@code s}. */
        HostBuffer copyOf(HostBuffer s) {
            HostBuffer w = whole(s.type(), s.count());
            MemorySegment.copy(s.segment(), 0, w.segment(), 0, s.byteSize());
            return w;
        }

        /** Elements {@code [first, first + count)} of a buffer {@link #whole} returned. */
        HostBuffer part(HostBuffer w, long first, long count) {
            for (int i = 0; i < VIEWS; i++) {
                if (wholes[i] == w) {
                    if (parts[i] == null || parts[i].count() != count) {
                        parts[i] = w.slice(first, count);
                    }
                    return parts[i];
                }
            }
            return w.slice(first, count);
        }
    }
}
