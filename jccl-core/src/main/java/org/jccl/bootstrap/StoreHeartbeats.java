package org.jccl.bootstrap;

import static org.jccl.bootstrap.StoreProtocol.*;
import static org.jccl.bootstrap.TcpStoreServer.MAX_HEARTBEAT_SCOPES;
import static org.jccl.bootstrap.TcpStoreServer.error;
import static org.jccl.bootstrap.TcpStoreServer.shortKey;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import org.jccl.bootstrap.StoreProtocol.FrameWriter;
import org.jccl.internal.Log;

/**
 * The heartbeat registry of a {@link TcpStoreServer} ({@link StoreProtocol#OP_HEARTBEAT}): per
 * scope (a job), the ranks that send heartbeats, each alive, left cleanly or dead, the scope's
 * epoch (bumped on every change, so an answer lists the ranks only when the asker has not seen
 * them) and the rank hosting the server. A connection that sent a heartbeat is tied to its
 * (scope, rank) ({@link Tie}); when it closes without the rank's goodbye the rank is dead.
 *
 * <p>Not thread-safe: every method runs under the server's lock, which also guards every {@link
 * Tie}.
 */
final class StoreHeartbeats {
    /** The server's logger: the messages keep the name they had when this code was in the server. */
    private static final Log LOG = TcpStoreServer.LOG;
    private static final int HB_ALIVE = 0, HB_LEFT = 1, HB_DEAD = 2;

    /** The heartbeat side of one client connection: the scope and rank it is tied to (null / -1: none). */
    static final class Tie {
        /** The connection's remote address, for messages. */
        final String remote;
        String scope;
        int rank = -1;

        Tie(String remote) {
            this.remote = remote;
        }
    }

    /** The ranks of one heartbeat scope. */
    private static final class HbScope {
        final TreeMap<Integer, HbMember> members = new TreeMap<>();
        long epoch = 1;
        int hostRank = -1;
    }

    /** One rank of a heartbeat scope. */
    private static final class HbMember {
        int state = HB_ALIVE;
        Tie conn;
        String remote;
        long lastSeen;
        long intervalNanos;
        String reason;
    }

    /** Heartbeat state per scope. */
    private final Map<String, HbScope> scopes = new HashMap<>();
    /** The server's address, for messages. */
    private final String server;

    StoreHeartbeats(String server) {
        this.server = server;
    }

    /** One heartbeat of the connection tied by {@code c}; returns the answer. */
    byte[] heartbeat(Tie c, int id, String scope, int rank, int intervalMs, int flags, long known) {
        long now = System.nanoTime();
        HbScope sc = scopes.get(scope);
        if (c.scope == null) {
            if (sc == null) {
                if (scopes.size() >= MAX_HEARTBEAT_SCOPES) {
                    return error(id, "the store tracks heartbeats of " + MAX_HEARTBEAT_SCOPES + " jobs already (the limit)");
                }
                sc = new HbScope();
                scopes.put(scope, sc);
            }
            HbMember m = sc.members.get(rank);
            if (m != null && m.state == HB_ALIVE) {
                return error(id, "rank " + rank + " of " + shortKey(scope) + " already sends heartbeats from " + m.remote
                        + ": two processes claim the same rank (give every process its own JCCL_RANK / RANK)");
            }
            if (m != null && m.state == HB_DEAD) {
                return error(id, "rank " + rank + " of " + shortKey(scope) + " was declared dead (" + m.reason
                        + "): a dead rank cannot rejoin; start a new communicator with Jccl.init");
            }
            if (m == null && sc.members.size() >= MAX_HEARTBEAT_RANKS) {
                return error(id, "heartbeats of " + MAX_HEARTBEAT_RANKS + " ranks in " + shortKey(scope) + " already (the limit)");
            }
            if (m == null) {
                m = new HbMember();
                sc.members.put(rank, m);
            }
            m.state = HB_ALIVE;
            m.conn = c;
            m.remote = c.remote;
            m.reason = null;
            sc.epoch++;
            c.scope = scope;
            c.rank = rank;
            LOG.info(-1, () -> "store " + server + ": rank " + rank + " of " + shortKey(scope)
                    + " sends heartbeats every " + intervalMs + " ms from " + c.remote);
        } else if (!c.scope.equals(scope) || c.rank != rank) {
            return error(id, "this connection sends the heartbeats of rank " + c.rank + " of " + shortKey(c.scope)
                    + ", not of rank " + rank + " of " + shortKey(scope) + ": use one connection per rank");
        }
        HbMember m = sc.members.get(rank);
        m.lastSeen = now;
        m.intervalNanos = intervalMs * 1_000_000L;
        if ((flags & HB_HOSTS_SERVER) != 0 && sc.hostRank != rank) {
            sc.hostRank = rank;
            sc.epoch++;
        }
        if ((flags & HB_LEAVING) != 0) {
            m.state = HB_LEFT;
            m.conn = null;
            c.scope = null;
            c.rank = -1;
            sc.epoch++;
            LOG.info(-1, () -> "store " + server + ": rank " + rank + " of " + shortKey(scope) + " left cleanly");
        }
        byte[] reply = state(id, sc, rank, known, now);
        boolean anyoneLeft = false;
        for (HbMember x : sc.members.values()) {
            anyoneLeft |= x.state != HB_LEFT;
        }
        if (!anyoneLeft) {
            scopes.remove(scope); // every rank left cleanly: nobody needs this scope any more
        }
        return reply;
    }

    /** The OK answer for {@code asker} of scope {@code sc}. */
    private static byte[] state(int id, HbScope sc, int asker, long known, long now) {
        FrameWriter w = new FrameWriter(id, ST_OK, 32);
        w.writeLong(sc.epoch);
        if (known != sc.epoch) {
            w.writeByte(1);
            w.writeInt(sc.hostRank);
            int dead = 0, left = 0;
            for (HbMember m : sc.members.values()) {
                dead += m.state == HB_DEAD ? 1 : 0;
                left += m.state == HB_LEFT ? 1 : 0;
            }
            w.writeInt(dead);
            for (Map.Entry<Integer, HbMember> e : sc.members.entrySet()) {
                if (e.getValue().state == HB_DEAD) {
                    w.writeInt(e.getKey());
                    w.writeMessage(e.getValue().reason);
                }
            }
            w.writeInt(left);
            for (Map.Entry<Integer, HbMember> e : sc.members.entrySet()) {
                if (e.getValue().state == HB_LEFT) {
                    w.writeInt(e.getKey());
                }
            }
        } else {
            w.writeByte(0);
        }
        int silent = 0;
        for (Map.Entry<Integer, HbMember> e : sc.members.entrySet()) {
            HbMember m = e.getValue();
            silent += e.getKey() != asker && m.state == HB_ALIVE && now - m.lastSeen > 2 * m.intervalNanos ? 1 : 0;
        }
        w.writeInt(silent);
        for (Map.Entry<Integer, HbMember> e : sc.members.entrySet()) {
            HbMember m = e.getValue();
            if (e.getKey() != asker && m.state == HB_ALIVE && now - m.lastSeen > 2 * m.intervalNanos) {
                w.writeInt(e.getKey());
                w.writeLong((now - m.lastSeen) / 1_000_000L);
            }
        }
        return w.toByteArray();
    }

    /**
     * The connection tied by {@code c} closed (the server is not shutting down: its caller checks);
     * when it carried a live rank's heartbeats, that rank is dead. {@code endReason}: why the
     * connection ended, or null when it closed without a goodbye. Returns the message to log, or
     * null.
     */
    String connectionClosed(Tie c, String endReason) {
        if (c.scope == null) {
            return null;
        }
        HbScope sc = scopes.get(c.scope);
        HbMember m = sc == null ? null : sc.members.get(c.rank);
        if (m == null || m.conn != c || m.state != HB_ALIVE) {
            return null;
        }
        String why = endReason;
        String at = java.time.LocalTime.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS).toString();
        m.state = HB_DEAD;
        m.conn = null;
        m.reason = "its heartbeat connection to the store (from " + c.remote + ") "
                + (why == null ? "closed without a goodbye"
                        : why.equals(TcpStoreServer.PEER_RESET) ? "closed without a goodbye (reset by the peer's kernel)"
                        : "was dropped (" + why + ")") + " at " + at
                + ": the process died, was killed, or exited without closing jccl";
        sc.epoch++;
        String msg = "rank " + c.rank + " of " + shortKey(c.scope) + " declared dead: " + m.reason;
        c.scope = null;
        c.rank = -1;
        return msg;
    }

    /** Ranks of {@code scope} declared dead so far, with the reason (empty when the scope is unknown). */
    Map<Integer, String> deadRanks(String scope) {
        HbScope sc = scopes.get(scope);
        Map<Integer, String> out = new TreeMap<>();
        if (sc != null) {
            sc.members.forEach((r, m) -> {
                if (m.state == HB_DEAD) {
                    out.put(r, m.reason);
                }
            });
        }
        return out;
    }
}
