package org.jccl.bootstrap;

import static org.jccl.bootstrap.TorchStoreProtocol.*;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jccl.JcclException;
import org.jccl.bootstrap.TorchStoreProtocol.Generation;
import org.jccl.bootstrap.TorchStoreProtocol.Op;
import org.jccl.internal.Log;

/**
 * A store that speaks PyTorch's c10d TCPStore protocol ({@link TorchStoreProtocol}): torch clients
 * ({@code torch.distributed.TCPStore(host, port, is_master=False)}, torchrun workers, {@code
 * init_process_group("nccl", init_method="tcp://...")}) connect to it as to torch's own server,
 * 1.x and 2.x clients alike (told apart by their first bytes), and {@link TorchStore} clients of
 * jccl ranks share its keys with them. A jccl rank 0 serves it when {@code JCCL_STORE_PROTOCOL=torch}
 * and no launcher serves a store.
 *
 * <p>One virtual thread per connection reads its requests in order, as torch's server does. A
 * WAIT (or BARRIER) whose keys are missing parks the connection: the change that completes it
 * sends STOP_WAITING from the thread that made it, and a CANCEL_WAIT from the client ends it with
 * WAIT_CANCELED. A request that breaks the protocol (an unknown op, a length beyond the limits of
 * {@link TorchStoreProtocol}, ADD on a value that is not a number) closes that connection, as
 * torch's server does; the others go on. Not served: 1.x WATCH_KEY callbacks and 2.x queues (the
 * connection closes with a warning naming the op).
 */
public final class TorchStoreServer implements AutoCloseable {
    private static final Log LOG = Log.get(TorchStoreServer.class);

    private final ServerSocket socket;
    private final Object lock = new Object();
    private final Map<String, byte[]> data = new HashMap<>();
    /** Parked WAITs and BARRIERs (under {@link #lock}). */
    private final List<Waiter> waiters = new ArrayList<>();
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private TorchStoreServer(ServerSocket socket) {
        this.socket = socket;
    }

    /**
     * Listens on {@code bind} (port 0: any free port) and serves until {@link #close()}.
     *
     * @throws JcclException when the address cannot be bound (its message names it)
     */
    public static TorchStoreServer start(InetSocketAddress bind) {
        ServerSocket s = null;
        try {
            s = new ServerSocket();
            s.setReuseAddress(true);
            s.bind(bind, 256);
        } catch (IOException e) {
            if (s != null) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // nothing to release
                }
            }
            throw new JcclException("cannot serve a torch-protocol store on " + bind + ": " + e.getMessage()
                    + " (another process holds the port? choose another MASTER_PORT / JCCL_STORE port)", e);
        }
        TorchStoreServer server = new TorchStoreServer(s);
        Thread.ofPlatform().daemon().name("jccl-torch-store-accept-" + s.getLocalPort()).start(server::acceptLoop);
        LOG.info(-1, () -> "torch-protocol store serving on " + server.socket.getLocalSocketAddress());
        return server;
    }

    /** The port it listens on. */
    public int port() {
        return socket.getLocalPort();
    }

    /** Number of keys it holds. */
    public int keyCount() {
        synchronized (lock) {
            return data.size();
        }
    }

    /** Number of open client connections. */
    public int connectionCount() {
        return connections.size();
    }

    @Override
    public void close() {
        closed = true;
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
        for (Connection c : connections) {
            c.close();
        }
    }

    @Override
    public String toString() {
        return "TorchStoreServer[" + socket.getLocalSocketAddress() + "]";
    }

    private void acceptLoop() {
        while (!closed) {
            Socket s;
            try {
                s = socket.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn(-1, "torch-protocol store on port " + port() + " stopped accepting: " + e);
                }
                return;
            }
            Connection c = new Connection(s);
            connections.add(c);
            if (closed) {
                c.close();
                return;
            }
            Thread.ofVirtual().name("jccl-torch-store-conn").start(c::serve);
        }
    }

    /** A parked WAIT (keys) or BARRIER (key, world size). */
    private record Waiter(Connection conn, List<String> keys, String barrierKey, long worldSize) {
        boolean ready(Map<String, byte[]> data) {
            if (barrierKey != null) {
                byte[] v = data.get(barrierKey);
                return v != null && parseCounter(v) >= worldSize;
            }
            for (String k : keys) {
                if (!data.containsKey(k)) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Under {@link #lock}: answers every parked waiter whose condition now holds. */
    private void wakeReady() {
        for (Iterator<Waiter> it = waiters.iterator(); it.hasNext(); ) {
            Waiter w = it.next();
            boolean ready;
            try {
                ready = w.ready(data);
            } catch (IllegalArgumentException e) {
                ready = false; // a barrier key overwritten with something else: it waits on
            }
            if (ready) {
                it.remove();
                w.conn.answerByte(STOP_WAITING);
            }
        }
    }

    private final class Connection {
        private final Socket s;
        private final String peer;
        private Generation gen;
        private OutputStream out;

        Connection(Socket s) {
            this.s = s;
            this.peer = String.valueOf(s.getRemoteSocketAddress());
        }

        void close() {
            connections.remove(this);
            synchronized (lock) {
                waiters.removeIf(w -> w.conn == this);
            }
            try {
                s.close();
            } catch (IOException ignored) {
                // already closed
            }
        }

        /** Writes a one-byte answer (WAIT's, from whichever thread completed it); a dead client is dropped. */
        void answerByte(int b) {
            try {
                synchronized (this) {
                    out.write(b);
                    out.flush();
                }
            } catch (IOException e) {
                close();
            }
        }

        void serve() {
            try (s) {
                s.setTcpNoDelay(true);
                InputStream in = new BufferedInputStream(s.getInputStream(), 64 << 10);
                out = new BufferedOutputStream(s.getOutputStream(), 64 << 10);
                // A 2.x client opens with VALIDATE (op 0 and the magic); a 1.x client with any request,
                // and when that is SET (op 0 too) eight bytes of key length follow, so reading five
                // bytes never waits for bytes a 1.x client does not send.
                in.mark(8);
                int op0 = in.read();
                if (op0 < 0) {
                    return; // a connection that never spoke (a 1.x client's idle callback socket)
                }
                byte[] first = new byte[5];
                first[0] = (byte) op0;
                if (op0 == 0) {
                    System.arraycopy(readExactly(in, 4), 0, first, 1, 4);
                }
                if (op0 == 0 && isValidate(first)) {
                    gen = Generation.TORCH_2;
                } else {
                    gen = Generation.TORCH_1;
                    in.reset();
                }
                while (!closed) {
                    int code = in.read();
                    if (code < 0) {
                        return;
                    }
                    Op op = Op.of(gen, code);
                    if (op == null) {
                        throw new IOException("op byte " + code + ", which is no " + gen + " op");
                    }
                    handle(op, in);
                }
            } catch (EOFException | SocketException e) {
                // the client went away
            } catch (IOException | RuntimeException e) {
                if (!closed) {
                    LOG.warn(-1, "torch-protocol store on port " + port() + ": closing the connection of " + peer + " ("
                            + (gen == null ? "before its first request" : gen + " client") + "): " + e.getMessage());
                }
            } finally {
                close();
            }
        }

        private void handle(Op op, InputStream in) throws IOException {
            switch (op) {
                case SET -> {
                    String key = readKey(in);
                    byte[] v = readBytes(in, MAX_VALUE_BYTES, "a value");
                    synchronized (lock) {
                        data.put(key, v);
                        wakeReady();
                    }
                }
                case APPEND -> {
                    String key = readKey(in);
                    byte[] v = readBytes(in, MAX_VALUE_BYTES, "a value");
                    synchronized (lock) {
                        byte[] old = data.get(key);
                        if (old == null) {
                            data.put(key, v);
                        } else {
                            if ((long) old.length + v.length > MAX_VALUE_BYTES) {
                                throw new IOException("APPEND beyond " + MAX_VALUE_BYTES + " bytes on key '" + key + "'");
                            }
                            byte[] n = java.util.Arrays.copyOf(old, old.length + v.length);
                            System.arraycopy(v, 0, n, old.length, v.length);
                            data.put(key, n);
                        }
                        wakeReady();
                    }
                }
                case MULTI_SET -> {
                    long n = readLong(in);
                    if (n < 0 || n > MAX_KEYS) {
                        throw new IOException("MULTI_SET of " + n + " keys (at most " + MAX_KEYS + ")");
                    }
                    List<String> keys = new ArrayList<>();
                    List<byte[]> values = new ArrayList<>();
                    for (long i = 0; i < n; i++) {
                        keys.add(readKey(in));
                        values.add(readBytes(in, MAX_VALUE_BYTES, "a value"));
                    }
                    synchronized (lock) {
                        for (int i = 0; i < keys.size(); i++) {
                            data.put(keys.get(i), values.get(i));
                        }
                        wakeReady();
                    }
                }
                case COMPARE_SET -> {
                    String key = readKey(in);
                    byte[] expected = readBytes(in, MAX_VALUE_BYTES, "a value");
                    byte[] desired = readBytes(in, MAX_VALUE_BYTES, "a value");
                    byte[] after;
                    synchronized (lock) {
                        byte[] cur = data.get(key);
                        if (cur == null) {
                            if (expected.length == 0) {
                                data.put(key, desired);
                                wakeReady();
                                after = desired;
                            } else {
                                after = expected; // torch answers expected and stores nothing
                            }
                        } else if (java.util.Arrays.equals(cur, expected)) {
                            data.put(key, desired);
                            wakeReady();
                            after = desired;
                        } else {
                            after = cur;
                        }
                    }
                    answer(o -> putBytes(o, after));
                }
                case GET -> {
                    String key = readKey(in);
                    byte[] v;
                    synchronized (lock) {
                        v = data.getOrDefault(key, new byte[0]);
                    }
                    answer(o -> putBytes(o, v));
                }
                case MULTI_GET -> {
                    List<String> keys = readKeys(in);
                    List<byte[]> vs = new ArrayList<>(keys.size());
                    synchronized (lock) {
                        for (String k : keys) {
                            vs.add(data.getOrDefault(k, new byte[0]));
                        }
                    }
                    answer(o -> {
                        for (byte[] v : vs) {
                            putBytes(o, v);
                        }
                    });
                }
                case ADD -> {
                    String key = readKey(in);
                    long delta = readLong(in);
                    long now;
                    synchronized (lock) {
                        byte[] cur = data.get(key);
                        now = (cur == null ? 0 : parseCounter(cur)) + delta;
                        data.put(key, formatCounter(now));
                        wakeReady();
                    }
                    answer(o -> putLong(o, now));
                }
                case CHECK -> {
                    List<String> keys = readKeys(in);
                    boolean all;
                    synchronized (lock) {
                        all = data.keySet().containsAll(keys);
                    }
                    answer(o -> o.write(all ? READY : NOT_READY));
                }
                case WAIT -> {
                    List<String> keys = readKeys(in);
                    park(new Waiter(this, keys, null, 0));
                }
                case BARRIER -> {
                    String key = readKey(in);
                    long world = readLong(in);
                    synchronized (lock) {
                        byte[] cur = data.get(key);
                        data.put(key, formatCounter((cur == null ? 0 : parseCounter(cur)) + 1));
                        wakeReady();
                    }
                    park(new Waiter(this, List.of(), key, world));
                }
                case CANCEL_WAIT -> {
                    synchronized (lock) {
                        waiters.removeIf(w -> w.conn == this);
                    }
                    answerByte(WAIT_CANCELED);
                }
                case GETNUMKEYS -> {
                    long n;
                    synchronized (lock) {
                        n = data.size();
                    }
                    answer(o -> putLong(o, n));
                }
                case DELETE_KEY -> {
                    String key = readKey(in);
                    long n;
                    synchronized (lock) {
                        n = data.remove(key) != null ? 1 : 0;
                    }
                    answer(o -> putLong(o, n));
                }
                case LIST_KEYS -> {
                    List<String> keys;
                    synchronized (lock) {
                        keys = new ArrayList<>(data.keySet());
                    }
                    answer(o -> putKeys(o, keys));
                }
                case PING -> {
                    int nonce = readInt(in);
                    answer(o -> putInt(o, nonce));
                }
                case VALIDATE -> {
                    if (readInt(in) != VALIDATE_MAGIC) {
                        throw new IOException("VALIDATE with a wrong magic number");
                    }
                }
                default -> throw new IOException(op + " is not served by jccl's torch-protocol store");
            }
        }

        /** Answers at once when the waiter's condition holds, else parks it (the change that completes it answers). */
        private void park(Waiter w) {
            boolean now;
            synchronized (lock) {
                now = w.ready(data);
                if (!now) {
                    waiters.add(w);
                }
            }
            if (now) {
                answerByte(STOP_WAITING);
            }
        }

        private List<String> readKeys(InputStream in) throws IOException {
            int n = readCount(in);
            List<String> keys = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                keys.add(readKey(in));
            }
            return keys;
        }

        private void answer(Writer w) throws IOException {
            synchronized (this) {
                w.write(out);
                out.flush();
            }
        }
    }

    private interface Writer {
        void write(OutputStream out) throws IOException;
    }
}
