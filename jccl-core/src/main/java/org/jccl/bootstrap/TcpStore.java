package org.jccl.bootstrap;

import static org.jccl.bootstrap.StoreProtocol.*;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.jccl.CollectiveTimeoutException;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.bootstrap.StoreProtocol.BodyReader;
import org.jccl.bootstrap.StoreProtocol.Frame;
import org.jccl.bootstrap.StoreProtocol.FrameWriter;
import org.jccl.bootstrap.StoreProtocol.HeartbeatReply;
import org.jccl.bootstrap.StoreProtocol.ProtocolException;
import org.jccl.internal.Log;

/**
 * Client of a {@link TcpStoreServer} ({@link StoreProtocol} describes the wire format).
 *
 * <p><b>Threads.</b> A client is thread-safe and uses one connection. Every request carries an
 * id; a reader thread hands each response to the request that waits for it. So any number of
 * threads may share a client, and a GET blocked on a missing key (it waits on the server, the
 * client never polls) does not hold back a SET from another thread on the same client.
 *
 * <p><b>Deadlines.</b> GET and WAIT send their timeout to the server, which answers TIMEOUT when
 * it passes; the client then throws {@link CollectiveTimeoutException} naming the key(s) and the
 * store address. Should the server not answer at all, the client gives up a few seconds after
 * the deadline. Other requests wait at most the timeout given at connect time.
 *
 * <p>A lost connection fails every pending and later request with a {@link JcclException} that
 * names the store; there is no automatic reconnection (a new client sees all data set before).
 */
public final class TcpStore implements Store {
    private static final Log LOG = Log.get(TcpStore.class);
    /** Extra time a GET/WAIT waits for the server's TIMEOUT answer before giving up on its own. */
    private static final long GRACE_MS = 5_000;
    /** Longest read timeout of the client side of the handshake (the connect deadline bounds it too). */
    private static final int HANDSHAKE_READ_MS = 15_000;

    private final String host;
    private final int port;
    private final String token;
    private final String where;
    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private final ReentrantLock writeLock = new ReentrantLock();
    private final ConcurrentHashMap<Integer, CompletableFuture<Frame>> pending = new ConcurrentHashMap<>();
    private final AtomicInteger nextId = new AtomicInteger();
    private final long opTimeoutMs;
    private volatile JcclException broken;
    private volatile boolean closed;
    private volatile TcpStoreServer ownedServer;
    /** Whether the store required a token and this client proved it. */
    private boolean authenticated;

    private TcpStore(String host, int port, String token, Socket socket, DataInputStream in, OutputStream out,
                     Duration opTimeout) {
        this.host = host;
        this.port = port;
        this.token = token;
        this.where = hostPort(host, port);
        this.socket = socket;
        this.in = in;
        this.out = out;
        this.opTimeoutMs = Math.max(1, StoreProtocol.millis(opTimeout));
        Thread.ofVirtual().name("jccl-store-client-" + where).start(this::readLoop);
    }

    // ---------------------------------------------------------------------------------------------
    // Opening

    /**
     * Connects to the store at host:port; when {@code hostServer} (rank 0 of a job whose store no
     * launcher serves), starts the server there first. The returned store owns the server it
     * started: closing it waits up to 2 s for the other clients to leave, then stops the server.
     * Clients retry refused connections with a short backoff until {@code timeout}.
     *
     * <p>When {@code hostServer} and the address is taken, this rank does not join whatever
     * listens there (two jobs on one port would merge into one communicator): it fails at once
     * naming the address, unless it has a {@code token} and the store there requires and accepts
     * it (a store set up for this very job, e.g. by a launcher). A launcher that serves the store
     * tells rank 0 so ({@code JCCL_STORE_SERVED}); then rank 0 is a plain client
     * ({@code hostServer} false). A store host that is no address of this machine cannot be served
     * here: rank 0 connects as a client (something else must serve it).
     *
     * @throws CollectiveTimeoutException when no store answers within {@code timeout}
     * @throws JcclException              when the address is taken, the store rejects the token or
     *                                    is not a jccl store
     */
    public static Store open(String host, int port, boolean hostServer, String token, Duration timeout) {
        checkArgs(host, port, timeout);
        if (hostServer) {
            TcpStoreServer server = null;
            try {
                server = TcpStoreServer.bind(new InetSocketAddress(host, port), token, TcpStoreServer.Limits.DEFAULT);
            } catch (BindException e) {
                if (isLocal(host)) {
                    return joinTaken(host, port, token, timeout, e);
                }
                LOG.warn(-1, "the store host " + host + " is not an address of this machine, so this rank (rank 0) "
                        + "cannot serve the store there and connects as a client: something else (a launcher) must "
                        + "serve it, or rank 0 must run on " + host);
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException("store host '" + host + "' does not resolve: check JCCL_STORE / MASTER_ADDR", e);
            } catch (IOException e) {
                throw new JcclException("cannot start the jccl store at " + hostPort(host, port) + ": " + e.getMessage(), e);
            }
            if (server != null) {
                try {
                    InetSocketAddress a = server.address();
                    TcpStore client = connect(a.getAddress().getHostAddress(), a.getPort(), token, timeout);
                    client.ownedServer = server;
                    return client;
                } catch (RuntimeException | Error e) {
                    server.close();
                    throw e;
                }
            }
        }
        return connect(host, port, token, timeout);
    }

    /**
     * Rank 0 found its store address taken: joins the store there only when it requires this
     * rank's token and accepts it; otherwise fails naming the address and the way out.
     */
    private static Store joinTaken(String host, int port, String token, Duration timeout, BindException cause) {
        String where = hostPort(host, port);
        String wayOut = ". Rank 0 serves the job's store and does not join a store it did not start (two jobs on one "
                + "port would merge into one communicator): give this job another port (JCCL_STORE=host:port, or "
                + "MASTER_PORT), or stop the job or program that holds " + where + "; if a "
                + "launcher serves this job's store there, it sets JCCL_STORE_SERVED=1 for the ranks";
        if (token == null || token.isEmpty()) {
            throw new JcclException("the store address " + where + " is already in use (" + cause.getMessage()
                    + ") by another jccl job's store or another program" + wayOut, cause);
        }
        TcpStore client;
        try {
            client = connect(host, port, token, timeout);
        } catch (JcclException e) {
            throw new JcclException("the store address " + where + " is already in use, and not by a store of this job ("
                    + e.getMessage() + ")" + wayOut, e);
        }
        if (!client.authenticated) {
            client.close();
            throw new JcclException("the store address " + where + " is already in use by a jccl store that does not "
                    + "require this job's token (another job's store)" + wayOut, cause);
        }
        LOG.info(-1, () -> "store address " + where + " is in use by a store that accepted this job's token; "
                + "connected to it as a client");
        return client;
    }

    /**
     * Connects to the store at host:port, retrying refused connections with a short backoff until
     * {@code timeout}; the same {@code timeout} bounds each later non-waiting request.
     *
     * @throws CollectiveTimeoutException when no store answers within {@code timeout}
     * @throws JcclException              when the store rejects the token or is not a jccl store
     */
    public static TcpStore connect(String host, int port, String token, Duration timeout) {
        checkArgs(host, port, timeout);
        if (port == 0) {
            throw new IllegalArgumentException("store port is 0: a client needs the port the store listens on");
        }
        String t = token == null || token.isEmpty() ? null : token;
        long start = System.nanoTime();
        long deadline = start + saturatedNanos(timeout);
        long backoffMs = 20;
        Exception last = null;
        int attempts = 0;
        while (true) {
            attempts++;
            InetAddress[] addrs;
            try {
                addrs = InetAddress.getAllByName(host);
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException("store host '" + host + "' does not resolve: check JCCL_STORE / MASTER_ADDR "
                        + "(or the Slurm node list)", e);
            }
            for (InetAddress a : addrs) {
                long left = deadline - System.nanoTime();
                try {
                    return attempt(host, port, new InetSocketAddress(a, port), t, timeout,
                            (int) Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(Math.max(left, 0)), 10_000)), deadline);
                } catch (IOException e) {
                    last = e;
                }
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                throw new CollectiveTimeoutException("no jccl store answered at " + hostPort(host, port) + " within "
                        + timeout + " (" + attempts + " attempts over " + waited + " ms; last error: " + last
                        + "). Rank 0 hosts the store: start rank 0 (or the launcher that serves the store), and check "
                        + "that the store address (JCCL_STORE, or MASTER_ADDR/MASTER_PORT) is the same on every rank",
                        List.of());
            }
            try {
                Thread.sleep(Math.min(backoffMs, Math.max(1, TimeUnit.NANOSECONDS.toMillis(left))));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new JcclException("interrupted while connecting to the store at " + hostPort(host, port), e);
            }
            backoffMs = Math.min(backoffMs * 2, 500);
        }
    }

    /** True when {@code host} names an address of this machine (or cannot be checked). */
    private static boolean isLocal(String host) {
        try {
            for (InetAddress a : InetAddress.getAllByName(host)) {
                if (a.isLoopbackAddress() || a.isAnyLocalAddress() || java.net.NetworkInterface.getByInetAddress(a) != null) {
                    return true;
                }
            }
            return false;
        } catch (IOException e) {
            return true;
        }
    }

    private static void checkArgs(String host, int port, Duration timeout) {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("store host is " + (host == null ? "null" : "empty") + ": give a host name or address");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("store port is " + port + ": use a TCP port 0..65535");
        }
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout is " + timeout + ": give a positive duration");
        }
    }

    /** One connection and handshake. IOExceptions are worth a retry; JcclExceptions are final. */
    private static TcpStore attempt(String host, int port, InetSocketAddress addr, String token, Duration opTimeout,
                                    int connectMs, long deadline) throws IOException {
        String where = hostPort(host, port);
        Socket s = new Socket();
        boolean ok = false;
        try {
            s.setTcpNoDelay(true);
            s.connect(addr, connectMs);
            // The handshake's reads end by the connect deadline (JCCL_TIMEOUT), at most 15 s each.
            long leftMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            int readMs = (int) Math.max(1, Math.min(leftMs, HANDSHAKE_READ_MS));
            s.setSoTimeout(readMs);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 1 << 16));
            OutputStream out = new BufferedOutputStream(s.getOutputStream(), 1 << 16);
            byte[] hello = new byte[HELLO_BYTES];
            putInt(hello, 0, MAGIC);
            hello[4] = (byte) (VERSION >>> 8);
            hello[5] = (byte) VERSION;
            out.write(hello);
            out.flush();
            byte[] welcome = new byte[HELLO_BYTES];
            try {
                in.readFully(welcome);
            } catch (java.net.SocketTimeoutException e) {
                throw new CollectiveTimeoutException("the process at " + where + " is not a jccl store (it accepted the "
                        + "connection but sent no jccl handshake within " + readMs + " ms; a jccl store answers at once): "
                        + "point JCCL_STORE (or MASTER_ADDR/MASTER_PORT) at the job's store, or give the job a free port",
                        List.of());
            } catch (EOFException e) {
                throw new EOFException("the store at " + where + " closed the connection during the handshake "
                        + "(it may be at its connection limit, or shutting down)");
            }
            int magic = getInt(welcome, 0);
            if (magic != MAGIC) {
                throw new JcclException("the process at " + where + " is not a jccl store (it answered 0x"
                        + Integer.toHexString(magic) + " instead of the jccl magic; a torchrun/torch TCPStore or another "
                        + "service may own that port): point JCCL_STORE at a free host:port");
            }
            int version = ((welcome[4] & 0xFF) << 8) | (welcome[5] & 0xFF);
            if (version != VERSION) {
                throw new JcclException("the jccl store at " + where + " speaks protocol version " + version
                        + " but this jccl speaks version " + VERSION + ": run the same jccl version on every rank");
            }
            int flags = ((welcome[6] & 0xFF) << 8) | (welcome[7] & 0xFF);
            if ((flags & FLAG_AUTH) != 0) {
                byte[] nonce = new byte[NONCE_BYTES];
                in.readFully(nonce);
                if (token == null) {
                    throw new JcclException("store at " + where + " rejected the job token: the store requires a job token "
                            + "and this process has none; set JCCL_TOKEN (or Options.withToken) to the job's token");
                }
                out.write(proof(token, nonce));
                out.flush();
                int result;
                try {
                    result = in.read();
                } catch (IOException e) {
                    result = -1;
                }
                if (result == AUTH_REJECTED) {
                    throw new JcclException("store at " + where + " rejected the job token: this process's token "
                            + "(JCCL_TOKEN or Options.withToken) differs from the store's; give every rank the same token");
                }
                if (result != AUTH_OK) {
                    // Not a verdict on the token: a store cuts off a handshake that takes longer than it allows
                    // (10 s by default), e.g. a process stalled by a debugger or a heavy profiler, or it is closing
                    throw new JcclException("store at " + where + " closed the connection before answering the token "
                            + "proof (answer " + result + "): it allows a few seconds for the whole handshake, so this "
                            + "process may have stalled (a debugger, a profiler, an overloaded machine), or the store is "
                            + "shutting down; retry once the process runs freely");
                }
            } else if (token != null) {
                LOG.info(-1, () -> "store at " + where + " does not require a token; connected without proving one");
            }
            s.setSoTimeout(0);
            TcpStore store = new TcpStore(host, port, token, s, in, out, opTimeout);
            store.authenticated = (flags & FLAG_AUTH) != 0;
            ok = true;
            return store;
        } finally {
            if (!ok) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // failing anyway
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Store operations

    @Override
    public void set(String key, byte[] value) {
        byte[] k = keyBytes(key);
        checkValue(value, "value");
        int id = newId();
        Frame f = call(id, new FrameWriter(id, OP_SET, 6 + k.length + value.length).writeKey(k).writeBytes(value),
                opTimeoutMs, "set", key);
        expect(f, "set", key, ST_OK);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        return get(key, timeout, null);
    }

    /**
     * {@link #get(String, Duration)} that also ends, with the {@link org.jccl.PeerFailureException}
     * that completes {@code cancel}, when one does (a rank the caller waits for was declared dead).
     */
    byte[] get(String key, Duration timeout, CompletableFuture<Void> cancel) {
        byte[] k = keyBytes(key);
        long ms = waitMillis(timeout);
        int id = newId();
        Frame f = call(id, new FrameWriter(id, OP_GET, 10 + k.length).writeKey(k).writeLong(ms),
                saturatedAdd(ms, GRACE_MS), "get", key, cancel);
        if (f.code() == ST_TIMEOUT) {
            throw new CollectiveTimeoutException("store get of key '" + TcpStoreServer.shortKey(key) + "' timed out after "
                    + timeout + " at the store " + where + ": no rank set that key (is a rank missing, dead or behind?)",
                    List.of());
        }
        expect(f, "get", key, ST_OK);
        return readValue(f);
    }

    @Override
    public byte[] tryGet(String key) {
        byte[] k = keyBytes(key);
        int id = newId();
        Frame f = call(id, new FrameWriter(id, OP_TRY_GET, 2 + k.length).writeKey(k), opTimeoutMs, "tryGet", key);
        return valueOrNull(f, "tryGet", key);
    }

    @Override
    public long add(String key, long delta) {
        byte[] k = keyBytes(key);
        int id = newId();
        Frame f = call(id, new FrameWriter(id, OP_ADD, 10 + k.length).writeKey(k).writeLong(delta), opTimeoutMs, "add", key);
        expect(f, "add", key, ST_OK);
        return readBody(f, r -> r.readLong("counter"));
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        byte[] k = keyBytes(key);
        byte[] exp = expected == null ? new byte[0] : checkValue(expected, "expected");
        checkValue(desired, "desired");
        int id = newId();
        Frame f = call(id, new FrameWriter(id, OP_CMP_SET, 10 + k.length + exp.length + desired.length)
                .writeKey(k).writeBytes(exp).writeBytes(desired), opTimeoutMs, "compareSet", key);
        return valueOrNull(f, "compareSet", key);
    }

    @Override
    public boolean delete(String key) {
        byte[] k = keyBytes(key);
        int id = newId();
        Frame f = call(id, new FrameWriter(id, OP_DELETE, 2 + k.length).writeKey(k), opTimeoutMs, "delete", key);
        expect(f, "delete", key, ST_OK);
        return readBody(f, r -> r.readByte("existed")) != 0;
    }

    @Override
    public void wait(List<String> keys, Duration timeout) {
        wait(keys, timeout, null);
    }

    /** {@link #wait(List, Duration)} that also ends when {@code cancel} completes exceptionally. */
    void wait(List<String> keys, Duration timeout, CompletableFuture<Void> cancel) {
        if (keys == null) {
            throw new IllegalArgumentException("keys is null");
        }
        if (keys.isEmpty()) {
            return;
        }
        if (keys.size() > MAX_WAIT_KEYS) {
            throw new IllegalArgumentException("wait on " + keys.size() + " keys: the limit is " + MAX_WAIT_KEYS + " per call");
        }
        long ms = waitMillis(timeout);
        List<byte[]> ks = new ArrayList<>(keys.size());
        int bytes = 0;
        for (String key : keys) {
            byte[] k = keyBytes(key);
            ks.add(k);
            bytes += 2 + k.length;
        }
        if (bytes + 16L > MAX_FRAME) {
            throw new IllegalArgumentException("wait on " + keys.size() + " keys of " + bytes + " bytes in all: too large for one request");
        }
        int id = newId();
        FrameWriter w = new FrameWriter(id, OP_WAIT, bytes + 12).writeInt(ks.size());
        for (byte[] k : ks) {
            w.writeKey(k);
        }
        w.writeLong(ms);
        String what = keys.size() == 1 ? keys.get(0) : keys.size() + " keys";
        Frame f = call(id, w, saturatedAdd(ms, GRACE_MS), "wait", what, cancel);
        if (f.code() == ST_TIMEOUT) {
            List<String> missing = readBody(f, BodyReader::readKeys);
            throw new CollectiveTimeoutException("store wait timed out after " + timeout + " at the store " + where + ": "
                    + missing.size() + " of " + keys.size() + " keys never appeared: " + listKeys(missing)
                    + " (is a rank missing, dead or behind?)", List.of());
        }
        expect(f, "wait", what, ST_OK);
        endOfBody(f);
    }

    @Override
    public long numKeys() {
        int id = newId();
        Frame f = call(id, new FrameWriter(id, OP_NUM_KEYS, 0), opTimeoutMs, "numKeys", null);
        expect(f, "numKeys", null, ST_OK);
        return readBody(f, r -> r.readLong("count"));
    }

    /**
     * Closes the connection. The store that started the server then waits up to 2 s for the
     * other clients to disconnect (so that peers finish their last operations) and stops it.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        fail(new JcclException("the client of the store at " + where + " was closed"));
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        TcpStoreServer server = ownedServer;
        if (server != null) {
            server.closeAfterClients(Duration.ofSeconds(2));
        }
    }

    /**
     * One heartbeat of {@code rank} of {@code scope} ({@link StoreProtocol#OP_HEARTBEAT}), waiting
     * at most {@code waitMs} for the answer.
     *
     * @throws CollectiveTimeoutException when no answer came in time (the connection stays usable)
     * @throws JcclException              when the store refused it (ERROR) or the connection is lost
     */
    HeartbeatReply heartbeat(String scope, int rank, int intervalMs, int flags, long knownEpoch, long waitMs) {
        byte[] k = keyBytes(scope);
        int id = newId();
        Frame f = call(id, new FrameWriter(id, OP_HEARTBEAT, 19 + k.length).writeKey(k).writeInt(rank).writeInt(intervalMs)
                .writeByte(flags).writeLong(knownEpoch), waitMs, "heartbeat", null, null);
        expect(f, "heartbeat", null, ST_OK);
        try {
            return HeartbeatReply.parse(f.body());
        } catch (ProtocolException e) {
            throw protocolBroken(e);
        }
    }

    /**
     * A new connection to the same store with the same token (the heartbeats' own socket, so that
     * no request of this one ever delays them). Its non-waiting requests wait at most {@code
     * opTimeout}.
     */
    TcpStore sibling(Duration opTimeout) {
        return connect(host, port, token, opTimeout);
    }

    /** True once the connection is lost or closed. */
    boolean isBroken() {
        return closed || broken != null;
    }

    /** The server this store started (it hosts the store), or null when it is only a client. */
    public TcpStoreServer server() {
        return ownedServer;
    }

    /** "host:port" of the store. */
    public String address() {
        return where;
    }

    @Override
    public String toString() {
        return "TcpStore[" + where + (ownedServer != null ? ", hosting" : "") + (closed ? ", closed" : "") + "]";
    }

    // ---------------------------------------------------------------------------------------------
    // Requests and responses

    private int newId() {
        return nextId.incrementAndGet();
    }

    private Frame call(int id, FrameWriter request, long waitMs, String op, String key) {
        return call(id, request, waitMs, op, key, null);
    }

    private Frame call(int id, FrameWriter request, long waitMs, String op, String key, CompletableFuture<Void> cancel) {
        if (closed) {
            throw new InvalidUsageException(op + " on a closed store client (" + where + ")");
        }
        JcclException b = broken;
        if (b != null) {
            throw lost(b, op, key);
        }
        byte[] frame = request.toByteArray();
        CompletableFuture<Frame> future = new CompletableFuture<>();
        pending.put(id, future);
        b = broken;
        if (b != null) {
            pending.remove(id);
            throw lost(b, op, key);
        }
        writeLock.lock();
        try {
            out.write(frame);
            out.flush();
        } catch (IOException e) {
            pending.remove(id);
            JcclException why = new JcclException("lost the connection to the store at " + where + " while sending: " + e, e);
            fail(why);
            throw lost(why, op, key);
        } finally {
            writeLock.unlock();
        }
        if (cancel != null) {
            // A death the caller waits on ends the wait; the server's late answer is then dropped.
            cancel.whenComplete((v, ex) -> {
                if (ex != null) {
                    future.completeExceptionally(ex);
                }
            });
        }
        try {
            return future.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            pending.remove(id);
            throw new CollectiveTimeoutException("the store at " + where + " did not answer " + op
                    + (key != null ? " of key '" + TcpStoreServer.shortKey(key) + "'" : "") + " within " + waitMs
                    + " ms (the server is overloaded, stopped or unreachable)", List.of());
        } catch (InterruptedException e) {
            pending.remove(id);
            Thread.currentThread().interrupt();
            throw new JcclException("interrupted during store " + op + (key != null ? " of key '" + TcpStoreServer.shortKey(key) + "'" : ""), e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof org.jccl.PeerFailureException pf) {
                pending.remove(id);
                throw new org.jccl.PeerFailureException(pf.rank(), pf.getMessage() + " (while waiting in store " + op
                        + (key != null ? " of key '" + TcpStoreServer.shortKey(key) + "'" : "") + ")", pf);
            }
            throw lost(c instanceof JcclException je ? je : new JcclException(String.valueOf(c), c), op, key);
        }
    }

    private JcclException lost(JcclException why, String op, String key) {
        if (why instanceof InvalidUsageException) {
            return new InvalidUsageException(op + " on a closed store client (" + where + ")");
        }
        return new JcclException("store " + op + (key != null ? " of key '" + TcpStoreServer.shortKey(key) + "'" : "")
                + " failed: " + why.getMessage(), why);
    }

    private void expect(Frame f, String op, String key, byte status) {
        if (f.code() == status) {
            return;
        }
        if (f.code() == ST_ERROR) {
            String msg = readBody(f, BodyReader::readMessage);
            throw new JcclException("the store at " + where + " refused " + op
                    + (key != null ? " of key '" + TcpStoreServer.shortKey(key) + "'" : "") + ": " + msg);
        }
        throw protocolBroken(new ProtocolException("unexpected status " + f.code() + " for " + op));
    }

    /** The value of an OK response, or null for NOT_FOUND (tryGet, compareSet). */
    private byte[] valueOrNull(Frame f, String op, String key) {
        if (f.code() == ST_NOT_FOUND) {
            endOfBody(f);
            return null;
        }
        expect(f, op, key, ST_OK);
        return readValue(f);
    }

    private byte[] readValue(Frame f) {
        return readBody(f, r -> r.readBytes("value"));
    }

    /** One field of a response body that holds nothing else; a malformed body breaks the connection. */
    private <T> T readBody(Frame f, BodyField<T> field) {
        try {
            BodyReader r = f.body();
            T v = field.read(r);
            r.end();
            return v;
        } catch (ProtocolException e) {
            throw protocolBroken(e);
        }
    }

    @FunctionalInterface
    private interface BodyField<T> {
        T read(BodyReader r) throws ProtocolException;
    }

    private void endOfBody(Frame f) {
        try {
            f.body().end();
        } catch (ProtocolException e) {
            throw protocolBroken(e);
        }
    }

    private JcclException protocolBroken(ProtocolException e) {
        JcclException why = new JcclException("the store at " + where + " broke the protocol: " + e.getMessage(), e);
        fail(why);
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        return why;
    }

    private void readLoop() {
        try {
            while (true) {
                Frame f = StoreProtocol.readFrame(in);
                if (f == null) {
                    fail(new JcclException("the store at " + where + " closed the connection (the server stopped, "
                            + "or rank 0 exited)"));
                    return;
                }
                if (f.code() < ST_OK || f.code() > ST_ERROR) {
                    throw new ProtocolException("unknown status " + f.code());
                }
                CompletableFuture<Frame> future = pending.remove(f.id());
                if (future != null) {
                    future.complete(f);
                }
            }
        } catch (IOException e) {
            if (closed) {
                fail(new InvalidUsageException("closed"));
            } else {
                fail(new JcclException("lost the connection to the store at " + where + ": " + e, e));
            }
        } finally {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    /** Marks the connection broken and fails every pending request. */
    private void fail(JcclException why) {
        if (broken == null) {
            broken = why;
        }
        JcclException b = broken;
        for (Integer id : List.copyOf(pending.keySet())) {
            CompletableFuture<Frame> f = pending.remove(id);
            if (f != null) {
                f.completeExceptionally(closed ? new InvalidUsageException("closed") : b);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Helpers

    private static long waitMillis(Duration timeout) {
        if (timeout == null) {
            throw new IllegalArgumentException("timeout is null: give a Duration (e.g. Duration.ofSeconds(30))");
        }
        return StoreProtocol.millis(timeout);
    }

    private static String listKeys(List<String> keys) {
        StringBuilder sb = new StringBuilder("[");
        int n = Math.min(keys.size(), 20);
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(TcpStoreServer.shortKey(keys.get(i)));
        }
        if (keys.size() > n) {
            sb.append(", ... ").append(keys.size() - n).append(" more");
        }
        return sb.append(']').toString();
    }

    static String hostPort(String host, int port) {
        return (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
    }

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }

    private static long saturatedNanos(Duration d) {
        try {
            return Math.min(d.toNanos(), Long.MAX_VALUE / 4);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 4;
        }
    }

    private static void putInt(byte[] b, int off, int v) {
        b[off] = (byte) (v >>> 24);
        b[off + 1] = (byte) (v >>> 16);
        b[off + 2] = (byte) (v >>> 8);
        b[off + 3] = (byte) v;
    }

    private static int getInt(byte[] b, int off) {
        return ((b[off] & 0xFF) << 24) | ((b[off + 1] & 0xFF) << 16) | ((b[off + 2] & 0xFF) << 8) | (b[off + 3] & 0xFF);
    }
}
