package org.jccl.bootstrap;

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.bootstrap.StoreProtocol.HeartbeatReply;
import org.jccl.internal.Log;
import org.jccl.spi.Liveness;

/**
 * One rank's heartbeats through a {@link TcpStore} server, and the {@link Liveness} of its job
 * they maintain. {@link org.jccl.Jccl#init(org.jccl.Options)} starts one per communicator it forms
 * ({@code JCCL_HEARTBEAT}); other code rarely needs this class.
 *
 * <p>A daemon thread sends a {@link StoreProtocol#OP_HEARTBEAT} every interval on a connection of
 * its own (so that no blocking store request of the rank ever delays it). The server ties that
 * connection to the rank and declares the rank dead when it closes without a goodbye; each answer
 * tells what changed (dead ranks with the reason, ranks that left cleanly, silent ranks), so every
 * rank learns of a death within one interval, with one small request per rank per interval and no
 * reads of other ranks' keys.
 *
 * <p>{@link #close()} says goodbye (the rank left cleanly, it is not dead) and stops the thread.
 * When the store is lost the thread logs one warning and stops ({@link #isMonitoring()} turns
 * false); when the lost store was hosted in another rank's process, that rank is declared dead.
 * When the store does not answer for a while, one warning, and the heartbeats go on.
 */
public final class Heartbeat implements Liveness, AutoCloseable {
    private static final Log LOG = Log.get(Heartbeat.class);

    private final TcpStore conn;
    private final String scope;
    private final int rank;
    private final Duration interval;
    private final long intervalNanos;
    private final int intervalMs;
    private final long replyWaitMs;
    private final boolean hostsServer;
    private final String where;
    private final CopyOnWriteArrayList<Listener> listeners = new CopyOnWriteArrayList<>();
    /** Completed exceptionally with the first death: ends guarded store waits. */
    private final CompletableFuture<Void> firstDeath = new CompletableFuture<>();
    private final Object stateLock = new Object();
    private final Thread thread;

    private volatile Set<Integer> dead = Set.of();
    private volatile Map<Integer, String> reasons = Map.of();
    private volatile Map<Integer, Duration> silent = Map.of();
    private volatile long epoch;
    private volatile boolean monitoring = true;
    private volatile boolean closed;
    /** Written by the heartbeat thread (and close after joining it). */
    private long serverEpoch;
    private int hostRank = -1;
    private Set<Integer> left = Set.of();
    private boolean warnedSlow;
    /** Warnings this heartbeat logged (diagnosis, tests: a lost store is one warning, not one per beat). */
    private final java.util.concurrent.atomic.AtomicInteger warnings = new java.util.concurrent.atomic.AtomicInteger();

    private Heartbeat(TcpStore conn, String scope, int rank, Duration interval, boolean hostsServer, String where) {
        this.conn = conn;
        this.scope = scope;
        this.rank = rank;
        this.interval = interval;
        this.intervalNanos = interval.toNanos();
        this.intervalMs = (int) Math.max(1, Math.min(Integer.MAX_VALUE, interval.toMillis()));
        this.replyWaitMs = Math.max(2_000, 3L * intervalMs);
        this.hostsServer = hostsServer;
        this.where = where;
        this.thread = Thread.ofPlatform().daemon().name("jccl-heartbeat-r" + rank).unstarted(this::loop);
    }

    /**
     * Starts the heartbeats of job rank {@code rank} of {@code scope} (one {@code Jccl.init}: its
     * namespace, e.g. {@code "jccl/<job id>/c1/"}) through the server {@code store} is connected to:
     * opens a connection of its own, registers the rank (the first heartbeat, answered before this
     * returns) and starts the thread.
     *
     * @param store       a connected client of the store (only its address and token are used)
     * @param hostsServer whether this process hosts the store server (its loss then means this rank's death)
     * @throws org.jccl.InvalidUsageException when the store refuses the rank (another process
     *                                         already sends the heartbeats of this rank, or it was declared dead)
     * @throws JcclException                   when the store cannot be reached
     */
    public static Heartbeat start(TcpStore store, String scope, int rank, Duration interval, boolean hostsServer) {
        if (store == null) {
            throw new IllegalArgumentException("store is null: heartbeats need a connected TcpStore");
        }
        StoreProtocol.keyBytes(scope);
        if (rank < 0) {
            throw new IllegalArgumentException("rank is " + rank + ": give the job rank (>= 0)");
        }
        if (interval == null || interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("interval is " + interval + ": give a positive heartbeat interval");
        }
        long waitMs = Math.max(2_000, 3 * Math.max(1, interval.toMillis()));
        TcpStore conn = store.sibling(Duration.ofMillis(Math.max(10_000, waitMs)));
        Heartbeat hb = new Heartbeat(conn, scope, rank, interval, hostsServer, store.address());
        try {
            hb.beat(0);
        } catch (RuntimeException e) {
            boolean refused = !conn.isBroken() && e instanceof JcclException && !(e instanceof CollectiveTimeoutException);
            conn.close();
            if (refused) {
                JcclException je = (JcclException) e;
                throw new org.jccl.InvalidUsageException("rank " + rank + ": the store at " + store.address()
                        + " refused this rank's heartbeats: " + je.getMessage());
            }
            throw e;
        }
        hb.thread.start();
        LOG.info(rank, () -> "heartbeats every " + interval.toMillis() + " ms through the store at " + hb.where
                + " (" + scope + ")");
        return hb;
    }

    /**
     * Wraps {@code store} (a view of the store this heartbeat runs through, e.g. the {@link
     * PrefixStore} of an init) so that its {@code get} and {@code wait} also end, with a {@link
     * PeerFailureException} naming the rank, as soon as a rank of the job is declared dead, until
     * {@link GuardedStore#disarm()}. {@code Jccl.init} guards the rendezvous this way, so that a
     * rank that dies before it connects ends everyone's init within a heartbeat interval instead
     * of at the deadline. Closing the result stops this heartbeat, then closes {@code store}.
     */
    public GuardedStore guard(Store store) {
        return new GuardedStore(store, this);
    }

    /** Completed exceptionally with a {@link PeerFailureException} when the first rank dies. */
    CompletableFuture<Void> deathSignal() {
        return firstDeath;
    }

    // ------------------------------------------------------------------ Liveness

    @Override
    public boolean isMonitoring() {
        return monitoring && !closed;
    }

    @Override
    public Duration interval() {
        return interval;
    }

    @Override
    public long epoch() {
        return epoch;
    }

    @Override
    public Set<Integer> deadRanks() {
        return dead;
    }

    @Override
    public String deathReason(int r) {
        return reasons.get(r);
    }

    @Override
    public Map<Integer, Duration> silentRanks() {
        return silent;
    }

    @Override
    public void addListener(Listener listener) {
        if (listener == null) {
            throw new IllegalArgumentException("listener is null");
        }
        Map<Integer, String> known;
        synchronized (stateLock) {
            listeners.add(listener);
            known = reasons;
        }
        known.forEach(listener::rankDied);
    }

    @Override
    public void removeListener(Listener listener) {
        listeners.remove(listener);
    }

    /** How many warnings this heartbeat logged about the store (a lost store: one). */
    int warningsLogged() {
        return warnings.get();
    }

    /** The job rank whose heartbeats this sends. */
    public int rank() {
        return rank;
    }

    /** The scope (job namespace) of the heartbeats. */
    public String scope() {
        return scope;
    }

    // ------------------------------------------------------------------ the thread

    private void loop() {
        long next = System.nanoTime() + intervalNanos;
        while (!closed) {
            long wait = next - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(this, wait);
                continue;
            }
            // Fixed rate, but no burst after a pause (SIGSTOP, GC): the next beat is one interval on.
            next = Math.max(next + intervalNanos, System.nanoTime() + intervalNanos / 2);
            try {
                beat(0);
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                if (e instanceof CollectiveTimeoutException) {
                    if (!warnedSlow) {
                        warnedSlow = true;
                        warnings.incrementAndGet();
                        LOG.warn(rank, "the store at " + where + " did not answer a heartbeat within " + replyWaitMs
                                + " ms (the server is stopped, overloaded or unreachable); heartbeats go on");
                    }
                    continue;
                }
                storeLost(e);
                return;
            }
        }
    }

    /** Sends one heartbeat and applies the answer. */
    private void beat(int flags) {
        int f = flags | (hostsServer ? StoreProtocol.HB_HOSTS_SERVER : 0);
        HeartbeatReply r = conn.heartbeat(scope, rank, intervalMs, f, serverEpoch, replyWaitMs);
        if (warnedSlow) {
            warnedSlow = false;
            LOG.info(rank, () -> "the store at " + where + " answers heartbeats again");
        }
        apply(r);
    }

    private void apply(HeartbeatReply r) {
        Map<Integer, Duration> s = new TreeMap<>();
        r.silentMs().forEach((k, ms) -> {
            if (k != rank) {
                s.put(k, Duration.ofMillis(ms));
            }
        });
        silent = s.isEmpty() ? Map.of() : Collections.unmodifiableMap(s);
        if (!r.hasState()) {
            return;
        }
        serverEpoch = r.epoch();
        hostRank = r.hostRank();
        left = r.left();
        Map<Integer, String> fresh = new TreeMap<>();
        r.dead().forEach((k, why) -> {
            if (k != rank && !reasons.containsKey(k)) {
                fresh.put(k, why);
            }
        });
        declare(fresh);
    }

    /** Publishes new deaths: the sets, the epoch, the death signal, the log, the listeners. */
    private void declare(Map<Integer, String> fresh) {
        if (fresh.isEmpty()) {
            return;
        }
        List<Listener> tell;
        synchronized (stateLock) {
            TreeMap<Integer, String> all = new TreeMap<>(reasons);
            all.putAll(fresh);
            reasons = Collections.unmodifiableMap(all);
            dead = Collections.unmodifiableSet(new TreeSet<>(all.keySet()));
            epoch++;
            tell = List.copyOf(listeners);
        }
        Map.Entry<Integer, String> first = fresh.entrySet().iterator().next();
        firstDeath.completeExceptionally(new PeerFailureException(first.getKey(), "rank " + first.getKey()
                + " died: the store's heartbeat monitor declared it dead: " + first.getValue()));
        fresh.forEach((k, why) -> LOG.warn(rank, "rank " + k + " declared dead by the store's heartbeat monitor: " + why));
        for (Listener l : tell) {
            fresh.forEach((k, why) -> {
                try {
                    l.rankDied(k, why);
                } catch (RuntimeException e) {
                    LOG.warn(rank, "a Liveness listener failed: " + e);
                }
            });
        }
    }

    /** The connection is gone: one warning; the store's host rank is dead unless it left. */
    private void storeLost(RuntimeException e) {
        int host = hostRank;
        boolean hostDied = host >= 0 && host != rank && !left.contains(host) && !reasons.containsKey(host);
        warnings.incrementAndGet();
        LOG.warn(rank, "heartbeats stop: " + (conn.isBroken() ? "lost the connection to the store at " + where
                : "the store at " + where + " refused a heartbeat") + " (" + e.getMessage() + ")"
                + (hostDied ? "; rank " + host + ", whose process hosted the store, is declared dead"
                : "; ranks that die from now on are found by the transports and deadlines only"));
        if (hostDied) {
            declare(Map.of(host, "its process hosted the store at " + where + ", which went away (the process died, "
                    + "was killed, or exited)"));
        }
        monitoring = false; // after the death is published: a reader that sees false sees it
        conn.close();
    }

    // ------------------------------------------------------------------ close

    /**
     * Says goodbye (the rank left cleanly: the store does not declare it dead), stops the thread
     * and closes the connection. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        LockSupport.unpark(thread);
        try {
            thread.join(Math.max(1_000, replyWaitMs + 500));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!conn.isBroken()) {
            try {
                conn.heartbeat(scope, rank, intervalMs, StoreProtocol.HB_LEAVING, serverEpoch, Math.min(replyWaitMs, 2_000));
            } catch (RuntimeException e) {
                LOG.info(rank, () -> "no goodbye to the store at " + where + ": " + e.getMessage());
            }
        }
        conn.close();
        monitoring = false;
        LOG.info(rank, () -> "heartbeats stopped (" + scope + ")");
    }

    @Override
    public String toString() {
        return "Heartbeat[rank " + rank + " of " + scope + " every " + interval.toMillis() + " ms via " + where
                + (closed ? ", closed" : monitoring ? "" : ", store lost") + ", dead " + dead + "]";
    }
}
