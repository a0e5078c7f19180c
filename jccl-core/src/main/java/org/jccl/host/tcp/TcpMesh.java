package org.jccl.host.tcp;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.IntPredicate;
import org.jccl.AbortedException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.JcclException;
import org.jccl.bootstrap.Store;
import org.jccl.internal.Log;

/**
 * Sets up the sockets of a {@link TcpTransport}: publishes this rank's listen address in the
 * store, connects to the lower ranks (the higher rank of each pair connects; a rank connects to
 * itself for send/recv) while a {@link TcpAcceptor} accepts the higher ones, proves the job token
 * on every connection ({@link Handshake}), and registers the channels with the new transport.
 * Runs once per communicator, before its first call; nothing here is on the path of a message.
 */
final class TcpMesh {
    /** The transport's logger: the messages keep the name they had when this code was in TcpTransport. */
    private static final Log LOG = TcpTransport.LOG;

    private TcpMesh() {
    }

    /** {@link TcpTransport#open}: see there. */
    static TcpTransport open(String name, int rank, int size, Store store, Duration timeout, String token,
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
        TcpAcceptor acceptor = null;
        boolean ok = false;
        try {
            selector = Selector.open();
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(addr, 0), Math.max(128, 2 * expected));
            int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
            store.set("tcp/addr/" + rank, (addr.getHostAddress() + " " + port).getBytes(StandardCharsets.UTF_8));
            LOG.info(rank, () -> "tcp transport " + name + ": listening on " + addr.getHostAddress() + ":" + port);
            acceptor = new TcpAcceptor(server, name, commId, rank, size, k, cfg.chunkBytes(), token, expected, deadline,
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
            TcpTransport t = new TcpTransport(name, commId, rank, size, cfg, coll, p2p, selector, localRanks);
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
            TcpTransport.closeQuietly(server);
            if (!ok) {
                for (SocketChannel[] cs : chans) {
                    for (SocketChannel c : cs) {
                        TcpTransport.closeQuietly(c);
                    }
                }
                if (acceptor != null) {
                    acceptor.accepted.values().forEach(TcpTransport::closeQuietly);
                }
                TcpTransport.closeQuietly(selector);
            }
        }
    }

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
                    TcpTransport.closeQuietly(ch);
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
}
