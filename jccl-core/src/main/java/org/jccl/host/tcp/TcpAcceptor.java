package org.jccl.host.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntPredicate;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.internal.Log;

/**
 * Accepts and checks the connections of the higher ranks during setup, all handshakes at once
 * on one selector (non-blocking): a caller that sends nothing, too little, too slowly or
 * garbage holds no one else up. Every handshake must complete within {@link
 * #HANDSHAKE_NANOS}; at most {@link #MAX_PENDING} run at once (a new one closes the oldest);
 * the hello is a fixed 64 bytes, so nothing a caller sends allocates more. A caller that does
 * not speak the protocol, is not expected, or (with a job token) does not prove the token is
 * closed with the reason logged; the listener keeps serving the others and closes with the
 * setup, so a communicator never listens after it is created.
 *
 * <p>The listening half of {@link TcpMesh#open}: it runs on its own thread while the setup
 * connects to the lower ranks, and hands over the accepted channels by slot.
 */
final class TcpAcceptor implements Runnable {
    /** The transport's logger: the messages keep the name they had when this was a nested class. */
    private static final Log LOG = TcpTransport.LOG;
    /** Time a caller has for its whole handshake (slow callers cannot hold a slot longer). */
    static final long HANDSHAKE_NANOS = 10_000_000_000L;
    static final int MAX_PENDING = TcpTransport.ACCEPT_MAX_PENDING;
    /** Refusals logged one by one; later ones are counted and summed up at the end. */
    static final int LOGGED_REFUSALS = 8;

    final ServerSocketChannel server;
    final String name;
    final long comm;
    final int rank, size, k, chunk, expected;
    final String token;
    final long deadline;
    final IntPredicate collPeer, p2pPeer;
    final ConcurrentHashMap<Integer, SocketChannel> accepted = new ConcurrentHashMap<>();
    final java.util.ArrayDeque<Pending> pending = new java.util.ArrayDeque<>();
    volatile Throwable error;
    volatile boolean stop;
    Thread thread;
    int refused;

    /** One caller's handshake: the welcome goes out, 64 hello bytes come in, one result byte goes out. */
    static final class Pending {
        final SocketChannel ch;
        final long start = System.nanoTime();
        final byte[] nonce = Handshake.nonce();
        final ByteBuffer in = ByteBuffer.allocate(Handshake.HELLO_BYTES);
        ByteBuffer out;
        SelectionKey key;
        String who;
        /** Set once the hello is in: then {@link #out} holds the result byte to send (or null: close at once). */
        boolean decided;
        /** The accepted connection's slot (peer * (sockets + 1) + index), or -1. */
        int slot = -1;
        /** Why the caller is refused, or null. */
        String refusal;

        Pending(SocketChannel ch) {
            this.ch = ch;
        }
    }

    TcpAcceptor(ServerSocketChannel server, String name, long comm, int rank, int size, int k, int chunk, String token,
             int expected, long deadline, IntPredicate collPeer, IntPredicate p2pPeer) {
        this.server = server;
        this.name = name;
        this.comm = comm;
        this.rank = rank;
        this.size = size;
        this.k = k;
        this.chunk = chunk;
        this.token = token;
        this.expected = expected;
        this.deadline = deadline;
        this.collPeer = collPeer;
        this.p2pPeer = p2pPeer;
    }

    @Override
    public void run() {
        try (Selector sel = Selector.open()) {
            server.configureBlocking(false);
            server.register(sel, SelectionKey.OP_ACCEPT);
            while (accepted.size() < expected && !stop) {
                long now = System.nanoTime();
                long left = deadline - now;
                if (left <= 0) {
                    return;
                }
                long wait = Math.min(200_000_000L, left);
                Pending oldest = pending.peekFirst();
                if (oldest != null) {
                    wait = Math.min(wait, oldest.start + HANDSHAKE_NANOS - now);
                }
                sel.select(Math.max(1, wait / 1_000_000));
                for (SelectionKey key : sel.selectedKeys()) {
                    if (key.attachment() instanceof Pending p) {
                        if (key.isValid()) {
                            step(p);
                        }
                    } else {
                        SocketChannel ch;
                        while ((ch = server.accept()) != null) {
                            begin(ch, sel);
                        }
                    }
                }
                sel.selectedKeys().clear();
                now = System.nanoTime();
                while (!pending.isEmpty() && now - pending.peekFirst().start > HANDSHAKE_NANOS) {
                    drop(pending.peekFirst(), "did not complete the handshake within "
                            + HANDSHAKE_NANOS / 1_000_000_000L + " s");
                }
            }
        } catch (IOException | RuntimeException e) {
            error = e;
        } finally {
            for (Pending p : List.copyOf(pending)) {
                drop(p, null);
            }
            if (refused > LOGGED_REFUSALS) {
                LOG.warn(rank, "communicator " + name + ": refused " + (refused - LOGGED_REFUSALS)
                        + " more connection attempt(s) during setup (the first " + LOGGED_REFUSALS + " are logged above)");
            }
        }
    }

    private void begin(SocketChannel ch, Selector sel) {
        Pending p = new Pending(ch);
        try {
            p.who = String.valueOf(ch.getRemoteAddress());
            ch.configureBlocking(false);
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
            if (pending.size() >= MAX_PENDING) {
                drop(pending.peekFirst(), "had not completed its handshake when " + MAX_PENDING
                        + " more callers were waiting (the oldest handshake makes room)");
            }
            pending.addLast(p);
            p.out = ByteBuffer.wrap(Handshake.welcome(token != null, p.nonce));
            p.key = ch.register(sel, SelectionKey.OP_READ, p);
            step(p);
        } catch (IOException | RuntimeException e) {
            drop(p, "failed during its handshake: " + e);
        }
    }

    /** Moves one handshake on: writes what is due, reads the hello, decides, finishes. */
    private void step(Pending p) {
        try {
            if (p.out.hasRemaining()) {
                p.ch.write(p.out);
            }
            if (!p.decided) {
                int n = p.ch.read(p.in);
                if (n < 0) {
                    drop(p, "closed the connection after " + p.in.position() + " of the " + Handshake.HELLO_BYTES
                            + " hello bytes");
                    return;
                }
                if (!p.in.hasRemaining()) {
                    decide(p);
                    if (p.refusal != null && p.out == null) {
                        drop(p, p.refusal);
                        return;
                    }
                    p.ch.write(p.out);
                }
            }
            if (p.decided && !p.out.hasRemaining()) {
                pending.remove(p);
                if (p.refusal != null) {
                    drop(p, p.refusal);
                    return;
                }
                p.key.cancel();
                accepted.put(p.slot, p.ch);
                return;
            }
            int ops = p.decided ? 0 : SelectionKey.OP_READ;
            if (p.out.hasRemaining()) {
                ops |= SelectionKey.OP_WRITE;
            }
            p.key.interestOps(ops);
        } catch (IOException | RuntimeException e) {
            drop(p, "failed during its handshake: " + e);
        }
    }

    /** Checks a complete hello: sets the result to send (or a refusal without one: not our protocol). */
    private void decide(Pending p) {
        p.decided = true;
        Handshake.Hello h;
        try {
            h = Handshake.parseHello(p.in.array());
        } catch (Handshake.VersionException e) {
            refuse(p, Handshake.R_VERSION, "speaks " + e.getMessage());
            return;
        } catch (IOException e) {
            p.refusal = "is not a jccl transport endpoint (" + e.getMessage() + ")";
            p.out = null;
            return;
        }
        boolean little = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
        byte result = Handshake.R_OK;
        // With a token, the proof comes first: a caller that cannot prove it learns nothing
        // about the communicator (its id, the ranks and sockets still expected, the settings).
        if (token != null && (!h.hasToken() || !Handshake.proofValid(token, p.nonce, h))) {
            result = Handshake.R_AUTH;
        } else if (h.comm() != comm) {
            result = Handshake.R_COMM;
        } else if (h.littleEndian() != little) {
            result = Handshake.R_BYTE_ORDER;
        } else if (h.sockets() != k || h.chunk() != chunk) {
            result = Handshake.R_SETTINGS;
        } else if (h.to() != rank || h.from() < rank || h.from() >= size || h.index() > k
                || (h.index() < k ? h.from() == rank || !collPeer.test(h.from()) : !p2pPeer.test(h.from()))
                || accepted.containsKey(h.from() * (k + 1) + h.index())) {
            result = Handshake.R_PEER;
        }
        if (result != Handshake.R_OK) {
            String claim = "claims to be rank " + h.from() + " (socket " + h.index() + " of " + h.sockets() + ") and ";
            refuse(p, result, claim + switch (result) {
                case Handshake.R_COMM -> "names another communicator (id " + Long.toHexString(h.comm()) + ")";
                case Handshake.R_BYTE_ORDER -> "has another byte order";
                case Handshake.R_SETTINGS -> "has other transport settings (" + h.sockets() + " sockets per peer, "
                        + h.chunk() + "-byte chunks; here " + k + " and " + chunk + ")";
                case Handshake.R_PEER -> "is not a connection this rank expects (to rank " + h.to() + ", or already connected)";
                default -> h.hasToken() ? "failed the job token proof" : "has no job token (this job requires one)";
            });
            return;
        }
        p.slot = h.from() * (k + 1) + h.index();
        p.out = ByteBuffer.wrap(new byte[] {Handshake.R_OK});
    }

    private static void refuse(Pending p, byte code, String why) {
        p.refusal = why;
        p.out = ByteBuffer.wrap(new byte[] {code});
    }

    /** Closes a handshake; logs the reason (null: setup is over, nothing to log). */
    private void drop(Pending p, String why) {
        pending.remove(p);
        if (p.key != null) {
            p.key.cancel();
        }
        TcpTransport.closeQuietly(p.ch);
        if (why != null && ++refused <= LOGGED_REFUSALS) {
            LOG.warn(rank, "communicator " + name + ": closed a connection from " + p.who + " during setup: it " + why);
        }
    }

    void await(long deadline) {
        try {
            thread.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AbortedException("interrupted while waiting for the connections of communicator " + name);
        }
        if (error != null) {
            throw new JcclException("rank " + rank + ": accepting connections of communicator " + name + " failed: " + error, error);
        }
        if (accepted.size() < expected) {
            List<Integer> missing = new ArrayList<>();
            for (int p = rank; p < size; p++) {
                for (int i = 0; i <= k; i++) {
                    boolean needed = i < k ? p != rank && collPeer.test(p) : p2pPeer.test(p);
                    if (needed && !accepted.containsKey(p * (k + 1) + i) && !missing.contains(p)) {
                        missing.add(p);
                    }
                }
            }
            throw new CollectiveTimeoutException("rank " + rank + " of communicator " + name + ": rank(s) " + missing
                    + " did not connect before the deadline (they did not start, cannot reach this rank's address, "
                    + "or failed: see their output; check JCCL_SOCKET_IFNAME and firewalls)", missing);
        }
    }

    void stop() {
        stop = true;
        if (thread != null) {
            try {
                thread.join(1_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
