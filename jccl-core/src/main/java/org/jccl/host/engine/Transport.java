package org.jccl.host.engine;

import org.jccl.HostBuffer;
import org.jccl.spi.Liveness;

/**
 * What {@link EngineCommunicator} does with the transport its communicator runs on, the same for
 * every transport: makes its sends and receives, tells it which peers died, ends its waits, and
 * releases it. The collectives use the transport's own type.
 */
public interface Transport extends AutoCloseable {
    /** A send ({@code isSend}) or receive of {@code b} with {@code peer}; a peer equal to this rank is allowed. */
    P2p newP2p(boolean isSend, HostBuffer b, int peer);

    /** Deaths the store's heartbeats report, in this transport's ranks (set once, before use). */
    void watch(Liveness.Watch watch);

    /** Ends every wait of this rank with an {@link org.jccl.AbortedException}; callable from any thread. */
    void abort(String reason);

    /** Ranks of the communicator on this host, the calling one included (they share its CPUs). */
    int localRanks();

    /** Releases the transport; idempotent. */
    @Override
    void close();
}
