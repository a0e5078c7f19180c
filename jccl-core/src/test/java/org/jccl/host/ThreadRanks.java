package org.jccl.host;

import java.time.Duration;
import java.util.List;
import org.jccl.Jccl;
import org.jccl.Options;

/** Runs n ranks as threads of this JVM, each with its own store client and communicator. */
final class ThreadRanks {
    private ThreadRanks() {
    }

    /** Body of one rank. */
    interface RankBody<T> extends HostWorlds.RankBody<T> {
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
        return HostWorlds.runThreads(n, timeout, testLimit, "t", (rank, base, store, job) ->
                Jccl.init(customize.apply(base.withBackend("host").withStore(store))), body);
    }
}
