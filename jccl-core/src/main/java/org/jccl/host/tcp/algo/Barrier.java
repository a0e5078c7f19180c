package org.jccl.host.tcp.algo;

import org.jccl.host.tcp.TcpTransport;

/**
 * Dissemination barrier: in round k every rank sends an empty message to rank + 2^k and waits
 * for the one from rank - 2^k; after ceil(log2 n) rounds every rank has heard, directly or not,
 * from every other.
 */
public final class Barrier {
    private Barrier() {
    }

    /** Returns once every rank entered (n >= 2). */
    public static void run(TcpTransport t) {
        int n = t.size();
        int r = t.rank();
        int round = 0;
        for (int d = 1; d < n; d <<= 1, round++) {
            long tag = Parts.tag(Parts.BARRIER, round, 0);
            int id = t.recv((r - d + n) % n, t.scratch(0, 64), 0, 0, tag);
            t.send((r + d) % n, t.scratch(0, 64), 0, 0, tag);
            t.await(id);
        }
        t.awaitAll();
    }
}
