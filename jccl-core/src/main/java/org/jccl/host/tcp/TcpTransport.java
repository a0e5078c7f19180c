package org.jccl.host.tcp;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import org.jccl.AbortedException;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.PeerFailureException;
import org.jccl.bootstrap.Store;
import org.jccl.host.engine.OpCode;
import org.jccl.internal.Log;
import org.jccl.spi.TimedIdleStrategy;

/**
 * The TCP transport of one communicator: non-blocking {@link SocketChannel}s to the peers
 * (TCP_NODELAY), {@code JCCL_SOCKETS_PER_PEER} sockets per peer for collectives plus one for
 * send/recv (so point-to-point traffic never queues behind a collective), set up through the
 * store: each rank publishes its listen address, the higher rank of each pair connects and proves
 * the job token ({@link Handshake}).
 *
 * <p>Messages are posted ({@link #send}, {@link #recv}) and complete as the calling thread
 * progresses the sockets ({@link #await}); a message is cut into frames ({@link Frame}) of at
 * most {@code JCCL_TCP_CHUNK_BYTES}, spread round-robin over the peer's sockets, and matched in
 * order per peer and direction. Every frame header carries the communicator id, the collective's
 * sequence number and fingerprint: the receiver checks them and a difference is a {@link
 * CollectiveMismatchException}.
 *
 * <p>Every wait polls for {@code JCCL_TCP_SPIN_US} after the last byte moved (yielding the core
 * between polls after 20 microseconds), large transfers included, then sleeps in a selector that
 * also watches
 * every other socket, so a peer's ABORT frame, a closed or reset connection ({@link
 * PeerFailureException} naming the rank) and {@link #abort} end it at once; the call's deadline
 * ({@link CollectiveTimeoutException} naming the ranks that did not send) ends it at the latest.
 * When this rank fails it sends an ABORT frame with the reason on every socket it can and closes
 * them, so its peers stop waiting too.
 *
 * <p>Not thread-safe, except {@link #abort}: the communicator serialises calls.
 */
public final class TcpTransport implements AutoCloseable {
    private static final Log LOG = Log.get(TcpTransport.class);
    /** Marks a connection the selector found ready (no allocation: it captures nothing). */
    private static final Consumer<SelectionKey> MARK = k -> ((TcpConnection) k.attachment()).ready = true;
    private static final long GRACE_NANOS = 100_000_000L;
    /** Handshakes the listener runs at once during setup; one more closes the oldest. */
    static final int ACCEPT_MAX_PENDING = 64;
    /** Polls of a wait yield the core after this long. */
    private static final long YIELD_AFTER_NANOS = 20_000;

    private final String name;
    private final long commId;
    private final int rank;
    private final int size;
    private final TcpConfig cfg;
    private final int chunk;
    private final long spinNanos;
    private final TcpConnection[][] coll;
    private final TcpConnection[] p2p;
    private final Selector selector;
    private final Arena arena = Arena.ofShared();
    private final long[] collSendFrames;
    private final long[] collRecvFrames;
    private TcpOp[] ops = new TcpOp[0];
    private int[] free = new int[0];
    private int freeTop;
    private final long[] sendMessages;
    private final long[] recvMessages;
    private MemorySegment[] scratch = new MemorySegment[0];

    /** Reused by the algorithms: one entry per rank, no allocation per call. */
    public final MemorySegment[] srcs;
    /** Reused by the algorithms: one offset per rank. */
    public final long[] srcOffsets;

    /** The call in progress (header fingerprint, deadline). Set by the communicator per call. */
    public final TcpCall call = new TcpCall();

    private volatile String localAbort;
    private boolean failed;
    private boolean closed;
    /** Deaths the store's heartbeats report, in this transport's ranks (set once, before use). */
    private org.jccl.spi.Liveness.Watch watch;

    private TcpTransport(String name, long commId, int rank, int size, TcpConfig cfg, TcpConnection[][] coll,
                         TcpConnection[] p2p, Selector selector, long spinNanos) {
        this.spinNanos = spinNanos;
        this.poll = new TimedIdleStrategy(Math.min(YIELD_AFTER_NANOS, spinNanos), spinNanos, 1);
        this.name = name;
        this.commId = commId;
        this.rank = rank;
        this.size = size;
        this.cfg = cfg;
        this.chunk = cfg.chunkBytes();
        this.coll = coll;
        this.p2p = p2p;
        this.selector = selector;
        this.srcs = new MemorySegment[size];
        this.srcOffsets = new long[size];
        this.collSendFrames = new long[size];
        this.collRecvFrames = new long[size];
        this.sendMessages = new long[size];
        this.recvMessages = new long[size];
    }

    // ------------------------------------------------------------------ setup

    /**
     * Collective: connects this rank to its peers through {@code store}.
     *
     * @param name      the communicator's name (for messages and thread names)
     * @param storeHost host of the store, to choose the interface by route (null: first interface)
     * @param token     the job token every connection proves, or null
     * @param collPeer  peers this rank runs collectives with (must be symmetric; never itself)
     * @param p2pPeer   peers this rank may send to / receive from (symmetric; may include itself)
     * @param localRanks ranks of the job on this host (they share its cores: the polling time)
     */
    public static TcpTransport open(String name, int rank, int size, Store store, Duration timeout, String token,
                                    TcpConfig cfg, String storeHost, IntPredicate collPeer, IntPredicate p2pPeer,
                                    int localRanks) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long commId;
        if (rank == 0) {
            commId = new java.security.SecureRandom().nextLong();
            store.set("tcp/id", ByteBuffer.allocate(8).putLong(commId).array());
        } else {
            commId = ByteBuffer.wrap(store.get("tcp/id", timeout)).getLong();
        }
        int k = cfg.socketsPerPeer();
        InetAddress addr = NetInterfaces.choose(cfg.ifname(), storeHost);
        // Who connects to whom: the higher rank of a pair connects (a rank to itself for send/recv).
        int expected = 0;
        for (int p = rank; p < size; p++) {
            if (p != rank && collPeer.test(p)) {
                expected += k;
            }
            if (p2pPeer.test(p)) {
                expected++;
            }
        }
        TcpConnection[][] coll = new TcpConnection[size][];
        TcpConnection[] p2p = new TcpConnection[size];
        SocketChannel[][] chans = new SocketChannel[size][k + 1];
        Selector selector = null;
        ServerSocketChannel server = null;
        Acceptor acceptor = null;
        boolean ok = false;
        try {
            selector = Selector.open();
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(addr, 0), Math.max(128, 2 * expected));
            int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
            store.set("tcp/addr/" + rank, (addr.getHostAddress() + " " + port).getBytes(StandardCharsets.UTF_8));
            LOG.info(rank, () -> "tcp transport " + name + ": listening on " + addr.getHostAddress() + ":" + port);
            acceptor = new Acceptor(server, name, commId, rank, size, k, cfg.chunkBytes(), token, expected, deadline,
                    collPeer, p2pPeer);
            acceptor.thread = Thread.ofPlatform().daemon().name("jccl-tcp-accept-" + name + "-r" + rank).start(acceptor);
            for (int p = 0; p <= rank; p++) {
                boolean c = p != rank && collPeer.test(p);
                boolean q = p2pPeer.test(p);
                if (!c && !q) {
                    continue;
                }
                InetSocketAddress peer = address(store, p, deadline);
                for (int i = 0; i <= k; i++) {
                    if (i < k ? c : q) {
                        chans[p][i] = connect(peer, name, commId, rank, p, i, k, cfg.chunkBytes(), token, deadline);
                    }
                }
            }
            acceptor.await(deadline);
            SocketChannel selfRead = null;
            for (var e : acceptor.accepted.entrySet()) {
                int p = e.getKey() / (k + 1);
                if (p == rank) {
                    selfRead = e.getValue(); // the accepted end of the connection to itself: read from it
                } else {
                    chans[p][e.getKey() % (k + 1)] = e.getValue();
                }
            }
            TcpTransport t = new TcpTransport(name, commId, rank, size, cfg, coll, p2p, selector, cfg.spinNanos(localRanks));
            for (int p = 0; p < size; p++) {
                if (p != rank && collPeer.test(p)) {
                    coll[p] = new TcpConnection[k];
                    for (int i = 0; i < k; i++) {
                        coll[p][i] = t.register(chans[p][i], chans[p][i], p, i, k);
                    }
                }
                if (p2pPeer.test(p)) {
                    p2p[p] = t.register(chans[p][k], p == rank ? selfRead : chans[p][k], p, -1, 1);
                }
            }
            t.rebuild();
            ok = true;
            LOG.info(rank, () -> "tcp transport " + name + ": " + t.allRef.length + " sockets to " + (size - 1) + " peers");
            return t;
        } catch (IOException e) {
            throw new JcclException("rank " + rank + ": cannot set up TCP connections of communicator " + name + " on "
                    + addr.getHostAddress() + ": " + e.getMessage() + " (choose the interface with JCCL_SOCKET_IFNAME)", e);
        } finally {
            if (acceptor != null) {
                acceptor.stop();
            }
            closeQuietly(server);
            if (!ok) {
                for (SocketChannel[] cs : chans) {
                    for (SocketChannel c : cs) {
                        closeQuietly(c);
                    }
                }
                if (acceptor != null) {
                    acceptor.accepted.values().forEach(TcpTransport::closeQuietly);
                }
                closeQuietly(selector);
            }
        }
    }

    private TcpConnection register(SocketChannel ch, SocketChannel rch, int peer, int index, int sockets) throws IOException {
        ch.configureBlocking(false);
        TcpConnection c = new TcpConnection(this, ch, rch, peer, index, sockets, cfg.bufferBytes());
        c.key = ch.register(selector, 0, c);
        if (rch != ch) {
            rch.configureBlocking(false);
            c.rkey = rch.register(selector, 0, c);
        }
        return c;
    }

    /** Fills {@link #all} after the connections exist (the constructor saw empty arrays). */
    private void rebuild() {
        List<TcpConnection> list = new ArrayList<>();
        for (TcpConnection[] cs : coll) {
            if (cs != null) {
                list.addAll(List.of(cs));
            }
        }
        for (TcpConnection c : p2p) {
            if (c != null) {
                list.add(c);
            }
        }
        allRef = list.toArray(new TcpConnection[0]);
    }

    private TcpConnection[] allRef = new TcpConnection[0];

    private static InetSocketAddress address(Store store, int p, long deadline) {
        String v = new String(store.get("tcp/addr/" + p, remaining(deadline)), StandardCharsets.UTF_8);
        int sp = v.lastIndexOf(' ');
        try {
            return new InetSocketAddress(InetAddress.getByName(v.substring(0, sp)), Integer.parseInt(v.substring(sp + 1)));
        } catch (IOException | RuntimeException e) {
            throw new JcclException("rank " + p + " published the transport address '" + v + "', which does not parse: " + e);
        }
    }

    private static Duration remaining(long deadline) {
        return Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()));
    }

    private static SocketChannel connect(InetSocketAddress peer, String name, long comm, int rank, int p, int index,
                                         int k, int chunk, String token, long deadline) throws IOException {
        long backoff = 10;
        while (true) {
            SocketChannel ch = SocketChannel.open();
            boolean ok = false;
            try {
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
                int ms = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime()) / 1_000_000));
                ch.socket().connect(peer, ms);
                ch.socket().setSoTimeout(ms);
                InputStream in = ch.socket().getInputStream();
                OutputStream out = ch.socket().getOutputStream();
                byte[] w = new byte[Handshake.WELCOME_BYTES];
                new java.io.DataInputStream(in).readFully(w);
                ByteBuffer b = ByteBuffer.wrap(w);
                if (b.getInt() != Handshake.MAGIC) {
                    throw new JcclException("rank " + rank + ": " + peer + " (rank " + p + " of communicator " + name
                            + ") is not a jccl transport endpoint: check JCCL_SOCKET_IFNAME and firewalls");
                }
                short version = b.getShort();
                if (version != Handshake.VERSION) {
                    throw new JcclException("rank " + p + " at " + peer + " speaks transport protocol version " + version
                            + ", this rank " + Handshake.VERSION + ": run the same jccl version on every rank");
                }
                boolean auth = (b.getShort() & Handshake.F_AUTH) != 0;
                byte[] nonce = new byte[Handshake.NONCE_BYTES];
                b.get(nonce);
                if (auth && token == null) {
                    throw new JcclException("rank " + p + " at " + peer + " requires a job token and rank " + rank
                            + " has none: set JCCL_TOKEN (or Options.withToken) to the job's token on every rank");
                }
                Handshake.sendHello(out, comm, rank, p, index, k, chunk, token, nonce);
                int r = in.read();
                if (r != Handshake.R_OK) {
                    throw new JcclException("rank " + p + " at " + peer + " refused the connection of rank " + rank
                            + " (communicator " + name + "): it " + Handshake.describeResult(r));
                }
                ch.socket().setSoTimeout(0);
                ok = true;
                return ch;
            } catch (ConnectException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw new CollectiveTimeoutException("rank " + rank + " could not connect to rank " + p + " at " + peer
                            + " before the deadline: " + e.getMessage() + " (is the address reachable from here? "
                            + "choose the interface with JCCL_SOCKET_IFNAME)", List.of(p));
                }
            } catch (SocketTimeoutException e) {
                throw new CollectiveTimeoutException("rank " + rank + ": connecting to rank " + p + " at " + peer
                        + " timed out (" + e.getMessage() + "): the peer is unreachable or stuck", List.of(p));
            } finally {
                if (!ok) {
                    closeQuietly(ch);
                }
            }
            try {
                Thread.sleep(backoff);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new AbortedException("interrupted while connecting to rank " + p);
            }
            backoff = Math.min(500, backoff * 2);
        }
    }

    /**
     * Accepts and checks the connections of the higher ranks during setup, all handshakes at once
     * on one selector (non-blocking): a caller that sends nothing, too little, too slowly or
     * garbage holds no one else up. Every handshake must complete within {@link
     * #HANDSHAKE_NANOS}; at most {@link #MAX_PENDING} run at once (a new one closes the oldest);
     * the hello is a fixed 64 bytes, so nothing a caller sends allocates more. A caller that does
     * not speak the protocol, is not expected, or (with a job token) does not prove the token is
     * closed with the reason logged; the listener keeps serving the others and closes with the
     * setup, so a communicator never listens after it is created.
     */
    private static final class Acceptor implements Runnable {
        /** Time a caller has for its whole handshake (slow callers cannot hold a slot longer). */
        static final long HANDSHAKE_NANOS = 10_000_000_000L;
        static final int MAX_PENDING = ACCEPT_MAX_PENDING;
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

        Acceptor(ServerSocketChannel server, String name, long comm, int rank, int size, int k, int chunk, String token,
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
            closeQuietly(p.ch);
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

    static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing: nothing to report
            }
        }
    }

    // ------------------------------------------------------------------ accessors

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** Ranks. */
    public int size() {
        return size;
    }

    /** The communicator's name. */
    public String name() {
        return name;
    }

    /** Largest frame payload: the pipelining unit of the algorithms. */
    public int chunkBytes() {
        return chunk;
    }

    /** Sockets per peer for collectives. */
    public int socketsPerPeer() {
        return cfg.socketsPerPeer();
    }

    /** JCCL_CHECK: algorithms add the checks that cost a round trip ({@link TcpConfig#check()}). */
    public boolean checkCalls() {
        return cfg.check();
    }

    long commId() {
        return commId;
    }

    Arena arena() {
        return arena;
    }

    /**
     * Scratch memory {@code slot} of at least {@code bytes} bytes, kept and reused by later calls
     * (it grows only; memory of a transport is reclaimed with it).
     */
    public MemorySegment scratch(int slot, long bytes) {
        if (slot >= scratch.length) {
            scratch = java.util.Arrays.copyOf(scratch, slot + 1);
        }
        MemorySegment s = scratch[slot];
        if (s == null || s.byteSize() < bytes) {
            s = Arena.ofAuto().allocate(Math.max(bytes, 64), 64);
            scratch[slot] = s;
        }
        return s;
    }

    private static final int VIEWS = 8;
    private final MemorySegment[] viewSegs = new MemorySegment[VIEWS];
    private final long[] viewStart = new long[VIEWS];
    private final long[] viewEnd = new long[VIEWS];
    private final ByteBuffer[] views = new ByteBuffer[VIEWS];
    private int viewNext;

    /**
     * Sets {@code op.view} to a ByteBuffer over native memory that contains the whole of {@code
     * seg}, and {@code op.viewAt} to the position of {@code seg}'s first byte in it, for reading
     * and writing large payloads in place; null for heap segments and segments over 2 GiB (those go
     * through the staging buffers). Once per message, not per frame. Views are kept for the last 8
     * segments and found by address range, not identity: a slice of a buffer seen before (another
     * size, in place, a part) reuses its view, so a caller allocates nothing per call and a new
     * slice takes no path the JIT has not seen. A view is reused only while its segment is alive
     * and accessible by this thread.
     */
    private void resolveView(TcpOp op, MemorySegment seg) {
        long a = seg.address();
        long e = a + seg.byteSize();
        Thread me = Thread.currentThread();
        for (int i = 0; i < VIEWS; i++) {
            MemorySegment v = viewSegs[i];
            if (v != null && viewStart[i] <= a && e <= viewEnd[i] && v.scope().isAlive() && v.isAccessibleBy(me)) {
                op.view = views[i];
                op.viewAt = a - viewStart[i];
                return;
            }
        }
        newView(op, seg);
    }

    private void newView(TcpOp op, MemorySegment seg) {
        op.viewAt = 0;
        if (!seg.isNative() || seg.byteSize() > Integer.MAX_VALUE) {
            op.view = null;
            return;
        }
        ByteBuffer b = seg.asByteBuffer();
        int i = viewNext;
        viewNext = (viewNext + 1) % VIEWS;
        viewSegs[i] = seg;
        viewStart[i] = seg.address();
        viewEnd[i] = seg.address() + seg.byteSize();
        views[i] = b;
        op.view = b;
    }

    // ------------------------------------------------------------------ posting

    private TcpOp acquire() {
        if (freeTop == 0) {
            int n = ops.length;
            int m = Math.max(16, n * 2);
            ops = java.util.Arrays.copyOf(ops, m);
            free = java.util.Arrays.copyOf(free, m);
            for (int i = m - 1; i >= n; i--) {
                ops[i] = new TcpOp(i);
                free[freeTop++] = i;
            }
        }
        TcpOp op = ops[free[--freeTop]];
        op.inUse = true;
        return op;
    }

    /** Releases a completed operation's slot. */
    public void release(int id) {
        TcpOp op = ops[id];
        if (op.inUse) {
            op.inUse = false;
            op.seg = null;
            op.view = null;
            free[freeTop++] = id;
        }
    }

    /**
     * Posts a send of {@code bytes} bytes of {@code seg} at {@code off} to {@code peer} within the
     * current collective ({@link #call}); {@code tag} names the algorithm's step. The bytes must
     * stay unchanged until the send completes. Returns the operation's id.
     */
    public int send(int peer, MemorySegment seg, long off, long bytes, long tag) {
        return post(true, false, peer, seg, off, bytes, tag, call.seq, call.packed(), call.count, call.prev);
    }

    /** Posts a receive into {@code seg} at {@code off}, matching the peer's send of the same step. */
    public int recv(int peer, MemorySegment seg, long off, long bytes, long tag) {
        return post(false, false, peer, seg, off, bytes, tag, call.seq, call.packed(), call.count, call.prev);
    }

    /** Posts a point-to-point send (matched in order per pair; its header carries the type and count). */
    public int sendP2p(int peer, MemorySegment seg, long off, long bytes, DataType type, long count) {
        long no = ++sendMessages[peer];
        return post(true, true, peer, seg, off, bytes, 0, no, TcpCall.pack(OpCode.SEND, type.ordinal(), OpCode.NO_REDOP, -1), count, 0);
    }

    /** Posts a point-to-point receive. */
    public int recvP2p(int peer, MemorySegment seg, long off, long bytes, DataType type, long count) {
        long no = ++recvMessages[peer];
        return post(false, true, peer, seg, off, bytes, 0, no, TcpCall.pack(OpCode.SEND, type.ordinal(), OpCode.NO_REDOP, -1), count, 0);
    }

    private int post(boolean send, boolean isP2p, int peer, MemorySegment seg, long off, long bytes, long tag, long seq,
                     long packed, long count, long prev) {
        TcpConnection[] cs;
        if (isP2p) {
            TcpConnection c = p2p[peer];
            if (c == null) {
                throw new IllegalStateException("rank " + rank + " has no send/recv connection to rank " + peer);
            }
            cs = null;
        } else {
            cs = coll[peer];
            if (cs == null) {
                throw new IllegalStateException("rank " + rank + " has no collective connection to rank " + peer);
            }
        }
        TcpOp op = acquire();
        op.send = send;
        op.p2p = isP2p;
        op.peer = peer;
        op.seg = seg;
        op.off = off;
        op.bytes = bytes;
        op.seq = seq;
        op.call = packed;
        op.count = count;
        op.prev = prev;
        op.tag = tag;
        op.frames = (int) Math.max(1, (bytes + chunk - 1) / chunk); // an empty message is one empty frame
        if (bytes >= TcpConnection.DIRECT_MIN_BYTES) {
            resolveView(op, seg);
        } else {
            op.view = null;
        }
        op.framesLeft = op.frames;
        incomplete++;
        if (isP2p) {
            op.base = 0;
            op.sockets = 1;
            enqueue(p2p[peer], op);
        } else {
            int k = cs.length;
            long[] counter = send ? collSendFrames : collRecvFrames;
            op.base = counter[peer];
            op.sockets = k;
            counter[peer] += op.frames;
            for (int i = 0; i < k; i++) {
                if (op.firstFrameOn(i) < op.frames) {
                    enqueue(cs[i], op);
                }
            }
        }
        return op.id;
    }

    private static void enqueue(TcpConnection c, TcpOp op) {
        if (op.send) {
            c.sendQ.add(op);
        } else {
            c.recvQ.add(op);
        }
    }

    /** True when the operation completed (a send's bytes reached the kernel; a receive's arrived). */
    public boolean isDone(int id) {
        return ops[id].framesLeft == 0;
    }

    // ------------------------------------------------------------------ progress and waiting

    /** Progresses until operation {@code id} completes, then releases it. */
    public void await(int id) {
        TcpOp op = ops[id];
        int i = 0;
        while (op.framesLeft > 0) {
            if (progress(false)) {
                i = 0;
            } else {
                idle(i++);
            }
        }
        release(id);
    }

    /** Progresses until every posted operation completed, and releases them all. */
    public void awaitAll() {
        int i = 0;
        while (pendingOps() > 0) {
            if (progress(false)) {
                i = 0;
            } else {
                idle(i++);
            }
        }
        for (TcpOp op : ops) {
            if (op.inUse) {
                release(op.id);
            }
        }
    }

    private int pendingOps() {
        return incomplete;
    }

    /** A frame of {@code op} completed (flushed, or received). */
    void frameDone(TcpOp op) {
        if (--op.framesLeft == 0) {
            incomplete--;
        }
    }

    private int incomplete;
    private int[] idsA = new int[64];
    private long[] longsA = new long[64];

    /** A reusable array of at least {@code n} longs for an algorithm's bookkeeping. */
    public long[] longs(int n) {
        if (longsA.length < n) {
            longsA = new long[n];
        }
        return longsA;
    }

    /** Two input segments for a two-input {@code Reductions.reduce}, reused (the calling thread's). */
    public MemorySegment[] pairSources() {
        return pairSrcs;
    }

    /** Their byte offsets, reused as {@link #pairSources()}. */
    public long[] pairOffsets() {
        return pairOffs;
    }

    private final MemorySegment[] pairSrcs = new MemorySegment[2];
    private final long[] pairOffs = new long[2];

    /** A reusable array of at least {@code n} ints for an algorithm's operation ids. */
    public int[] ids(int n) {
        if (idsA.length < n) {
            idsA = new int[n];
        }
        return idsA;
    }

    /**
     * One pass over the sockets with work: appends, writes, reads and parses what can move now.
     *
     * @param any also read sockets with no receive posted (to notice failures while idle)
     * @return true when any byte moved
     */
    public boolean progress(boolean any) {
        boolean moved = false;
        TcpConnection[] cs = allRef;
        for (TcpConnection c : cs) {
            try {
                if (c.sendPending()) {
                    moved |= c.progressSend();
                }
                if (c.recvPending() || any && c.ready) {
                    c.ready = false;
                    moved |= c.progressRecv(any);
                }
            } catch (IOException e) {
                c.ioError = e;
            }
            if (c.abortCode != 0 || c.eof || c.ioError != null) {
                checkConnection(c);
            }
        }
        return moved;
    }

    /** Throws when {@code c}'s peer aborted, failed, or closed while this rank needs its data. */
    private void checkConnection(TcpConnection c) {
        if (c.abortCode != 0) {
            throw peerAbort(c.peer, c.abortCode, c.abortReason, c.abortCulprit);
        }
        if (c.ioError != null || (c.eof && (!c.peerClosed || c.recvPending() || c.sendPending()))) {
            if (c.peerClosed) {
                throw new PeerFailureException(c.peer, "rank " + c.peer + " of communicator " + name
                        + " closed the communicator while rank " + rank + " was in " + call.describe()
                        + ": all ranks must run the same collectives before close()");
            }
            throw broken(c);
        }
    }

    /**
     * {@code c} broke (reset, broken pipe) or ended without a word. The peer may only be the
     * messenger: a rank that fails because another one died sends an ABORT frame naming that rank
     * before it closes, and that frame may still sit unread behind the data, on another of its
     * sockets, or come from a third rank; the heartbeats may know the dead rank too. So before
     * blaming the peer, looks for a peer's account among the bytes readable on every connection
     * and asks the liveness watch, for at most {@link #GRACE_NANOS}: the peer's own ABORT frame
     * says why it went, another rank's names the culprit. Only then is the peer declared dead.
     */
    private JcclException broken(TcpConnection c) {
        IOException io = c.ioError;
        String what = (io != null ? "broke its connection (" + io.getMessage() + ")" : "closed its connection without a word")
                + " while rank " + rank + " was in " + call.describe() + ": the process died, was killed, or its host went away";
        long end = System.nanoTime() + GRACE_NANOS;
        while (true) {
            for (TcpConnection x : allRef) {
                // (sockets of other peers never used stay unread: no staging buffers for them)
                if (x.peer != rank && (x.peer == c.peer || x.buffered())) {
                    x.drainForAbort();
                }
            }
            // The peer's own account first (on any of its sockets), then a third rank naming a culprit.
            for (TcpConnection x : allRef) {
                if (x.peer == c.peer && x.abortCode != 0) {
                    return peerAbort(x.peer, x.abortCode, x.abortReason, x.abortCulprit);
                }
            }
            for (TcpConnection x : allRef) {
                if (x.peer != rank && x.abortCode == Frame.ABORT_FAILED && x.abortCulprit >= 0 && x.abortCulprit < size
                        && x.abortCulprit != rank && x.abortCulprit != x.peer) {
                    return peerAbort(x.peer, x.abortCode, x.abortReason
                            + " [rank " + rank + " also saw rank " + c.peer + " " + what + "]", x.abortCulprit);
                }
            }
            org.jccl.spi.Liveness.Watch w = watch;
            int d = w == null ? -1 : w.firstDead();
            if (d >= 0 && d != rank) {
                return w.failure(d, call.describe() + " on rank " + rank + " of communicator " + name
                        + " (rank " + c.peer + " " + what + ")");
            }
            if (System.nanoTime() - end > 0 || localAbort != null) {
                break;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        return new PeerFailureException(c.peer, "rank " + c.peer + " of communicator " + name + " " + what, io);
    }

    /**
     * Idles once in a wait ({@code iteration} counts the waits without progress): polls for the
     * spin time, then sleeps in the selector; checks abort, peers and the deadline.
     */
    public void idle(int iteration) {
        if (iteration == 0) {
            poll.idle(0);
            checkAbort();
            return;
        }
        long now = System.nanoTime();
        if ((iteration & 15) == 0) {
            checkAbort();
            checkDeadline(now);
        }
        long idleFor = poll.waited();
        // Poll also while a large transfer is in flight (as Open MPI does): a rank that sleeps in
        // the selector is woken by the softirq of the peer's send, on the peer's core, and the
        // scheduler tends to run it there (wake-affine), so on few cores the two ranks end up
        // taking turns on one core (measured on 2 cores over veth: 128 KiB-32 MiB all-reduce
        // up to 1.3x slower, bimodal from run to run). A rank whose core is shared polls only for
        // the short spin time (see TcpConfig) and then sleeps.
        if (idleFor < spinNanos) {
            // Poll with PAUSE first; then yield between polls, so that a peer rank or the JIT
            // waiting for this core gets it (a pure spin would hold it for the whole poll time).
            poll.idle(iteration);
            return;
        }
        checkAbort();
        checkDeadline(now);
        try {
            for (TcpConnection c : allRef) {
                c.updateInterest(true);
            }
            long ms = Math.max(1, Math.min(100, (call.deadline - now) / 1_000_000 + 1));
            selector.select(MARK, ms);
        } catch (IOException e) {
            throw new JcclException("rank " + rank + ": waiting on the sockets of communicator " + name + " failed: " + e, e);
        }
        progress(true);
    }

    /** The polling part of a wait: PAUSE for {@link #YIELD_AFTER_NANOS}, then yields until the spin time. */
    private final TimedIdleStrategy poll;

    /**
     * Makes every wait also end, with a {@link PeerFailureException} naming the rank, when the
     * store's heartbeats declare a peer dead (checked with the abort checks of a wait: one volatile
     * read). Set before the first call.
     */
    public void watch(org.jccl.spi.Liveness.Watch w) {
        this.watch = w;
    }

    private void checkAbort() {
        String a = localAbort;
        if (a != null) {
            throw new AbortedException("communicator " + name + " aborted on rank " + rank + " during " + call.describe() + ": " + a);
        }
        org.jccl.spi.Liveness.Watch w = watch;
        if (w != null) {
            int d = w.firstDead();
            if (d >= 0 && d != rank) {
                throw w.failure(d, call.describe() + " on rank " + rank + " of communicator " + name);
            }
        }
        if (closed || failed) {
            throw new AbortedException("communicator " + name + " is closed or failed on rank " + rank);
        }
        if (Thread.currentThread().isInterrupted()) {
            throw new AbortedException("rank " + rank + ": interrupted during " + call.describe());
        }
    }

    private void checkDeadline(long now) {
        if (now - call.deadline <= 0) {
            return;
        }
        List<Integer> missing = new ArrayList<>();
        for (TcpConnection c : allRef) {
            if (c.recvPending() && !missing.contains(c.peer)) {
                missing.add(c.peer);
            }
        }
        String what = "send its data";
        if (missing.isEmpty()) {
            for (TcpConnection c : allRef) {
                if (c.sendPending() && !missing.contains(c.peer)) {
                    missing.add(c.peer);
                }
            }
            what = "take the data this rank sends";
        }
        if (LOG.traceEnabled()) {
            for (TcpConnection c : allRef) {
                LOG.trace(rank, c::state);
            }
        }
        throw new CollectiveTimeoutException(call.describe() + " timed out after " + Duration.ofNanos(call.timeoutNanos)
                + " on rank " + rank + " of communicator " + name + ": waiting for rank(s) " + missing + " to " + what
                + " (a rank is stuck, dead, unreachable or called a different collective; raise JCCL_TIMEOUT if it is just slow)"
                + (watch == null ? "" : watch.silentNote(missing)), missing);
    }

    private JcclException peerAbort(int p, long code, String reason) {
        return peerAbort(p, code, reason, -1);
    }

    private JcclException peerAbort(int p, long code, String reason, int culprit) {
        if (code == Frame.ABORT_FAILED && culprit >= 0 && culprit < size && culprit != p && culprit != rank) {
            // p only reports another rank's failure: blame that one.
            return new PeerFailureException(culprit, "rank " + culprit + " failed (reported by rank " + p + "): " + reason);
        }
        if (code == Frame.ABORT_MISMATCH) {
            return new CollectiveMismatchException("rank " + p + " detected a mismatch: " + reason);
        }
        if (code == Frame.ABORT_ABORTED) {
            return new AbortedException("rank " + p + " aborted the communicator: " + reason);
        }
        return new PeerFailureException(p, "rank " + p + " failed: " + reason);
    }

    /** A frame that breaks the protocol (not a jccl peer, or memory corruption): fail loudly. */
    void corrupt(TcpConnection c, String what) {
        throw new JcclException("rank " + rank + ": " + c + " of communicator " + name + " sent " + what
                + " during " + call.describe() + ": the stream is corrupt; the communicator cannot go on");
    }

    /** A frame header that differs from the expected one: a mismatch, unless the peer's ABORT follows. */
    void mismatch(TcpConnection c, TcpOp op, long seq, long packed, long count, long msgBytes, long tag, long prev) {
        long end = System.nanoTime() + GRACE_NANOS;
        while (true) {
            if (c.drainForAbort()) {
                throw peerAbort(c.peer, c.abortCode, c.abortReason, c.abortCulprit);
            }
            if (System.nanoTime() - end > 0 || c.eof) {
                break;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        String msg;
        if (op.p2p) {
            DataType[] types = DataType.values();
            int mine = (int) (op.call >>> 40) & 0xff;
            int theirs = (int) (packed >>> 40) & 0xff;
            msg = "send/recv mismatch: rank " + rank + " posts recv #" + op.seq + " of " + op.bytes + " bytes of "
                    + types[mine] + " from rank " + c.peer + ", but rank " + c.peer + " sent "
                    + (((packed >>> 48) & 0xffff) == OpCode.SEND ? "message #" + seq + " of " + msgBytes + " bytes of "
                    + (theirs < types.length ? types[theirs] : "type " + theirs) : "something else")
                    + ": sends and receives between a pair must match in order, type and count";
        } else {
            String theirs = TcpCall.describe(packed, count, seq);
            String mine = TcpCall.describe(op.call, op.count, op.seq);
            if (theirs.equals(mine) && prev != op.prev && tag == op.tag && msgBytes == op.bytes) {
                throw new CollectiveMismatchException("collective mismatch: ranks " + rank + " and " + c.peer + " both called "
                        + mine + ", but their previous collectives differ: rank " + rank + " called "
                        + TcpCall.describePrevious(op.prev, op.seq - 1) + ", rank " + c.peer + " called "
                        + TcpCall.describePrevious(prev, seq - 1) + " (the ranks that named different roots or "
                        + "collectives returned from it without seeing each other): every rank must call the same "
                        + "collectives with the same type, count, op and root in the same order");
            }
            msg = "collective mismatch: rank " + rank + " called " + mine + " but rank " + c.peer + " called " + theirs
                    + (theirs.equals(mine) ? " with another algorithm step (tag " + Long.toHexString(tag) + " vs "
                    + Long.toHexString(op.tag) + ", message " + msgBytes + " vs " + op.bytes + " bytes: different "
                    + "JCCL_ALGO or tuning settings?)" : "") + " at the same step: every rank must call the same "
                    + "collectives with the same type, count, op and root in the same order";
        }
        throw new CollectiveMismatchException(msg);
    }

    // ------------------------------------------------------------------ failure, abort, close

    /**
     * Marks this rank failed: tells every peer with an ABORT frame (a socket in the middle of a
     * data frame finishes it first), shuts the output down, discards what the peers still send
     * until they close (so that no reset destroys the ABORT frame in flight), then closes the
     * sockets: peers see the ABORT, or the closed connection, and stop waiting. Bounded: at most
     * {@link #FAIL_FLUSH_NANOS} to write, {@link #FAIL_DRAIN_NANOS} to drain. The first reason
     * stands; later calls do nothing.
     */
    public void fail(long code, String reason) {
        fail(code, reason, -1);
    }

    /**
     * {@link #fail(long, String)} blaming {@code culprit}: another rank (of this transport) that
     * died or did not arrive, whose peers then name it rather than this rank; -1 when this rank
     * itself failed.
     */
    public void fail(long code, String reason, int culprit) {
        if (failed || closed) {
            return;
        }
        failed = true;
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        TcpConnection[] cs = allRef;
        boolean[] done = new boolean[cs.length];
        long end = System.nanoTime() + FAIL_FLUSH_NANOS;
        while (true) {
            boolean all = true;
            for (int i = 0; i < cs.length; i++) {
                if (!done[i]) {
                    done[i] = cs[i].stepAbort(code, r, culprit);
                    all &= done[i];
                }
            }
            if (all || System.nanoTime() - end > 0) {
                break;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(200_000);
        }
        for (TcpConnection c : cs) {
            try {
                c.ch.shutdownOutput();
            } catch (IOException ignored) {
                // the peer may be gone already
            }
        }
        // Closing a socket with unread input sends a reset, which discards this side's data not
        // yet transmitted (the ABORT frame) and may cut the peer's reading short: read until each
        // peer closes too (it does once it failed on the ABORT), has sent nothing for
        // FAIL_QUIET_NANOS (a peer outside a call: the socket then closes with nothing unread), or
        // FAIL_DRAIN_NANOS passed.
        java.util.Arrays.fill(done, false);
        ByteBuffer scratch = ByteBuffer.allocate(64 << 10);
        long start = System.nanoTime();
        long[] lastInput = new long[cs.length];
        java.util.Arrays.fill(lastInput, start);
        while (true) {
            boolean all = true;
            long now = System.nanoTime();
            for (int i = 0; i < cs.length; i++) {
                if (!done[i]) {
                    int got = cs[i].discardInput(scratch);
                    if (got > 0) {
                        lastInput[i] = now;
                    }
                    done[i] = got < 0 || now - lastInput[i] > FAIL_QUIET_NANOS;
                    all &= done[i];
                }
            }
            if (all || now - start > FAIL_DRAIN_NANOS) {
                break;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(500_000);
        }
        for (TcpConnection c : cs) {
            c.close();
        }
        closeQuietly(selector);
    }

    /** How long {@link #fail} writes the ABORT frames at most. */
    private static final long FAIL_FLUSH_NANOS = 200_000_000L;
    /** How long {@link #fail} then waits at most for the peers to close, discarding their input. */
    private static final long FAIL_DRAIN_NANOS = 150_000_000L;
    /** A peer that sent nothing for this long while {@link #fail} drains is not waited for any longer. */
    private static final long FAIL_QUIET_NANOS = 20_000_000L;

    private void flushAll(long nanos) {
        long end = System.nanoTime() + nanos;
        while (true) {
            boolean all = true;
            for (TcpConnection c : allRef) {
                if (c.unflushed() && c.ch.isOpen() && !c.sendBroken) {
                    all &= c.tryFlush() || c.sendBroken;
                }
            }
            if (all || System.nanoTime() - end > 0) {
                return;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(200_000);
        }
    }

    /** Ends every wait of this rank with an {@link AbortedException}; callable from any thread. */
    public void abort(String reason) {
        localAbort = reason;
        try {
            selector.wakeup();
        } catch (RuntimeException ignored) {
            // closed meanwhile
        }
    }

    /** The reason of a local abort, or null. */
    public String abortReason() {
        return localAbort;
    }

    /** True once {@link #fail} ran. */
    public boolean isFailed() {
        return failed;
    }

    /** Tells the peers this rank closes (CLOSE frames), then closes every socket. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (!failed) {
            for (TcpConnection c : allRef) {
                c.appendClose();
            }
            flushAll(100_000_000L);
        }
        closed = true;
        for (TcpConnection c : allRef) {
            c.close();
        }
        closeQuietly(selector);
        java.util.Arrays.fill(viewSegs, null);
        java.util.Arrays.fill(views, null);
        arena.close();
    }

    @Override
    public String toString() {
        return "TcpTransport[" + name + ", rank " + rank + " of " + size + ", " + allRef.length + " sockets]";
    }
}
