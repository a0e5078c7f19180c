package org.jccl.bootstrap;

import static org.jccl.bootstrap.TorchStoreProtocol.*;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.bootstrap.TorchStoreProtocol.Generation;
import org.jccl.bootstrap.TorchStoreProtocol.Op;
import org.jccl.internal.Log;

/**
 * A {@link Store} that is a client of a store speaking PyTorch's c10d TCPStore protocol ({@link
 * TorchStoreProtocol}): torch's own server ({@code torch.distributed.TCPStore(..., is_master=True)},
 * torchrun's agent store, {@code init_process_group}'s {@code tcp://} / {@code env://} store) or
 * jccl's {@link TorchStoreServer}. Its keys are torch's keys of the same name ({@value
 * TorchStoreProtocol#KEY_PREFIX} before each on the wire, as torch clients do), so a Python
 * process sees what a jccl rank sets and the other way round. {@code JCCL_STORE_PROTOCOL=torch}
 * makes {@link org.jccl.Jccl#init} use it.
 *
 * <p>Torch 2.x and 1.x servers speak incompatible generations; {@link #connect} with a null
 * generation tries 2.x (VALIDATE and PING, answered by a 2.x server and by jccl's) and falls back
 * to 1.x when the server closes the connection on it, as a 1.x server does.
 *
 * <p>What differs from jccl's own store ({@link TcpStore}): one request at a time on one
 * connection (operations of several threads take turns, and a long {@link #get} or {@link #wait}
 * holds the others back); {@link #add} counters read back as ASCII decimal ({@code "5"}), not 8
 * bytes; {@link #compareSet} on an absent key with a non-empty {@code expected} answers {@code
 * expected} (torch's server does); no heartbeats (the store has no such request: a dead rank is
 * found by the transports and the deadlines only). On a 1.x server a timed-out wait leaves the
 * connection unusable (1.x cannot cancel a wait): the next operation opens a new one.
 */
public final class TorchStore implements Store {
    private static final Log LOG = Log.get(TorchStore.class);

    private final String host;
    private final int port;
    private final Duration timeout;
    private final Generation gen;
    private final TorchStoreServer server;
    private Socket socket;
    private InputStream in;
    private OutputStream out;
    private boolean closed;

    private TorchStore(String host, int port, Duration timeout, Generation gen, Socket socket, TorchStoreServer server)
            throws IOException {
        this.host = host;
        this.port = port;
        this.timeout = timeout;
        this.gen = gen;
        this.server = server;
        attach(socket);
    }

    /**
     * Connects to the torch-protocol store at {@code host:port}, retrying until {@code timeout}
     * while nothing listens there yet.
     *
     * @param generation the server's protocol generation, or null to find it out (2.x first)
     * @param timeout    how long to try to connect; also each request's answer limit
     * @throws CollectiveTimeoutException when no store answered within {@code timeout}
     */
    public static TorchStore connect(String host, int port, Generation generation, Duration timeout) {
        return connect(host, port, generation, timeout, null);
    }

    /**
     * Serves a {@link TorchStoreServer} on {@code port} of every address when {@code hostServer}
     * (rank 0 of a job without a launcher's store), then connects to {@code host:port} and counts
     * itself as a worker ({@link #countAsWorker()}, as every torch client made with a world size
     * does: a torch process hosting the store with {@code world_size=N} waits for N of them); the
     * server closes with the returned store.
     */
    public static Store open(String host, int port, boolean hostServer, Generation generation, Duration timeout) {
        TorchStoreServer server = hostServer ? TorchStoreServer.start(new InetSocketAddress(port)) : null;
        try {
            TorchStore s = hostServer ? connect("127.0.0.1", server.port(), Generation.TORCH_2, timeout, server)
                    : connect(host, port, generation, timeout);
            try {
                s.countAsWorker();
            } catch (RuntimeException e) {
                s.close();
                throw e;
            }
            return s;
        } catch (RuntimeException e) {
            if (server != null) {
                server.close();
            }
            throw e;
        }
    }

    private static TorchStore connect(String host, int port, Generation generation, Duration timeout,
                                      TorchStoreServer server) {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("torch store host is empty: set JCCL_STORE=host:port or MASTER_ADDR");
        }
        if (port <= 0 || port > 65535) {
            throw new IllegalArgumentException("torch store port " + port + " is not in 1..65535: set JCCL_STORE=host:port "
                    + "or MASTER_PORT");
        }
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("torch store timeout " + timeout + " must be positive");
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        long backoffMs = 20;
        Exception last = null;
        int attempts = 0;
        while (true) {
            attempts++;
            Generation g = generation == null ? Generation.TORCH_2 : generation;
            Socket s = null;
            try {
                s = dial(host, port, (int) Math.max(1, Math.min(10_000, remainingMs(deadline))));
                TorchStore st = new TorchStore(host, port, timeout, g, s, server);
                if (g == Generation.TORCH_2) {
                    try {
                        st.handshake();
                    } catch (IOException e) {
                        st.dropConnection();
                        if (generation != null) {
                            throw e;
                        }
                        // a 1.x server reads VALIDATE as a SET of an impossible length and closes
                        s = dial(host, port, (int) Math.max(1, Math.min(10_000, remainingMs(deadline))));
                        st = new TorchStore(host, port, timeout, Generation.TORCH_1, s, server);
                        LOG.info(-1, () -> "torch store at " + host + ":" + port + " closed the connection on a torch 2.x "
                                + "handshake (" + e.getMessage() + "): speaking torch 1.x");
                    }
                }
                TorchStore done = st;
                LOG.info(-1, () -> "connected to the torch store at " + host + ":" + port + " (" + done.gen + ")");
                return st;
            } catch (IOException e) {
                last = e;
                if (s != null) {
                    try {
                        s.close();
                    } catch (IOException ignored) {
                        // nothing to release
                    }
                }
            }
            long left = remainingMs(deadline);
            if (left <= 0) {
                throw new CollectiveTimeoutException("no torch-protocol store answered at " + host + ":" + port + " within "
                        + timeout + " (" + attempts + " attempts; last error: " + last + "). With JCCL_STORE_PROTOCOL=torch "
                        + "the store is torch's (torchrun's MASTER_ADDR:MASTER_PORT, or the process that made "
                        + "TCPStore(is_master=True)) or jccl's rank 0: start it, and check the address on every rank",
                        List.of());
            }
            try {
                Thread.sleep(Math.min(backoffMs, left));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new JcclException("interrupted while connecting to the torch store at " + host + ":" + port, e);
            }
            backoffMs = Math.min(2 * backoffMs, 500);
        }
    }

    /** A new connection to {@code host:port} within {@code connectMs}. */
    private static Socket dial(String host, int port, int connectMs) throws IOException {
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), connectMs);
            return s;
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    private static long remainingMs(long deadline) {
        return TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
    }

    private void attach(Socket s) throws IOException {
        s.setTcpNoDelay(true);
        socket = s;
        in = new BufferedInputStream(s.getInputStream(), 64 << 10);
        out = new BufferedOutputStream(s.getOutputStream(), 64 << 10);
    }

    /** 2.x: VALIDATE, then PING with a nonce the server must echo. */
    private void handshake() throws IOException {
        int nonce = (int) ProcessHandle.current().pid();
        out.write(Op.VALIDATE.code(gen));
        putInt(out, VALIDATE_MAGIC);
        out.write(Op.PING.code(gen));
        putInt(out, nonce);
        out.flush();
        socket.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis())));
        int echo = readInt(in);
        if (echo != nonce) {
            throw new IOException("PING answered " + echo + " for nonce " + nonce + ": not a torch store");
        }
    }

    /** The protocol generation spoken. */
    public Generation generation() {
        return gen;
    }

    /** The server this store hosts (rank 0 of a job with no launcher's store), or null. */
    public TorchStoreServer server() {
        return server;
    }

    /**
     * Adds 1 to torch's {@value TorchStoreProtocol#INIT_KEY} counter, as a torch client made with
     * a world size does when it connects: a torch server process made with {@code world_size=N}
     * (and {@code wait_for_workers}) waits until N clients did, this one counted among them.
     */
    public synchronized long countAsWorker() {
        return call(o -> {
            o.write(Op.ADD.code(gen));
            putKey(o, INIT_KEY);
            putLong(o, 1);
        }, TorchStoreProtocol::readLong, timeout);
    }

    // ------------------------------------------------------------------ Store

    @Override
    public synchronized void set(String key, byte[] value) {
        String k = wireKey(key);
        checkValue(value);
        call(o -> {
            o.write(Op.SET.code(gen));
            putKey(o, k);
            putBytes(o, value);
        }, null, timeout);
    }

    @Override
    public synchronized byte[] get(String key, Duration timeout) {
        String k = wireKey(key);
        awaitKeys(List.of(k), timeout, "get of key '" + key + "'");
        return call(o -> {
            o.write(Op.GET.code(gen));
            putKey(o, k);
        }, i -> readBytes(i, MAX_VALUE_BYTES, "a value"), this.timeout);
    }

    @Override
    public synchronized byte[] tryGet(String key) {
        String k = wireKey(key);
        if (!checkWire(List.of(k))) {
            return null;
        }
        return call(o -> {
            o.write(Op.GET.code(gen));
            putKey(o, k);
        }, i -> readBytes(i, MAX_VALUE_BYTES, "a value"), timeout);
    }

    @Override
    public synchronized long add(String key, long delta) {
        String k = wireKey(key);
        return call(o -> {
            o.write(Op.ADD.code(gen));
            putKey(o, k);
            putLong(o, delta);
        }, TorchStoreProtocol::readLong, timeout);
    }

    @Override
    public synchronized byte[] compareSet(String key, byte[] expected, byte[] desired) {
        String k = wireKey(key);
        byte[] e = expected == null ? new byte[0] : expected;
        checkValue(e);
        checkValue(desired);
        return call(o -> {
            o.write(Op.COMPARE_SET.code(gen));
            putKey(o, k);
            putBytes(o, e);
            putBytes(o, desired);
        }, i -> readBytes(i, MAX_VALUE_BYTES, "a value"), timeout);
    }

    @Override
    public synchronized boolean delete(String key) {
        String k = wireKey(key);
        return call(o -> {
            o.write(Op.DELETE_KEY.code(gen));
            putKey(o, k);
        }, TorchStoreProtocol::readLong, timeout) == 1;
    }

    @Override
    public synchronized void wait(List<String> keys, Duration timeout) {
        if (keys == null) {
            throw new IllegalArgumentException("keys is null");
        }
        if (keys.isEmpty()) {
            return;
        }
        awaitKeys(wireKeys(keys), timeout, "wait");
    }

    /** Whether every key exists now (CHECK; keys as the caller names them). */
    public synchronized boolean check(List<String> keys) {
        return checkWire(wireKeys(keys));
    }

    private boolean checkWire(List<String> wireKeys) {
        return call(o -> {
            o.write(Op.CHECK.code(gen));
            putKeys(o, wireKeys);
        }, TorchStoreProtocol::readU8, timeout) == READY;
    }

    @Override
    public synchronized long numKeys() {
        return call(o -> o.write(Op.GETNUMKEYS.code(gen)), TorchStoreProtocol::readLong, timeout);
    }

    /**
     * Every key the server holds, as on the wire (a torch client's keys start with {@code /}), for
     * finding what a torch process wrote. Torch 2.x servers only (LIST_KEYS).
     *
     * @throws UnsupportedOperationException with a torch 1.x server, which has no LIST_KEYS
     */
    public synchronized List<String> listKeys() {
        if (gen == Generation.TORCH_1) {
            throw new UnsupportedOperationException("torch 1.x stores cannot list their keys (LIST_KEYS came with torch 2.x)");
        }
        return call(o -> o.write(Op.LIST_KEYS.code(gen)), in -> {
            long n = TorchStoreProtocol.readLong(in);
            List<String> keys = new ArrayList<>();
            for (long i = 0; i < n; i++) {
                int len = (int) TorchStoreProtocol.readLong(in);
                keys.add(new String(TorchStoreProtocol.readExactly(in, len), java.nio.charset.StandardCharsets.UTF_8));
            }
            return keys;
        }, timeout);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        dropConnection();
        if (server != null) {
            server.close();
        }
    }

    @Override
    public String toString() {
        return "TorchStore[" + host + ":" + port + ", " + gen + (server != null ? ", hosting the server" : "") + "]";
    }

    // ------------------------------------------------------------------ requests

    private interface Request {
        void write(OutputStream out) throws IOException;
    }

    private interface Reply<T> {
        T read(InputStream in) throws IOException;
    }

    /** Writes one whole request and flushes it (one segment, as torch 2.x clients send it). */
    private void send(Request req) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        req.write(b);
        b.writeTo(out);
        out.flush();
    }

    /** Sends one request and reads its reply ({@code reply} null: none) within {@code limit}. */
    private <T> T call(Request req, Reply<T> reply, Duration limit) {
        ensureOpen();
        try {
            send(req);
            if (reply == null) {
                return null;
            }
            socket.setSoTimeout(soTimeout(limit));
            return reply.read(in);
        } catch (SocketTimeoutException e) {
            dropConnection(); // an answer may still come: this connection's stream is no longer in step
            throw new CollectiveTimeoutException("the torch store at " + host + ":" + port + " did not answer within "
                    + limit + " (is it overloaded, or stopped?)", List.of());
        } catch (IOException e) {
            dropConnection();
            throw new JcclException("the torch store at " + host + ":" + port + " failed: " + e.getMessage()
                    + " (its process ended, or it is not a " + gen + " store: JCCL_STORE_PROTOCOL names the generation)", e);
        }
    }

    /** WAIT on wire keys; on timeout cancels it (2.x) or drops the connection (1.x), naming the missing keys. */
    private void awaitKeys(List<String> wireKeys, Duration limit, String what) {
        if (limit == null || limit.isNegative()) {
            throw new IllegalArgumentException("timeout " + limit + " must be >= 0");
        }
        ensureOpen();
        try {
            send(o -> {
                o.write(Op.WAIT.code(gen));
                putKeys(o, wireKeys);
            });
            socket.setSoTimeout(soTimeout(limit.isZero() ? Duration.ofMillis(1) : limit));
            try {
                int r = readU8(in);
                if (r != STOP_WAITING) {
                    throw new IOException("WAIT answered " + r);
                }
                return;
            } catch (SocketTimeoutException e) {
                if (gen == Generation.TORCH_2) {
                    cancelWait();
                } else {
                    dropConnection(); // 1.x cannot cancel: a late STOP_WAITING would read as the next answer
                }
            }
        } catch (IOException e) {
            dropConnection();
            throw new JcclException("the torch store at " + host + ":" + port + " failed during a " + what + ": "
                    + e.getMessage(), e);
        }
        List<String> missing = new ArrayList<>();
        for (String k : wireKeys) {
            if (!checkWire(List.of(k))) {
                missing.add(k.substring(KEY_PREFIX.length()));
            }
        }
        throw new CollectiveTimeoutException("torch store " + what + " timed out after " + limit + " at " + host + ":" + port
                + (missing.isEmpty() ? "" : "; missing: " + missing) + " (the rank that sets them has not got there: "
                + "is it alive, and does it use the same store?)", List.of());
    }

    private void cancelWait() throws IOException {
        out.write(Op.CANCEL_WAIT.code(gen));
        out.flush();
        socket.setSoTimeout(soTimeout(timeout));
        // a STOP_WAITING already on its way comes first
        while (readU8(in) != WAIT_CANCELED) {
            // drained
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new JcclException("this torch store client is closed");
        }
        if (socket == null) {
            try {
                attach(dial(host, port, soTimeout(timeout)));
                if (gen == Generation.TORCH_2) {
                    handshake();
                }
            } catch (IOException e) {
                dropConnection();
                throw new JcclException("cannot reconnect to the torch store at " + host + ":" + port + ": " + e.getMessage(), e);
            }
        }
    }

    private void dropConnection() {
        Socket s = socket;
        socket = null;
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // already closed
            }
        }
    }

    private static int soTimeout(Duration d) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, d.toMillis()));
    }

    private static String wireKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("store key is null or empty");
        }
        String k = KEY_PREFIX + key;
        if (k.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
            throw new IllegalArgumentException("store key of more than " + MAX_KEY_BYTES + " bytes: " + key.substring(0, 64) + "...");
        }
        return k;
    }

    private static List<String> wireKeys(List<String> keys) {
        List<String> ks = new ArrayList<>(keys.size());
        for (String key : keys) {
            ks.add(wireKey(key));
        }
        return ks;
    }

    private static void checkValue(byte[] v) {
        if (v == null) {
            throw new IllegalArgumentException("store value is null");
        }
        if (v.length > MAX_VALUE_BYTES) {
            throw new IllegalArgumentException("store value of " + v.length + " bytes: the limit is " + MAX_VALUE_BYTES);
        }
    }
}
