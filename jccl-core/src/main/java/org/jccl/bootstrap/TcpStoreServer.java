package org.jccl.bootstrap;

import static org.jccl.bootstrap.StoreProtocol.*;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.jccl.JcclException;
import org.jccl.bootstrap.StoreProtocol.BodyReader;
import org.jccl.bootstrap.StoreProtocol.Frame;
import org.jccl.bootstrap.StoreProtocol.FrameWriter;
import org.jccl.bootstrap.StoreProtocol.ProtocolException;
import org.jccl.internal.Log;

/**
 * The server of the rendezvous store ({@link StoreProtocol} describes the wire format).
 *
 * <p>One virtual thread per connection reads requests and answers them; GET and WAIT on keys that
 * do not exist yet register a waiter and return at once, so a blocking GET never holds a thread
 * of the server, and the same connection keeps serving its other requests meanwhile. A waiter is
 * answered by whoever sets the key, or by a timer when its deadline passes. All data sits in
 * memory under one lock.
 *
 * <p>Hardening: at most {@link Limits#maxConnections()} connections (more are closed at once); the
 * handshake (and the token proof, when a token is set) must complete within {@link
 * Limits#handshakeTimeout()}; a frame once started must arrive within {@link Limits#frameTimeout()}
 * per read; any frame that breaks the protocol closes that connection only, with the reason
 * logged as a warning, and the server keeps serving the others.
 *
 * <p>Heartbeats ({@link StoreProtocol#OP_HEARTBEAT}): a connection that sent one is tied to its
 * (scope, rank); when it closes without the rank's goodbye, the server declares that rank dead
 * (logged as a warning) and every later heartbeat answer of that scope lists it. A rank that stops
 * sending heartbeats while its connection stays open is never declared dead, only reported as
 * silent. At most {@link #MAX_HEARTBEAT_SCOPES} scopes are tracked; a scope is forgotten once
 * every rank of it left cleanly. That state is kept by {@code StoreHeartbeats}, under this
 * server's lock.
 */
public final class TcpStoreServer implements AutoCloseable {
    static final Log LOG = Log.get(TcpStoreServer.class);
    private static final SecureRandom RANDOM = new SecureRandom();
    /** A connection's end reason when the peer's kernel reset it: a killed process's goodbye-less end, as an EOF is. */
    static final String PEER_RESET = "the peer reset the connection (its process died or was killed)";

    /**
     * Server limits.
     *
     * @param maxConnections         most open connections (handshaking ones included)
     * @param handshakeTimeout       time a new connection has to complete the handshake and proof
     * @param frameTimeout           read timeout once a frame has started to arrive
     * @param maxWaitersPerConnection most pending GET/WAIT requests of one connection
     */
    public record Limits(int maxConnections, Duration handshakeTimeout, Duration frameTimeout, int maxWaitersPerConnection) {
        /** Defaults: 4096 connections, 10 s handshake, 60 s frame reads, 65536 waiters per connection. */
        public static final Limits DEFAULT = new Limits(4096, Duration.ofSeconds(10), Duration.ofSeconds(60), 1 << 16);

        /** Validates. */
        public Limits {
            if (maxConnections < 1) {
                throw new IllegalArgumentException("maxConnections is " + maxConnections + ": must be >= 1");
            }
            Objects.requireNonNull(handshakeTimeout, "handshakeTimeout");
            Objects.requireNonNull(frameTimeout, "frameTimeout");
            if (handshakeTimeout.isNegative() || handshakeTimeout.isZero() || frameTimeout.isNegative() || frameTimeout.isZero()) {
                throw new IllegalArgumentException("handshakeTimeout and frameTimeout must be positive");
            }
            if (maxWaitersPerConnection < 1) {
                throw new IllegalArgumentException("maxWaitersPerConnection is " + maxWaitersPerConnection + ": must be >= 1");
            }
        }
    }

    private final ServerSocket serverSocket;
    private final InetSocketAddress address;
    private final String token;
    private final Limits limits;
    private final ScheduledExecutorService timer;
    private final Thread acceptor;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /** Guards {@link #data} and {@link #waiters}. */
    private final ReentrantLock lock = new ReentrantLock();
    private final Map<String, byte[]> data = new HashMap<>();
    private final Map<String, List<Waiter>> waiters = new HashMap<>();
    /** Heartbeats of the connections' ranks; guarded by {@link #lock}. */
    private final StoreHeartbeats heartbeats;

    /** Most heartbeat scopes (jobs) tracked at once; more get an ERROR answer. */
    public static final int MAX_HEARTBEAT_SCOPES = 4096;

    private TcpStoreServer(ServerSocket serverSocket, String token, Limits limits) {
        this.serverSocket = serverSocket;
        this.address = (InetSocketAddress) serverSocket.getLocalSocketAddress();
        this.token = token;
        this.limits = limits;
        this.heartbeats = new StoreHeartbeats(describeAddress());
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
            Thread th = new Thread(r, "jccl-store-timer-" + address.getPort());
            th.setDaemon(true);
            return th;
        });
        t.setRemoveOnCancelPolicy(true);
        this.timer = t;
        this.acceptor = Thread.ofPlatform().daemon().name("jccl-store-accept-" + address.getPort()).unstarted(this::acceptLoop);
    }

    /**
     * Starts a server. {@code bind} null means 127.0.0.1 on an ephemeral port; port 0 means an
     * ephemeral port. {@code token} null or empty: no authentication.
     *
     * @throws JcclException when the address cannot be bound (its cause tells why, e.g. a {@link java.net.BindException})
     */
    public static TcpStoreServer start(InetSocketAddress bind, String token) {
        return start(bind, token, Limits.DEFAULT);
    }

    /** {@link #start(InetSocketAddress, String)} with explicit limits. */
    public static TcpStoreServer start(InetSocketAddress bind, String token, Limits limits) {
        try {
            return bind(bind, token, limits);
        } catch (IOException e) {
            throw new JcclException("cannot start the jccl store at " + describe(bind) + ": " + e.getMessage(), e);
        }
    }

    /** Binds and starts; the IOException tells bind failures apart for {@link TcpStore#open}. */
    static TcpStoreServer bind(InetSocketAddress bind, String token, Limits limits) throws IOException {
        Objects.requireNonNull(limits, "limits");
        InetSocketAddress where = bind != null ? bind : new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        if (where.isUnresolved()) {
            throw new java.net.UnknownHostException("store host '" + where.getHostString() + "' does not resolve");
        }
        ServerSocket ss = new ServerSocket();
        try {
            ss.setReuseAddress(true);
            ss.bind(where, 1024);
        } catch (IOException e) {
            ss.close();
            throw e;
        }
        TcpStoreServer server = new TcpStoreServer(ss, token == null || token.isEmpty() ? null : token, limits);
        server.acceptor.start();
        LOG.info(-1, () -> "store server listening on " + server.describeAddress() + (server.token != null ? " (token required)" : ""));
        return server;
    }

    /** The bound port. */
    public int port() {
        return address.getPort();
    }

    /** The bound address. */
    public InetSocketAddress address() {
        return address;
    }

    /** Number of open client connections. */
    public int connectionCount() {
        return connections.size();
    }

    /** Number of keys held. */
    public int keyCount() {
        lock.lock();
        try {
            return data.size();
        } finally {
            lock.unlock();
        }
    }

    /** Number of pending GET/WAIT requests (waiters) over all connections. */
    public int waiterCount() {
        lock.lock();
        try {
            int n = 0;
            for (Connection c : connections) {
                n += c.myWaiters.size();
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Ranks of heartbeat scope {@code scope} declared dead so far, with the reason (empty when the
     * scope is unknown). For diagnosis and tests.
     */
    public Map<Integer, String> deadRanks(String scope) {
        lock.lock();
        try {
            return heartbeats.deadRanks(scope);
        } finally {
            lock.unlock();
        }
    }

    private static String describe(InetSocketAddress a) {
        return a == null ? "127.0.0.1:0" : a.getHostString() + ":" + a.getPort();
    }

    String describeAddress() {
        return address.getAddress().getHostAddress() + ":" + address.getPort();
    }

    @Override
    public String toString() {
        return "TcpStoreServer[" + describeAddress() + ", connections=" + connections.size() + "]";
    }

    // ---------------------------------------------------------------------------------------------
    // Accepting and connections

    private void acceptLoop() {
        while (!closed) {
            Socket s;
            try {
                s = serverSocket.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn(-1, "store " + describeAddress() + ": accept failed: " + e);
                    sleepQuietly(10);
                }
                continue;
            }
            if (closed) {
                closeQuietly(s);
                break;
            }
            if (connections.size() >= limits.maxConnections()) {
                LOG.warn(-1, "store " + describeAddress() + ": refusing connection from " + s.getRemoteSocketAddress()
                        + ": already " + connections.size() + " connections (the limit)");
                closeQuietly(s);
                continue;
            }
            Connection c = new Connection(s);
            connections.add(c);
            if (closed) {
                // close() may have missed it
                c.close();
                break;
            }
            Thread.ofVirtual().name("jccl-store-conn-" + s.getRemoteSocketAddress()).start(c::run);
        }
    }

    /** One client connection. */
    private final class Connection {
        final Socket socket;
        final String remote;
        final ReentrantLock writeLock = new ReentrantLock();
        /** Waiters of this connection; guarded by the server lock. */
        final Set<Waiter> myWaiters = new HashSet<>();
        OutputStream out;
        volatile boolean open = true;
        /** The heartbeat scope and rank this connection is tied to; guarded by the server lock. */
        final StoreHeartbeats.Tie hb;
        /** Why {@link #run} ended, for the death of a tied rank. */
        volatile String endReason;

        Connection(Socket socket) {
            this.socket = socket;
            this.remote = String.valueOf(socket.getRemoteSocketAddress());
            this.hb = new StoreHeartbeats.Tie(remote);
        }

        void run() {
            String reason = null;
            try {
                socket.setTcpNoDelay(true);
                DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 1 << 16));
                out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
                reason = handshake(in);
                if (reason == null) {
                    reason = serve(in);
                }
            } catch (ProtocolException e) {
                reason = "protocol violation: " + e.getMessage();
            } catch (SocketTimeoutException e) {
                reason = "read timed out inside a frame (" + limits.frameTimeout() + ")";
            } catch (EOFException e) {
                reason = "connection ended inside a frame" + (e.getMessage() != null ? ": " + e.getMessage() : "");
            } catch (java.net.SocketException e) {
                if (!closed && open) {
                    // A killed process's kernel resets, rather than closes, a socket that still holds unread data.
                    reason = String.valueOf(e.getMessage()).contains("Connection reset") ? PEER_RESET : "I/O error: " + e;
                }
            } catch (IOException e) {
                if (!closed && open) {
                    reason = "I/O error: " + e;
                }
            } catch (RuntimeException e) {
                reason = "internal error: " + e;
            } finally {
                if (reason != null && !closed) {
                    LOG.warn(-1, "store " + describeAddress() + ": closing connection from " + remote + ": " + reason);
                }
                endReason = reason;
                close();
            }
        }

        /** Returns null when the handshake passed, else the reason to close. */
        private String handshake(DataInputStream in) throws IOException {
            ScheduledFuture<?> guard = timer.schedule(this::handshakeExpired, limits.handshakeTimeout().toMillis(), TimeUnit.MILLISECONDS);
            try {
                socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, limits.handshakeTimeout().toMillis())));
                byte[] hello = new byte[HELLO_BYTES];
                try {
                    in.readFully(hello);
                } catch (EOFException e) {
                    return "connection ended during the handshake";
                }
                int magic = ((hello[0] & 0xFF) << 24) | ((hello[1] & 0xFF) << 16) | ((hello[2] & 0xFF) << 8) | (hello[3] & 0xFF);
                if (magic != MAGIC) {
                    return "not a jccl store client (magic 0x" + Integer.toHexString(magic) + ", expected 0x"
                            + Integer.toHexString(MAGIC) + ")";
                }
                int version = ((hello[4] & 0xFF) << 8) | (hello[5] & 0xFF);
                byte[] nonce = token != null ? new byte[NONCE_BYTES] : null;
                if (nonce != null) {
                    RANDOM.nextBytes(nonce);
                }
                byte[] welcome = new byte[HELLO_BYTES + (nonce != null ? NONCE_BYTES : 0)];
                putInt(welcome, 0, MAGIC);
                welcome[4] = (byte) (VERSION >>> 8);
                welcome[5] = (byte) VERSION;
                short flags = nonce != null ? FLAG_AUTH : 0;
                welcome[6] = (byte) (flags >>> 8);
                welcome[7] = (byte) flags;
                if (nonce != null) {
                    System.arraycopy(nonce, 0, welcome, HELLO_BYTES, NONCE_BYTES);
                }
                out.write(welcome);
                out.flush();
                if (version != VERSION) {
                    return "client speaks protocol version " + version + ", this server speaks " + VERSION;
                }
                if (nonce != null) {
                    byte[] proof = new byte[NONCE_BYTES];
                    try {
                        in.readFully(proof);
                    } catch (EOFException e) {
                        return "connection ended before the token proof (client without the job token?)";
                    }
                    if (!proofMatches(token, nonce, proof)) {
                        out.write(AUTH_REJECTED);
                        out.flush();
                        return "wrong token proof (client has another job token)";
                    }
                    out.write(AUTH_OK);
                    out.flush();
                }
                return null;
            } catch (SocketTimeoutException | SocketException e) {
                if (guard.isDone() || e instanceof SocketTimeoutException) {
                    return "handshake not completed within " + limits.handshakeTimeout();
                }
                throw e;
            } finally {
                guard.cancel(false);
            }
        }

        private void handshakeExpired() {
            // Bounds the whole handshake, not only each read.
            closeQuietly(socket);
        }

        /** Serves requests until the client leaves (null) or breaks the protocol (the reason). */
        private String serve(DataInputStream in) throws IOException {
            int frameTimeout = (int) Math.min(Integer.MAX_VALUE, Math.max(1, limits.frameTimeout().toMillis()));
            while (!closed) {
                socket.setSoTimeout(0);
                int first = in.read();
                if (first < 0) {
                    return null; // clean end between frames
                }
                socket.setSoTimeout(frameTimeout);
                Frame f = StoreProtocol.readFrameRest(first, in);
                handle(f);
            }
            return null;
        }

        void send(byte[] frame) throws IOException {
            writeLock.lock();
            try {
                out.write(frame);
                out.flush();
            } finally {
                writeLock.unlock();
            }
        }

        /** Sends from a thread other than this connection's (waiter completions). */
        void sendAsync(byte[] frame) {
            if (!open) {
                return;
            }
            Thread.ofVirtual().start(() -> {
                try {
                    send(frame);
                } catch (IOException e) {
                    close();
                }
            });
        }

        void close() {
            if (!open) {
                return;
            }
            open = false;
            connections.remove(this);
            closeQuietly(socket);
            String died = null;
            lock.lock();
            try {
                died = closed ? null : heartbeats.connectionClosed(hb, endReason);
                for (Waiter w : myWaiters) {
                    w.done = true;
                    if (w.timeout != null) {
                        w.timeout.cancel(false);
                    }
                    unregister(w);
                }
                myWaiters.clear();
            } finally {
                lock.unlock();
            }
            if (died != null) {
                LOG.warn(-1, "store " + describeAddress() + ": " + died);
            }
        }

        // -----------------------------------------------------------------------------------------
        // Requests

        private void handle(Frame f) throws IOException {
            BodyReader r = f.body();
            int id = f.id();
            switch (f.code()) {
                case OP_SET -> {
                    String key = r.readKey();
                    byte[] value = r.readBytes("value");
                    r.end();
                    List<Runnable> wake = new ArrayList<>();
                    lock.lock();
                    try {
                        data.put(key, value);
                        keyAppeared(key, value, wake);
                    } finally {
                        lock.unlock();
                    }
                    wake.forEach(Runnable::run);
                    send(new FrameWriter(id, ST_OK, 0).toByteArray());
                }
                case OP_GET -> {
                    String key = r.readKey();
                    long ms = r.readLong("timeout");
                    r.end();
                    waitFor(id, OP_GET, List.of(key), ms);
                }
                case OP_TRY_GET -> {
                    String key = r.readKey();
                    r.end();
                    byte[] v;
                    lock.lock();
                    try {
                        v = data.get(key);
                    } finally {
                        lock.unlock();
                    }
                    send(valueOrNotFound(id, v));
                }
                case OP_ADD -> {
                    String key = r.readKey();
                    long delta = r.readLong("delta");
                    r.end();
                    List<Runnable> wake = new ArrayList<>();
                    byte[] reply;
                    lock.lock();
                    try {
                        byte[] cur = data.get(key);
                        if (cur != null && cur.length != 8) {
                            reply = error(id, "ADD on key '" + shortKey(key) + "': its value has " + cur.length
                                    + " bytes and is not a counter (a counter is 8 bytes, little-endian)");
                        } else {
                            long now = (cur == null ? 0 : decodeCounter(cur)) + delta;
                            byte[] v = encodeCounter(now);
                            data.put(key, v);
                            if (cur == null) {
                                keyAppeared(key, v, wake);
                            }
                            reply = new FrameWriter(id, ST_OK, 8).writeLong(now).toByteArray();
                        }
                    } finally {
                        lock.unlock();
                    }
                    wake.forEach(Runnable::run);
                    send(reply);
                }
                case OP_CMP_SET -> {
                    String key = r.readKey();
                    byte[] expected = r.readBytes("expected");
                    byte[] desired = r.readBytes("desired");
                    r.end();
                    List<Runnable> wake = new ArrayList<>();
                    byte[] after;
                    lock.lock();
                    try {
                        byte[] cur = data.get(key);
                        if (expected.length == 0 ? cur == null : cur != null && Arrays.equals(cur, expected)) {
                            data.put(key, desired);
                            if (cur == null) {
                                keyAppeared(key, desired, wake);
                            }
                            after = desired;
                        } else {
                            after = cur;
                        }
                    } finally {
                        lock.unlock();
                    }
                    wake.forEach(Runnable::run);
                    send(valueOrNotFound(id, after));
                }
                case OP_DELETE -> {
                    String key = r.readKey();
                    r.end();
                    boolean existed;
                    lock.lock();
                    try {
                        existed = data.remove(key) != null;
                    } finally {
                        lock.unlock();
                    }
                    send(new FrameWriter(id, ST_OK, 1).writeByte(existed ? 1 : 0).toByteArray());
                }
                case OP_WAIT -> {
                    List<String> keys = r.readKeys();
                    long ms = r.readLong("timeout");
                    r.end();
                    waitFor(id, OP_WAIT, keys, ms);
                }
                case OP_NUM_KEYS -> {
                    r.end();
                    long n;
                    lock.lock();
                    try {
                        n = data.size();
                    } finally {
                        lock.unlock();
                    }
                    send(new FrameWriter(id, ST_OK, 8).writeLong(n).toByteArray());
                }
                case OP_HEARTBEAT -> {
                    String scope = r.readKey();
                    int rank = r.readInt("rank");
                    int intervalMs = r.readInt("interval");
                    int flags = r.readByte("flags");
                    long known = r.readLong("known epoch");
                    r.end();
                    if (rank < 0) {
                        throw new ProtocolException("heartbeat rank " + Integer.toUnsignedString(rank) + " is over 2^31-1");
                    }
                    if (intervalMs <= 0) {
                        throw new ProtocolException("heartbeat interval " + Integer.toUnsignedString(intervalMs)
                                + " ms is outside [1, 2^31-1]");
                    }
                    if ((flags & ~(HB_LEAVING | HB_HOSTS_SERVER)) != 0) {
                        throw new ProtocolException("unknown heartbeat flags 0x" + Integer.toHexString(flags));
                    }
                    byte[] reply;
                    lock.lock();
                    try {
                        reply = heartbeats.heartbeat(hb, id, scope, rank, intervalMs, flags, known);
                    } finally {
                        lock.unlock();
                    }
                    send(reply);
                }
                default -> throw new ProtocolException("unknown opcode " + (f.code() & 0xFF));
            }
        }

        private void waitFor(int id, byte op, List<String> keys, long ms) throws IOException {
            byte[] reply = null;
            lock.lock();
            try {
                LinkedHashSet<String> missing = new LinkedHashSet<>();
                for (String k : keys) {
                    if (!data.containsKey(k)) {
                        missing.add(k);
                    }
                }
                if (!open) {
                    return; // closed meanwhile (a failed send): nobody to answer
                }
                if (missing.isEmpty()) {
                    reply = readyReply(id, op, data.get(keys.get(0)));
                } else if (ms <= 0) {
                    reply = timeoutReply(id, op, missing);
                } else if (myWaiters.size() >= limits.maxWaitersPerConnection()) {
                    reply = error(id, "too many pending GET/WAIT requests on one connection (limit "
                            + limits.maxWaitersPerConnection() + ")");
                } else {
                    Waiter w = new Waiter(this, id, op, missing);
                    myWaiters.add(w);
                    for (String k : missing) {
                        waiters.computeIfAbsent(k, x -> new ArrayList<>(2)).add(w);
                    }
                    w.timeout = timer.schedule(() -> expire(w), ms, TimeUnit.MILLISECONDS);
                }
            } finally {
                lock.unlock();
            }
            if (reply != null) {
                send(reply);
            }
        }
    }

    /** A pending GET or WAIT. Fields guarded by the server lock. */
    private static final class Waiter {
        final Connection conn;
        final int id;
        final byte op;
        final LinkedHashSet<String> missing;
        ScheduledFuture<?> timeout;
        boolean done;

        Waiter(Connection conn, int id, byte op, LinkedHashSet<String> missing) {
            this.conn = conn;
            this.id = id;
            this.op = op;
            this.missing = missing;
        }
    }

    /** Under the lock: a key came into existence; completes the waiters it releases. */
    private void keyAppeared(String key, byte[] value, List<Runnable> wake) {
        List<Waiter> list = waiters.remove(key);
        if (list == null) {
            return;
        }
        for (Waiter w : list) {
            if (w.done) {
                continue;
            }
            w.missing.remove(key);
            if (w.missing.isEmpty()) {
                w.done = true;
                w.timeout.cancel(false);
                w.conn.myWaiters.remove(w);
                byte[] reply = readyReply(w.id, w.op, value);
                Connection c = w.conn;
                wake.add(() -> c.sendAsync(reply));
            }
        }
    }

    /** Timer: a waiter's deadline passed. */
    private void expire(Waiter w) {
        byte[] reply;
        lock.lock();
        try {
            if (w.done) {
                return;
            }
            w.done = true;
            w.conn.myWaiters.remove(w);
            unregister(w);
            reply = timeoutReply(w.id, w.op, w.missing);
        } finally {
            lock.unlock();
        }
        w.conn.sendAsync(reply);
    }

    /** Under the lock: removes a waiter from the per-key lists of its missing keys. */
    private void unregister(Waiter w) {
        for (String k : w.missing) {
            List<Waiter> list = waiters.get(k);
            if (list != null) {
                list.remove(w);
                if (list.isEmpty()) {
                    waiters.remove(k);
                }
            }
        }
    }

    private static byte[] valueReply(int id, byte[] v) {
        return new FrameWriter(id, ST_OK, 4 + v.length).writeBytes(v).toByteArray();
    }

    /** The answer to a GET or WAIT whose keys are all set: GET's value (of its one key), WAIT's empty OK. */
    private static byte[] readyReply(int id, byte op, byte[] value) {
        return op == OP_GET ? valueReply(id, value) : new FrameWriter(id, ST_OK, 0).toByteArray();
    }

    private static byte[] valueOrNotFound(int id, byte[] v) {
        return v == null ? new FrameWriter(id, ST_NOT_FOUND, 0).toByteArray() : valueReply(id, v);
    }

    private static byte[] timeoutReply(int id, byte op, Set<String> missing) {
        FrameWriter w = new FrameWriter(id, ST_TIMEOUT, 64);
        if (op == OP_WAIT) {
            w.writeInt(missing.size());
            for (String k : missing) {
                w.writeKey(keyBytes(k));
            }
        }
        return w.toByteArray();
    }

    static byte[] error(int id, String message) {
        return new FrameWriter(id, ST_ERROR, message.length() + 2).writeMessage(message).toByteArray();
    }

    static String shortKey(String key) {
        return key.length() <= 120 ? key : key.substring(0, 120) + "...";
    }

    private static void putInt(byte[] b, int off, int v) {
        b[off] = (byte) (v >>> 24);
        b[off + 1] = (byte) (v >>> 16);
        b[off + 2] = (byte) (v >>> 8);
        b[off + 3] = (byte) v;
    }

    private static void closeQuietly(java.io.Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Closing

    /**
     * Waits until every client has disconnected or {@code maxWait} has passed, then closes. The
     * store that hosts the server uses this so that peers still doing their last operations
     * can finish.
     */
    public void closeAfterClients(Duration maxWait) {
        long deadline = System.nanoTime() + maxWait.toNanos();
        while (!connections.isEmpty() && System.nanoTime() - deadline < 0 && !closed) {
            sleepQuietly(10);
        }
        close();
    }

    /** Stops accepting, answers every pending GET/WAIT with an error and closes every connection. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closeQuietly(serverSocket);
        List<Thread> senders = new ArrayList<>();
        lock.lock();
        try {
            for (List<Waiter> list : waiters.values()) {
                for (Waiter w : list) {
                    if (w.done) {
                        continue;
                    }
                    w.done = true;
                    w.timeout.cancel(false);
                    byte[] reply = error(w.id, "the store server at " + describeAddress() + " is shutting down");
                    Connection c = w.conn;
                    senders.add(Thread.ofVirtual().unstarted(() -> {
                        try {
                            c.send(reply);
                        } catch (IOException ignored) {
                            // the connection closes below
                        }
                    }));
                }
            }
            waiters.clear();
        } finally {
            lock.unlock();
        }
        senders.forEach(Thread::start);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
        for (Thread t : senders) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                t.join(Duration.ofNanos(left));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (Connection c : List.copyOf(connections)) {
            c.close();
        }
        timer.shutdownNow();
        try {
            acceptor.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LOG.info(-1, () -> "store server on " + describeAddress() + " closed");
    }
}
