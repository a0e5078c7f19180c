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
import org.jccl.Jccl;
import org.jccl.Options;
import org.jccl.bootstrap.Store;
import org.jccl.bootstrap.TcpStore;
import org.jccl.bootstrap.TcpStoreServer;

/** Runs n ranks as threads of this JVM, each with its own store client and communicator. */
final class ThreadRanks {
    private ThreadRanks() {
    }

    /** Body of one rank. */
    interface RankBody<T> {
        T run(Communicator comm) throws Exception;
    }

    /** Forms an n-rank communicator (one per thread), runs body on each, returns each rank's result. */
    static <T> List<T> run(int n, Duration timeout, RankBody<T> body) throws Exception {
        return run(n, timeout, Duration.ofSeconds(120), body);
    }

    static <T> List<T> run(int n, Duration timeout, Duration testLimit, RankBody<T> body) throws Exception {
        return run(n, timeout, testLimit, o -> o, body);
    }

    /** As {@link #run(int, Duration, RankBody)}, with each rank's options passed through {@code customize} first. */
    static <T> List<T> run(int n, Duration timeout, Duration testLimit, java.util.function.UnaryOperator<Options> customize,
                           RankBody<T> body) throws Exception {
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), null)) {
            ExecutorService pool = Executors.newFixedThreadPool(n);
            try {
                String job = "t" + Long.toHexString(System.nanoTime());
                List<Future<T>> futures = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    int rank = r;
                    futures.add(pool.submit(() -> {
                        Store store = TcpStore.connect("127.0.0.1", server.port(), null, timeout);
                        Options o = customize.apply(Options.of(rank, n).withJobId(job).withTimeout(timeout)
                                .withBackend("host").withStore(store));
                        try (Communicator comm = Jccl.init(o)) {
                            return body.run(comm);
                        } finally {
                            store.close();
                        }
                    }));
                }
                List<T> out = new ArrayList<>();
                long end = System.nanoTime() + testLimit.toNanos();
                for (Future<T> f : futures) {
                    try {
                        out.add(f.get(Math.max(1, end - System.nanoTime()), TimeUnit.NANOSECONDS));
                    } catch (ExecutionException e) {
                        if (e.getCause() instanceof Exception ex) {
                            throw ex;
                        }
                        throw e;
                    } catch (TimeoutException e) {
                        throw new AssertionError("ranks did not finish within " + testLimit + " (hang)", e);
                    }
                }
                return out;
            } finally {
                pool.shutdownNow();
                pool.awaitTermination(10, TimeUnit.SECONDS);
            }
        }
    }
}
