package org.jccl.bootstrap;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A store whose waits ({@link #get} and {@link #wait(List, Duration)}) also end, with a {@link
 * org.jccl.PeerFailureException} naming the rank, as soon as the {@link Heartbeat} it belongs to
 * learns that a rank of the job died, until {@link #disarm()}. Made by {@link
 * Heartbeat#guard(Store)}; {@code Jccl.init} uses it for the rendezvous of a new communicator
 * (every rank takes part, so any death ends it) and disarms it once the communicator exists
 * (later waits, e.g. of a shrink among survivors, must not end because of a rank they exclude).
 *
 * <p>The guard needs a {@link TcpStore} at the bottom of the store (under any {@link PrefixStore}
 * views); over another store it only delegates. Closing it stops the heartbeat (its goodbye: the
 * rank left cleanly; first, so that a store server this process hosts does not wait for that
 * connection), then closes the wrapped store.
 */
public final class GuardedStore implements Store {
    private final Store delegate;
    private final Heartbeat heartbeat;
    /** The TcpStore under the PrefixStore views, or null. */
    private final TcpStore base;
    /** The prefixes of the views, outermost last applied. */
    private final String prefix;
    private volatile boolean armed = true;

    GuardedStore(Store delegate, Heartbeat heartbeat) {
        this.delegate = Objects.requireNonNull(delegate, "store");
        this.heartbeat = Objects.requireNonNull(heartbeat, "heartbeat");
        StringBuilder p = new StringBuilder();
        Store s = delegate;
        while (s instanceof PrefixStore ps) {
            p.append(ps.prefix());
            s = ps.inner();
        }
        this.base = s instanceof TcpStore t ? t : null;
        this.prefix = p.toString();
    }

    /** Waits no longer end on deaths (they wait for their key or their deadline, as a plain store's). */
    public void disarm() {
        armed = false;
    }

    /** Whether waits end on deaths. */
    public boolean isArmed() {
        return armed && base != null;
    }

    /** The heartbeat this store is guarded by. */
    public Heartbeat heartbeat() {
        return heartbeat;
    }

    @Override
    public void set(String key, byte[] value) {
        delegate.set(key, value);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        if (!isArmed()) {
            return delegate.get(key, timeout);
        }
        StoreProtocol.keyBytes(key);
        return base.get(prefix + key, timeout, heartbeat.deathSignal());
    }

    @Override
    public byte[] tryGet(String key) {
        return delegate.tryGet(key);
    }

    @Override
    public long add(String key, long delta) {
        return delegate.add(key, delta);
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        return delegate.compareSet(key, expected, desired);
    }

    @Override
    public boolean delete(String key) {
        return delegate.delete(key);
    }

    @Override
    public void wait(List<String> keys, Duration timeout) {
        if (!isArmed() || keys == null) {
            delegate.wait(keys, timeout);
            return;
        }
        List<String> full = new ArrayList<>(keys.size());
        for (String k : keys) {
            StoreProtocol.keyBytes(k);
            full.add(prefix + k);
        }
        base.wait(full, timeout, heartbeat.deathSignal());
    }

    @Override
    public long numKeys() {
        return delegate.numKeys();
    }

    /** Stops the heartbeat (which says goodbye to the store), then closes the wrapped store. */
    @Override
    public void close() {
        try {
            heartbeat.close();
        } finally {
            delegate.close();
        }
    }

    @Override
    public String toString() {
        return "GuardedStore[" + delegate + (isArmed() ? ", armed" : "") + "]";
    }
}
