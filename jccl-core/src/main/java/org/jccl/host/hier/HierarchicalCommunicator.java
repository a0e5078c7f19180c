package org.jccl.host.hier;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.jccl.AbortedException;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.jccl.bootstrap.PrefixStore;
import org.jccl.bootstrap.Store;
import org.jccl.host.engine.AbstractP2p;
import org.jccl.host.engine.EngineCommunicator;
import org.jccl.host.engine.OpCode;
import org.jccl.host.engine.P2p;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.tcp.Frame;
import org.jccl.host.tcp.TcpCommunicator;
import org.jccl.host.tcp.TcpConfig;
import org.jccl.host.tcp.TcpTransport;
import org.jccl.host.tcp.algo.PointToPoint;
import org.jccl.spi.Liveness;

/**
 * The host engine across hosts with several ranks per host: shared memory inside each host (the
 * shared-memory communicator of the host's ranks) and TCP between one leader per host (the lowest
 * rank of the host; a {@link TcpCommunicator} of the leaders). Collectives compose the two:
 *
 * <ul>
 *   <li>all-reduce: reduce to the leader over shared memory, all-reduce among the leaders over TCP,
 *       broadcast from the leader over shared memory;</li>
 *   <li>reduce: reduce to the leaders, reduce among the leaders to the root's host, hand the result
 *       to the root;</li>
 *   <li>broadcast: inside the root's host, among the leaders, inside the other hosts;</li>
 *   <li>all-gather, gather, reduce-scatter, scatter, all-to-all: gather to (or scatter from) the
 *       leader over shared memory and run the collective among the leaders on per-host blocks
 *       (padded to the largest host when hosts have different rank counts);</li>
 *   <li>barrier: inside, among the leaders, inside again;</li>
 *   <li>send/recv: shared memory to a rank of the same host, else a direct TCP connection
 *       between the two ranks (set up with the communicator).</li>
 * </ul>
 *
 * <p>Results: identical on every rank and from run to run. Reductions combine per-host partial
 * results (in rank order inside a host) across hosts, so float sums associate differently from a
 * one-host communicator and may differ from it in the last bits; low-precision types round once
 * per level; AVG divides once, at the end. Exactly representable data gives the same bits.
 *
 * <p>A failure of either part fails the whole communicator on every rank: a leader that fails
 * aborts its host's shared-memory communicator and its TCP peers, so nobody waits beyond the
 * deadline. Ranks named in errors are ranks of this communicator, and errors speak of the
 * caller's collective, not of the internal step that failed ({@link #explain}): ranks that called
 * different collectives get a {@link CollectiveMismatchException} naming every rank's call, and a
 * timeout's {@code missingRanks()} are the ranks that never reached the collective, whichever
 * part waited for them.
 *
 * <p>Not caught in the call by default: a broadcast whose ranks disagree about the root returns
 * normally on ranks that only depend on ranks agreeing with them (the root host's ranks after its
 * shared-memory step; ranks of another host whose leader does that host's shared-memory step as
 * the root host's); the leaders' part, or the next collective, fails the others. With {@code
 * JCCL_CHECK=1} every collective first all-gathers every rank's call, so every disagreement fails
 * on every rank in the call.
 */
public final class HierarchicalCommunicator extends EngineCommunicator<TcpTransport> {

    /** Creates the shared-memory communicator of one host's ranks. */
    @FunctionalInterface
    public interface LocalFactory {
        /**
         * Collective among the ranks of one host: {@code rank} of {@code size}, meeting through
         * {@code store}; its waits also end when {@code watch} reports a member dead.
         */
        Communicator create(String id, int rank, int size, Store store, Duration timeout, Liveness.Watch watch);
    }

    private final Placement placement;
    private final int myHost;
    private final int localRank;
    private final int[] mine;
    private final int maxLocal;
    private final Communicator local;
    private final TcpCommunicator leaders;
    // The engine's transport is this rank's direct TCP connections for send/recv to other hosts.
    private final String token;
    private final TcpConfig cfg;
    private final String storeHost;
    private final LocalFactory factory;
    /** Views of the parts with the deadline of the current call, when it is not the default one. */
    private Communicator localView;
    private Communicator leadersView;
    private long localViewNanos;
    private long leadersViewNanos;
    private final MemorySegment[] scratch = new MemorySegment[4];
    private final MemorySegment[] one = new MemorySegment[1];
    private final long[] oneOff = new long[1];
    private int remoteP2p;

    private HierarchicalCommunicator(String id, int rank, int size, Duration timeout, Placement placement, Communicator local,
                                     TcpCommunicator leaders, TcpTransport p2p, Store store, String token, TcpConfig cfg,
                                     String storeHost, LocalFactory factory, Liveness.Watch watch) {
        super(id, rank, size, timeout, p2p, store, watch);
        this.placement = placement;
        this.myHost = placement.hostOf()[rank];
        this.localRank = placement.localRank(rank);
        this.mine = placement.members()[myHost];
        this.maxLocal = placement.maxLocal();
        this.local = local;
        this.leaders = leaders;
        this.token = token;
        this.cfg = cfg;
        this.storeHost = storeHost;
        this.factory = factory;
    }

    /**
     * Collective: forms the communicator of {@code size} ranks placed as {@code placement} (two
     * hosts or more) through {@code store}, which it closes when it closes.
     */
    public static HierarchicalCommunicator create(String id, int rank, int size, Store store, Duration timeout, String token,
                                                  TcpConfig cfg, String storeHost, Placement placement, LocalFactory factory) {
        return create(id, rank, size, store, timeout, token, cfg, storeHost, placement, factory, null);
    }

    /**
     * As {@link #create(String, int, int, Store, Duration, String, TcpConfig, String, Placement,
     * LocalFactory)}, every part's waits also ending when {@code watch} (null: none) reports a
     * member dead.
     */
    public static HierarchicalCommunicator create(String id, int rank, int size, Store store, Duration timeout, String token,
                                                  TcpConfig cfg, String storeHost, Placement placement, LocalFactory factory,
                                                  Liveness.Watch watch) {
        Liveness.Watch w = watch != null ? watch : Liveness.NONE.watch(size);
        int h = placement.hostOf()[rank];
        int lr = placement.localRank(rank);
        int[] members = placement.members()[h];
        Communicator local = null;
        TcpCommunicator leaders = null;
        TcpTransport p2p = null;
        boolean ok = false;
        try {
            local = factory.create(id + "h" + h, lr, members.length, new PrefixStore("h" + h + "/", store), timeout,
                    w.sub(members));
            if (lr == 0) {
                String[] leaderHosts = new String[placement.hosts()];
                int[] leaderRanks = new int[placement.hosts()];
                for (int i = 0; i < leaderHosts.length; i++) {
                    leaderRanks[i] = placement.members()[i][0];
                    leaderHosts[i] = placement.hostIds()[leaderRanks[i]];
                }
                leaders = TcpCommunicator.create(id + "x", h, placement.hosts(), new PrefixStore("x/", store), timeout,
                        token, cfg, storeHost, leaderHosts, members.length, w.sub(leaderRanks));
            }
            int[] hostOf = placement.hostOf();
            p2p = TcpTransport.open(id + "p", rank, size, new PrefixStore("p/", store), timeout, token, cfg, storeHost,
                    p -> false, p -> hostOf[p] != h, members.length);
            HierarchicalCommunicator c = new HierarchicalCommunicator(id, rank, size, timeout, placement, local, leaders, p2p,
                    store, token, cfg, storeHost, factory, w);
            ok = true;
            return c;
        } finally {
            if (!ok) {
                if (p2p != null) {
                    p2p.close();
                }
                if (leaders != null) {
                    leaders.close();
                }
                if (local != null) {
                    local.close();
                }
            }
        }
    }

    /**
     * Memory registered with this host's shared-memory communicator: the steps inside the host
     * read it in place when every rank of the host passes registered buffers; the steps between
     * hosts (TCP) copy as always.
     */
    @Override
    protected HostBuffer allocateMemory(org.jccl.DataType type, long count) {
        return local.allocate(type, count);
    }

    @Override
    protected boolean registered(HostBuffer buffer) {
        return local.isRegistered(buffer);
    }

    /** The placement of the ranks on hosts. */
    public Placement placement() {
        return placement;
    }

    /** The shared-memory communicator of this rank's host. */
    public Communicator local() {
        return local;
    }

    /** The TCP communicator of the hosts' leaders on a leader, else null. */
    public TcpCommunicator leaders() {
        return leaders;
    }

    private boolean leader() {
        return localRank == 0;
    }

    /** The shared-memory part with the deadline of the call running now. */
    private Communicator loc() {
        if (callNanos == timeout().toNanos()) {
            return local;
        }
        if (localView == null || localViewNanos != callNanos) {
            localView = local.withTimeout(Duration.ofNanos(callNanos));
            localViewNanos = callNanos;
        }
        return localView;
    }

    /** The leaders' TCP part with the deadline of the call running now (leaders only). */
    private Communicator lead() {
        if (callNanos == timeout().toNanos()) {
            return leaders;
        }
        if (leadersView == null || leadersViewNanos != callNanos) {
            leadersView = leaders.withTimeout(Duration.ofNanos(callNanos));
            leadersViewNanos = callNanos;
        }
        return leadersView;
    }

    private MemorySegment scratch(int slot, long bytes) {
        MemorySegment s = scratch[slot];
        if (s == null || s.byteSize() < bytes) {
            s = Arena.ofAuto().allocate(Math.max(64, bytes), 64);
            scratch[slot] = s;
        }
        return s;
    }

    private HostBuffer buf(int slot, DataType type, long count) {
        return HostBuffer.of(type, scratch(slot, count * type.byteSize()), count);
    }

    /** The op of the shared-memory step: AVG sums (the division comes once, at the end). */
    private static ReduceOp localOp(ReduceOp op) {
        return op.kind() == ReduceOp.Kind.AVG ? ReduceOp.SUM : op;
    }

    /** The op among the leaders: partials are sums already scaled for PREMUL_SUM. */
    private static ReduceOp crossOp(ReduceOp op) {
        return op.kind() == ReduceOp.Kind.AVG || op.kind() == ReduceOp.Kind.PREMUL_SUM ? ReduceOp.SUM : op;
    }

    @Override
    protected void beginCall(long seq, int opcode, DataType type, ReduceOp op, int root, long count, long timeoutNanos) {
        userCall = OpCode.pack(opcode, type.ordinal(), op == null ? OpCode.NO_REDOP : op.kind().ordinal(), root);
        userCount = count;
        userSeq = seq;
        p2pSeq = 0;
        if (cfg.check()) {
            agree();
        }
    }

    private MemorySegment checkMine;
    private MemorySegment checkAll;

    /**
     * {@code JCCL_CHECK=1}: before the collective, every rank learns every rank's call (an
     * all-gather of the fingerprints through both parts), so that any disagreement fails on every
     * rank in the call, naming every rank's call. Without it, a broadcast whose ranks disagree
     * about the root can return on ranks whose part agreed (see the class comment).
     */
    private void agree() {
        if (checkMine == null) {
            checkMine = Arena.ofAuto().allocate(16, 8);
            checkAll = Arena.ofAuto().allocate(16L * size(), 8);
        }
        checkMine.setAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 0, userCall);
        checkMine.setAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 1, userCount);
        doAllGather(HostBuffer.of(DataType.INT64, checkMine, 2), HostBuffer.of(DataType.INT64, checkAll, 2L * size()));
        java.util.Map<String, List<Integer>> byCall = new java.util.LinkedHashMap<>();
        for (int p = 0; p < size(); p++) {
            long c = checkAll.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 2L * p);
            long n = checkAll.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 2L * p + 1);
            byCall.computeIfAbsent(OpCode.describe(c, n, collectiveSequence()), k -> new ArrayList<>()).add(p);
        }
        if (byCall.size() > 1) {
            // (explain() still runs: a rank whose part failed first, before it saw the table, learns
            // the calls from the store)
            StringBuilder b = new StringBuilder("collective mismatch at collective #").append(collectiveSequence()).append(" on rank ")
                    .append(rank()).append(" of communicator ").append(id).append(" (JCCL_CHECK):");
            String sep = " ";
            for (var g : byCall.entrySet()) {
                b.append(sep).append(g.getValue().size() == 1 ? "rank " + g.getValue().get(0) : "ranks " + g.getValue())
                        .append(" called ").append(g.getKey());
                sep = "; ";
            }
            throw new CollectiveMismatchException(b.append(": ").append(OpCode.SAME_CALLS).toString());
        }
    }

    /** The caller's collective running now (its fingerprint, count, number), or userSeq -1 outside one. */
    private long userCall;
    private long userCount;
    private long userSeq = -1;

    /** Set by a send/recv batch: the number of the next collective, whose ranks read a send/recv failure. */
    private long p2pSeq;
    private static final String P2P_ACCOUNT = "send/recv: ";

    /**
     * The store key under which a failing rank writes the number of the collective it failed in (or,
     * after a failed send/recv, of the next one, which it never reaches), once, after its account:
     * a rank waiting for its account of another collective stops waiting for it.
     */
    private static final String FELL = "fell/";
    private boolean fellWritten;

    /** Writes this rank's {@link #FELL} key (the first failure only: the communicator stays broken). */
    private void fell(long seq) {
        if (!fellWritten) {
            fellWritten = true;
            store.set(FELL + rank(), Long.toString(seq).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        }
    }

    /** How long a failing rank waits for the others' account of their call (failures only). */
    private static final long ACCOUNT_NANOS = 500_000_000L;

    /**
     * A collective failed in one of its internal steps (a shared-memory reduce, the leaders' TCP
     * all-reduce, ...), which speak of that step and of the ranks of that part. After the peers
     * were told, every failing rank writes its own collective (as the caller called it) to the
     * store and reads the others' (for at most half a second, and not for a rank that failed in
     * another collective of this communicator, which never writes one; failures only, nothing on
     * the collective path), then says what happened in the callers' terms: ranks that called different
     * collectives (a {@link CollectiveMismatchException} naming every call, whichever step saw it),
     * ranks that never reached the collective (a {@link CollectiveTimeoutException} whose {@code
     * missingRanks()} are ranks of this communicator, whichever part waited for them), else the
     * failure as it was, prefixed with the caller's collective.
     */
    @Override
    protected JcclException explain(JcclException e) {
        long seq = userSeq;
        userSeq = -1;
        if (seq < 0) {
            if (p2pSeq > 0) {
                // a send/recv failed: the ranks in the next collective read why (shared memory passes
                // on only the start of a reason)
                String m = e.getMessage();
                try {
                    store.set("why/" + p2pSeq + "/" + rank(), (P2P_ACCOUNT + (m.length() > 2000 ? m.substring(0, 2000) : m))
                            .getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    fell(p2pSeq);
                } catch (RuntimeException ignored) {
                    // best effort
                }
                p2pSeq = 0;
            }
            return e;
        }
        String mine = OpCode.describe(userCall, userCount, seq);
        String[] calls = new String[size()];
        calls[rank()] = mine;
        // the ranks known not to say: they failed before this collective, or returned from it
        boolean[] wontSay = new boolean[size()];
        List<Integer> returned = new ArrayList<>();
        int got = 1;
        try {
            store.set("why/" + seq + "/" + rank(), mine.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            fell(seq);
            long end = System.nanoTime() + ACCOUNT_NANOS;
            while (true) {
                for (int p = 0; p < size(); p++) {
                    if (calls[p] == null && !wontSay[p]) {
                        byte[] v = store.tryGet("why/" + seq + "/" + p);
                        if (v != null) {
                            calls[p] = new String(v, java.nio.charset.StandardCharsets.UTF_8);
                            got++;
                            continue;
                        }
                        byte[] f = store.tryGet(FELL + p);
                        long at = f == null ? seq : Long.parseLong(new String(f, java.nio.charset.StandardCharsets.US_ASCII));
                        if (at != seq) {
                            // p failed at another collective of this communicator (its account of it
                            // written first): before this one (it never reaches it: missing), or
                            // after it (it returned from this one)
                            wontSay[p] = true;
                            got++;
                            if (at > seq) {
                                returned.add(p);
                            }
                        }
                    }
                }
                if (got == size() || System.nanoTime() - end > 0) {
                    break;
                }
                LockSupport.parkNanos(5_000_000L);
            }
        } catch (RuntimeException ignored) {
            // the store is gone: say what this rank knows
        }
        java.util.Map<String, List<Integer>> byCall = new java.util.LinkedHashMap<>();
        List<Integer> missing = new ArrayList<>();
        StringBuilder p2pFailures = new StringBuilder();
        if (!returned.isEmpty()) {
            p2pFailures.append(" [rank(s) ").append(returned).append(" returned from this collective and failed in a later one]");
        }
        for (int p = 0; p < size(); p++) {
            if (returned.contains(p)) {
                continue;
            }
            if (calls[p] == null) {
                missing.add(p);
            } else if (calls[p].startsWith(P2P_ACCOUNT)) {
                p2pFailures.append(" [rank ").append(p).append(" failed in a send/recv before this collective: ")
                        .append(calls[p].substring(P2P_ACCOUNT.length())).append(']');
            } else {
                byCall.computeIfAbsent(calls[p], k -> new ArrayList<>()).add(p);
            }
        }
        String where = " on rank " + rank() + " of communicator " + id;
        if (byCall.size() > 1) {
            StringBuilder b = new StringBuilder("collective mismatch at collective #").append(seq).append(where).append(':');
            String sep = " ";
            for (var g : byCall.entrySet()) {
                b.append(sep).append(g.getValue().size() == 1 ? "rank " + g.getValue().get(0) : "ranks " + g.getValue())
                        .append(" called ").append(g.getKey());
                sep = "; ";
            }
            if (!missing.isEmpty()) {
                b.append("; rank(s) ").append(missing).append(" did not say");
            }
            if (!returned.isEmpty()) {
                b.append("; rank(s) ").append(returned).append(" returned from it and failed in a later collective");
            }
            b.append(": ").append(OpCode.SAME_CALLS).append(" [")
                    .append(e.getMessage()).append(']');
            return new CollectiveMismatchException(b.toString());
        }
        boolean relayed = e instanceof PeerFailureException pf && !missing.contains(pf.rank());
        if (!missing.isEmpty() && (e instanceof CollectiveTimeoutException || relayed)) {
            return new CollectiveTimeoutException(mine + " failed" + where + ": rank(s) " + missing + " never reached it "
                    + "(a rank is stuck, dead, unreachable or called something else) [" + e.getMessage() + "]", missing);
        }
        String msg = mine + " failed" + where + ":" + p2pFailures + " " + e.getMessage();
        if (e instanceof PeerFailureException pf) {
            return new PeerFailureException(pf.rank(), msg, e);
        }
        if (e instanceof CollectiveTimeoutException te) {
            return new CollectiveTimeoutException(msg, te.missingRanks());
        }
        if (e instanceof CollectiveMismatchException) {
            return new CollectiveMismatchException(msg);
        }
        if (e instanceof AbortedException) {
            return new AbortedException(msg);
        }
        return e;
    }

    // ------------------------------------------------------------------ failures of the parts

    /** Runs a step of the shared-memory part; its failures name ranks of this communicator. */
    private JcclException local(JcclException e) {
        return translate(e, "the shared-memory part of host " + myHost, mine);
    }

    private JcclException cross(JcclException e) {
        int[] lead = new int[placement.hosts()];
        for (int h = 0; h < lead.length; h++) {
            lead[h] = placement.members()[h][0];
        }
        return translate(e, "the TCP part among the hosts' leaders", lead);
    }

    private JcclException translate(JcclException e, String part, int[] map) {
        if (e instanceof PeerFailureException || e instanceof AbortedException) {
            // A failure relayed by another rank (this host's leader, another host's leader): when the
            // heartbeats already told this rank who died, name that rank.
            int d = watch.firstDead();
            if (d >= 0 && d != rank()) {
                return new PeerFailureException(d, watch.message(d, "a collective of communicator " + id + " on rank "
                        + rank()) + " [" + part + " failed: " + e.getMessage() + "]", e);
            }
        }
        StringBuilder msg = new StringBuilder("rank ").append(rank()).append(" of communicator ").append(id).append(": ")
                .append(part).append(" failed (rank i there is rank ").append(java.util.Arrays.toString(map))
                .append("[i] here): ").append(e.getMessage());
        if (e instanceof PeerFailureException pf) {
            int r = pf.rank() >= 0 && pf.rank() < map.length ? map[pf.rank()] : pf.rank();
            return new PeerFailureException(r, msg.append(" [the failed rank is rank ").append(r).append(']').toString(), e);
        }
        if (e instanceof CollectiveTimeoutException te) {
            List<Integer> missing = new ArrayList<>();
            for (int r : te.missingRanks()) {
                missing.add(r >= 0 && r < map.length ? map[r] : r);
            }
            return new CollectiveTimeoutException(msg.append(" [the late rank(s): ").append(missing).append(']').toString(), missing);
        }
        if (e instanceof CollectiveMismatchException) {
            return new CollectiveMismatchException(msg.toString());
        }
        if (e instanceof AbortedException) {
            return new AbortedException(msg.toString());
        }
        return new JcclException(msg.toString(), e);
    }

    // ------------------------------------------------------------------ collectives

    @Override
    protected void doAllReduce(HostBuffer s, HostBuffer r, ReduceOp op) {
        try {
            loc().reduce(s, r, localOp(op), 0);
        } catch (JcclException e) {
            throw local(e);
        }
        if (leader()) {
            try {
                lead().allReduce(r, crossOp(op));
            } catch (JcclException e) {
                throw cross(e);
            }
            if (op.kind() == ReduceOp.Kind.AVG) {
                Reductions.divide(r.type(), r.segment(), 0, r.count(), size());
            }
        }
        try {
            loc().broadcast(r, 0);
        } catch (JcclException e) {
            throw local(e);
        }
    }

    @Override
    protected void doBroadcast(HostBuffer s, HostBuffer r, int root) {
        int rootHost = placement.hostOf()[root];
        try {
            if (myHost == rootHost) {
                loc().broadcast(s, r, placement.localRank(root));
            }
        } catch (JcclException e) {
            throw local(e);
        }
        if (leader()) {
            try {
                lead().broadcast(r, rootHost);
            } catch (JcclException e) {
                throw cross(e);
            }
        }
        try {
            if (myHost != rootHost) {
                loc().broadcast(r, 0);
            }
        } catch (JcclException e) {
            throw local(e);
        }
    }

    @Override
    protected void doReduce(HostBuffer s, HostBuffer r, ReduceOp op, int root) {
        int rootHost = placement.hostOf()[root];
        int rootLocal = placement.localRank(root);
        boolean rootIsLeader = rootLocal == 0;
        HostBuffer partial = leader() ? (rank() == root ? r : buf(0, s.type(), s.count())) : null;
        try {
            loc().reduce(s, partial, localOp(op), 0);
        } catch (JcclException e) {
            throw local(e);
        }
        if (leader()) {
            try {
                lead().reduce(partial, myHost == rootHost ? partial : null, crossOp(op), rootHost);
            } catch (JcclException e) {
                throw cross(e);
            }
            if (myHost == rootHost && op.kind() == ReduceOp.Kind.AVG) {
                Reductions.divide(partial.type(), partial.segment(), 0, partial.count(), size());
            }
        }
        if (myHost == rootHost && !rootIsLeader) {
            try {
                if (leader()) {
                    loc().send(partial, rootLocal);
                } else if (rank() == root) {
                    loc().recv(r, 0);
                }
            } catch (JcclException e) {
                throw local(e);
            }
        }
    }

    /** Copies block {@code rank} of every rank between rank order and host order (padded to maxLocal). */
    private void permute(MemorySegment rankOrder, MemorySegment hostOrder, long blockBytes, boolean toHostOrder) {
        int[][] m = placement.members();
        for (int h = 0; h < m.length; h++) {
            for (int i = 0; i < m[h].length; i++) {
                long a = m[h][i] * blockBytes;
                long b = ((long) h * maxLocal + i) * blockBytes;
                if (toHostOrder) {
                    MemorySegment.copy(rankOrder, a, hostOrder, b, blockBytes);
                } else {
                    MemorySegment.copy(hostOrder, b, rankOrder, a, blockBytes);
                }
            }
        }
    }

    @Override
    protected void doAllGather(HostBuffer s, HostBuffer r) {
        DataType type = s.type();
        long c = s.count();
        HostBuffer mineBuf = leader() ? buf(0, type, maxLocal * c) : null;
        try {
            loc().gather(s, leader() ? mineBuf.slice(0, mine.length * c) : null, 0);
        } catch (JcclException e) {
            throw local(e);
        }
        if (leader()) {
            HostBuffer all = buf(1, type, (long) placement.hosts() * maxLocal * c);
            try {
                lead().allGather(mineBuf, all);
            } catch (JcclException e) {
                throw cross(e);
            }
            permute(r.segment(), all.segment(), c * type.byteSize(), false);
        }
        try {
            loc().broadcast(r, 0);
        } catch (JcclException e) {
            throw local(e);
        }
    }

    @Override
    protected void doGather(HostBuffer s, HostBuffer r, int root) {
        DataType type = s.type();
        long c = s.count();
        int rootHost = placement.hostOf()[root];
        int rootLocal = placement.localRank(root);
        HostBuffer mineBuf = leader() ? buf(0, type, maxLocal * c) : null;
        try {
            loc().gather(s, leader() ? mineBuf.slice(0, mine.length * c) : null, 0);
        } catch (JcclException e) {
            throw local(e);
        }
        HostBuffer result = null;
        if (leader()) {
            HostBuffer all = myHost == rootHost ? buf(1, type, (long) placement.hosts() * maxLocal * c) : null;
            try {
                lead().gather(mineBuf, all, rootHost);
            } catch (JcclException e) {
                throw cross(e);
            }
            if (myHost == rootHost) {
                result = rank() == root ? r : buf(2, type, size() * c);
                permute(result.segment(), all.segment(), c * type.byteSize(), false);
            }
        }
        if (myHost == rootHost && rootLocal != 0) {
            try {
                if (leader()) {
                    loc().send(result, rootLocal);
                } else if (rank() == root) {
                    loc().recv(r, 0);
                }
            } catch (JcclException e) {
                throw local(e);
            }
        }
    }

    @Override
    protected void doReduceScatter(HostBuffer s, HostBuffer r, ReduceOp op) {
        DataType type = s.type();
        long rc = r.count();
        long bb = rc * type.byteSize();
        HostBuffer partial = leader() ? buf(0, type, size() * rc) : null;
        try {
            loc().reduce(s, partial, localOp(op), 0);
        } catch (JcclException e) {
            throw local(e);
        }
        HostBuffer q = leader() ? buf(2, type, maxLocal * rc) : null;
        if (leader()) {
            HostBuffer p = buf(1, type, (long) placement.hosts() * maxLocal * rc);
            permute(partial.segment(), p.segment(), bb, true);
            try {
                lead().reduceScatter(p, q, crossOp(op));
            } catch (JcclException e) {
                throw cross(e);
            }
            if (op.kind() == ReduceOp.Kind.AVG) {
                Reductions.divide(type, q.segment(), 0, mine.length * rc, size());
            }
        }
        try {
            loc().scatter(leader() ? q.slice(0, mine.length * rc) : null, r, 0);
        } catch (JcclException e) {
            throw local(e);
        }
    }

    @Override
    protected void doAllToAll(HostBuffer s, HostBuffer r) {
        DataType type = s.type();
        int es = type.byteSize();
        long bc = s.count() / size();
        long bb = bc * es;
        long full = s.byteSize();
        int hosts = placement.hosts();
        int[][] m = placement.members();
        HostBuffer g = leader() ? buf(0, type, mine.length * s.count()) : null;
        HostBuffer in = s;
        if (s.sameStart(r)) {
            // in place: the gather below must read the input before the scatter overwrites it
            in = buf(3, type, s.count());
            MemorySegment.copy(s.segment(), 0, in.segment(), 0, full);
        }
        try {
            loc().gather(in, g, 0);
        } catch (JcclException e) {
            throw local(e);
        }
        HostBuffer out = leader() ? buf(2, type, mine.length * s.count()) : null;
        if (leader()) {
            // to host h: for every member i here and j there, the block i sends to j
            long pair = (long) maxLocal * maxLocal * bb;
            HostBuffer p = buf(1, type, hosts * pair / es);
            HostBuffer q = buf(3, type, hosts * pair / es);
            for (int h = 0; h < hosts; h++) {
                for (int i = 0; i < mine.length; i++) {
                    for (int j = 0; j < m[h].length; j++) {
                        MemorySegment.copy(g.segment(), i * full + m[h][j] * bb, p.segment(),
                                h * pair + ((long) i * maxLocal + j) * bb, bb);
                    }
                }
            }
            try {
                lead().allToAll(p, q);
            } catch (JcclException e) {
                throw cross(e);
            }
            for (int h = 0; h < hosts; h++) {
                for (int i = 0; i < m[h].length; i++) {
                    for (int j = 0; j < mine.length; j++) {
                        MemorySegment.copy(q.segment(), h * pair + ((long) i * maxLocal + j) * bb, out.segment(),
                                j * full + m[h][i] * bb, bb);
                    }
                }
            }
        }
        try {
            loc().scatter(out, r, 0);
        } catch (JcclException e) {
            throw local(e);
        }
    }

    @Override
    protected void doScatter(HostBuffer s, HostBuffer r, int root) {
        DataType type = r.type();
        long rc = r.count();
        long bb = rc * type.byteSize();
        int rootHost = placement.hostOf()[root];
        int rootLocal = placement.localRank(root);
        HostBuffer src = null;
        if (myHost == rootHost) {
            try {
                agreeOnRoot(rootLocal);
                if (rootLocal == 0) {
                    src = leader() ? s : null;
                } else if (rank() == root) {
                    loc().send(s, 0);
                } else if (leader()) {
                    src = buf(0, type, size() * rc);
                    loc().recv(src, rootLocal);
                }
            } catch (JcclException e) {
                throw local(e);
            }
        }
        HostBuffer q = leader() ? buf(2, type, maxLocal * rc) : null;
        if (leader()) {
            HostBuffer p = null;
            if (myHost == rootHost) {
                p = buf(1, type, (long) placement.hosts() * maxLocal * rc);
                permute(src.segment(), p.segment(), bb, true);
            }
            try {
                lead().scatter(p, q, rootHost);
            } catch (JcclException e) {
                throw cross(e);
            }
        }
        try {
            loc().scatter(leader() ? q.slice(0, mine.length * rc) : null, r, 0);
        } catch (JcclException e) {
            throw local(e);
        }
    }

    private MemorySegment rootTag;

    /**
     * A scatter's first step on the root's host: its ranks agree on the root (a one-element
     * broadcast from the root's local rank). Without it a root that is not its host's leader
     * would hand its data to a leader that believes itself the root, every later step would agree,
     * and the ranks would go on with the wrong blocks. With the broadcast, ranks that name
     * different roots of this host call it from different roots, or it and another collective,
     * which shared memory refuses (a receiver here, an eager root at its next collective). The
     * element's value does not matter: ranks that name the same local rank name the same root.
     */
    private void agreeOnRoot(int rootLocal) {
        if (rootTag == null) {
            rootTag = Arena.ofAuto().allocate(4, 4);
        }
        loc().broadcast(HostBuffer.of(DataType.INT32, rootTag, 1), rootLocal);
    }

    @Override
    protected void doBarrier() {
        try {
            loc().barrier();
        } catch (JcclException e) {
            throw local(e);
        }
        if (leader()) {
            try {
                lead().barrier();
            } catch (JcclException e) {
                throw cross(e);
            }
        }
        try {
            loc().barrier();
        } catch (JcclException e) {
            throw local(e);
        }
    }

    // ------------------------------------------------------------------ send/recv

    @Override
    protected P2p newP2p(boolean isSend, HostBuffer b, int peer) {
        if (placement.hostOf()[peer] == myHost) {
            return new LocalP2p(isSend, b, placement.localRank(peer), peer);
        }
        return new RemoteP2p(new PointToPoint(transport, isSend, b, peer));
    }

    /** A thread no caller runs on: a buffer it cannot reach is confined to its caller's thread. */
    private static final Thread ELSEWHERE = new Thread(() -> { });

    /**
     * A send/recv to a rank of this host: the shared-memory communicator's, progressed by its worker.
     * A buffer confined to the calling thread (a blocking {@code sendRecv} may pass one) cannot be
     * touched by that worker: it moves a shared copy, filled before a send and copied back after a
     * receive, on the calling thread.
     */
    private final class LocalP2p extends AbstractP2p {
        private final int localPeer;
        private Work w;
        /** The shared copy of a confined buffer, or null. */
        private Arena staging;
        private HostBuffer moved;
        private boolean finished;

        LocalP2p(boolean isSend, HostBuffer b, int localPeer, int peer) {
            super(isSend, b, peer);
            this.localPeer = localPeer;
        }

        @Override
        public boolean progress() {
            try {
                if (w == null) {
                    moved = buffer;
                    if (!buffer.segment().isAccessibleBy(ELSEWHERE)) {
                        staging = Arena.ofShared();
                        MemorySegment copy = staging.allocate(Math.max(1, buffer.byteSize()), 64)
                                .asSlice(0, buffer.byteSize());
                        if (isSend) {
                            copy.copyFrom(buffer.segment());
                        }
                        moved = HostBuffer.of(buffer.type(), copy, buffer.count());
                    }
                    w = isSend ? loc().sendAsync(moved, localPeer) : loc().recvAsync(moved, localPeer);
                    return true;
                }
                if (w.isDone()) {
                    if (w.exception() != null) {
                        release();
                        throw w.exception();
                    }
                    if (!finished) {
                        if (staging != null && !isSend) {
                            buffer.segment().copyFrom(moved.segment());
                        }
                        release();
                        finished = true;
                        return true;
                    }
                }
            } catch (JcclException e) {
                throw local(e);
            }
            return false;
        }

        private void release() {
            if (staging != null) {
                staging.close();
                staging = null;
            }
        }

        @Override
        public boolean isDone() {
            return finished;
        }

        @Override
        public void runToCompletion() {
            try {
                if (isSend) {
                    loc().send(buffer, localPeer);
                } else {
                    loc().recv(buffer, localPeer);
                }
            } catch (JcclException e) {
                throw local(e);
            }
        }
    }

    /** A send/recv to a rank of another host, over the pair's TCP connection. */
    private final class RemoteP2p extends AbstractP2p {
        private final PointToPoint op;
        private boolean counted;

        RemoteP2p(PointToPoint op) {
            super(op.isSend(), op.buffer(), op.peer());
            this.op = op;
        }

        @Override
        public boolean progress() {
            if (!counted) {
                counted = true;
                remoteP2p++;
            }
            boolean moved = op.progress();
            if (op.isDone() && counted) {
                counted = false;
                remoteP2p--;
            }
            return moved;
        }

        @Override
        public boolean isDone() {
            return op.isDone();
        }

        @Override
        public void runToCompletion() {
            op.runToCompletion();
        }
    }

    @Override
    protected void beginP2p(int op, HostBuffer b, int peer, long timeoutNanos) {
        userSeq = -1;
        p2pSeq = collectiveSequence() + 1;
        transport.call.set(0, OpCode.SEND, DataType.INT8, null, -1, 0, timeoutNanos);
        remoteP2p = 0;
    }

    @Override
    protected void idleP2p(int iteration, int peer) {
        if (remoteP2p > 0) {
            transport.idle(iteration);
            return;
        }
        if (System.nanoTime() - transport.call.deadline > 0) {
            throw new CollectiveTimeoutException("rank " + rank() + " of communicator " + id + ": send/recv with ranks of "
                    + "this host did not progress within " + Duration.ofNanos(transport.call.timeoutNanos), List.of());
        }
        LOCAL_P2P_IDLE.idle(iteration);
    }

    /** Send/recv inside this host: 1000 spins, then parks of 50 us. */
    private static final org.jccl.spi.IdleStrategy LOCAL_P2P_IDLE = new org.jccl.spi.BackoffIdleStrategy(1000, 0, 50_000, 50_000);

    @Override
    protected void touchP2pBatch() {
        transport.call.touch();
    }

    // ------------------------------------------------------------------ failure, close, split

    @Override
    protected void propagate(JcclException e, int culprit) {
        // Everyone must stop: the ranks of this host (shared memory), the other hosts (leaders), the pairs.
        transport.fail(Frame.abortCode(e), e.getMessage(), culprit);
        if (leaders != null) {
            // The other leaders name the culprit when it is a leader (their rank: its host);
            // another host's other ranks have no rank there (the account in the store names them).
            int[][] members = placement.members();
            int c = -1;
            for (int h = 0; h < members.length && culprit >= 0; h++) {
                if (members[h][0] == culprit) {
                    c = h;
                }
            }
            leaders.failWith(e, c);
        }
        if (local instanceof EngineCommunicator<?> h) {
            h.failWith(e); // the host's ranks get the reason (it names the failed rank), not a bare abort
        } else {
            local.abort();
        }
    }

    @Override
    protected void abortLocally(String reason) {
        super.abortLocally(reason);
        if (leaders != null) {
            leaders.abort();
        }
        local.abort();
    }

    @Override
    protected void closeResources() {
        super.closeResources();
        if (leaders != null) {
            leaders.close();
        }
        local.close();
    }

    @Override
    protected Communicator createSub(String subId, int[] members, int newRank, Store sub) {
        String[] ids = new String[members.length];
        for (int i = 0; i < members.length; i++) {
            ids[i] = placement.hostIds()[members[i]];
        }
        Placement p = Placement.of(ids);
        Liveness.Watch w = watch.sub(members);
        if (p.hosts() == 1) {
            return factory.create(subId, newRank, members.length, sub, timeout(), w);
        }
        if (p.maxLocal() == 1) {
            return TcpCommunicator.create(subId, newRank, members.length, sub, timeout(), token, cfg, storeHost, ids, 0, w);
        }
        return create(subId, newRank, members.length, sub, timeout(), token, cfg, storeHost, p, factory, w);
    }

    @Override
    public String toString() {
        return "HierarchicalCommunicator[" + id + ", rank " + rank() + " of " + size() + ", host " + myHost + " of "
                + placement.hosts() + ", local rank " + localRank + "]";
    }
}
