package org.jccl.bootstrap;

import java.time.Duration;

/** TCP rendezvous store (being written: see the bootstrap work). */
public final class TcpStore {
    private TcpStore() {
    }

    /**
     * Connects to the store at host:port; when {@code hostServer} and nothing listens there,
     * starts the server first. Clients retry until {@code timeout}.
     */
    public static Store open(String host, int port, boolean hostServer, String token, Duration timeout) {
        throw new org.jccl.JcclException("TcpStore is not built yet");
    }
}
