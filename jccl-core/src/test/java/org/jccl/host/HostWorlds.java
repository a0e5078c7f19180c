package org.jccl.host;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jccl.Communicator;
import org.jccl.Options;
import org.jccl.bootstrap.PrefixStore;
import org.jccl.bootstrap.Store;
import org.jccl.bootstrap.TcpStore;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.host.tcp.TcpConfig;

/**
 * Worlds of the host engine whose ranks are threads of this JVM: each rank claims a host id (equal
 * ids share memory, others talk TCP) and a transport, as {@code JCCL_HOST_ID} and {@code
 * JCCL_TRANSPORT} would set per process. For the conformance kit and the engine's own tests.
 */
public final class HostWorlds {
    private HostWorlds() {
    }

    /** Body of one rank. */
    public interface RankBody<T> {
        /** Runs on the rank's communicator. */
        T run(Communicator comm) throws Exception;
    }

    /** Every rank on one host, shared memory. */
    public static String[] oneHost(int n) {
        String[] h = new String[n];
        java.util.Arrays.fill(h, "h0");
        return h;
    }

    /**
     * Forms a communicator of {@code hosts.length} threads (rank r on pretend host {@code
     * hosts[r]}) with {@code transport} ({@code TCP}: TCP between every pair), runs {@code body}
     * on each, and returns each rank's result; fails when they take longer than {@code limit}.
     */
    public static <T> List<T> run(String[] hosts, String transport, Duration timeout, Duration limit, RankBody<T> body)
            throws Exception {
        return runThreads(hosts.length, timeout, limit, "kit", placed(hosts, transport), body);
    }

    /** The opener of {@link #run}: rank r on pretend host {@code hosts[r]}, with {@code transport}. */
    private static Opener placed(String[] hosts, String transport) {
        TcpConfig.Transport tr = TcpConfig.Transport.valueOf(transport.toUpperCase(java.util.Locale.ROOT));
        return (rank, base, store, job) ->
                HostBackend.create(base.withStore(store), new PrefixStore("c/", store), job, hosts[rank], tr);
    }

    /**
     * As {@link #run}, but each rank meets the others through the store {@code storeOf} gives it
     * (e.g. a client of a store that speaks another protocol); the body's ranks close their stores.
     */
    public static <T> List<T> runOnStores(String[] hosts, String transport, Duration timeout, Duration limit,
                                          java.util.function.IntFunction<Store> storeOf, RankBody<T> body) throws Exception {
        return runRanks(hosts.length, timeout, limit, "kits", storeOf, placed(hosts, transport), body);
    }

    /** Every rank's result, in rank order; a rank's exception is rethrown, ranks still running after {@code limit} fail as a hang. */
    private static <T> List<T> collect(List<Future<T>> futures, Duration limit) throws Exception {
        List<T> out = new ArrayList<>();
        long end = System.nanoTime() + limit.toNanos();
        for (Future<T> f : futures) {
            try {
                out.add(f.get(Math.max(1, end - System.nanoTime()), TimeUnit.NANOSECONDS));
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Exception ex) {
                    throw ex;
                }
                throw e;
            } catch (TimeoutException e) {
                throw new AssertionError("ranks did not finish within " + limit + " (hang)", e);
            }
        }
        return out;
    }

    /** Opens rank {@code rank}'s communicator from {@code base} (rank, size, job id and timeout set) and its store client. */
    interface Opener {
        Communicator open(int rank, Options base, Store store, String job) throws Exception;
    }

    /**
     * Runs {@code n} ranks as threads of this JVM, each with its own client of a fresh store and
     * the communicator {@code opener} makes (job id {@code jobPrefix} + a hex time), runs {@code
     * body} on each and returns each rank's result; fails as a hang when they take longer than
     * {@code limit}.
     */
    static <T> List<T> runThreads(int n, Duration timeout, Duration limit, String jobPrefix, Opener opener,
                                  RankBody<T> body) throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), null)) {
            return runRanks(n, timeout, limit, jobPrefix, rank -> TcpStore.connect("127.0.0.1", server.port(), null, timeout),
                    opener, body);
        }
    }

    /**
     * The core of {@link #runThreads} and {@link #runOnStores}: {@code n} rank threads, each with the
     * store {@code storeOf} gives it (closed after the body) and the communicator {@code opener}
     * makes (job id {@code jobPrefix} + a hex time).
     */
    private static <T> List<T> runRanks(int n, Duration timeout, Duration limit, String jobPrefix,
                                        java.util.function.IntFunction<Store> storeOf, Opener opener, RankBody<T> body)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            String job = jobPrefix + Long.toHexString(System.nanoTime());
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                futures.add(pool.submit(() -> {
                    Store store = storeOf.apply(rank);
                    Options base = Options.of(rank, n).withJobId(job).withTimeout(timeout);
                    try (Communicator comm = opener.open(rank, base, store, job)) {
                        return body.run(comm);
                    } finally {
                        store.close();
                    }
                }));
            }
            return collect(futures, limit);
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(10, TimeUnit.SECONDS);
        }
    }
}
