package org.jccl.bootstrap;

import java.time.Duration;
import java.util.List;

/**
 * A small key-value store the ranks of a job meet through (rendezvous, addresses, failure
 * reports). Keys are strings of at most 4 KiB; values are bytes of at most 64 MiB.
 * Implementations: {@link TcpStore}, {@link FileStore}; {@link PrefixStore} gives a namespace.
 */
public interface Store extends AutoCloseable {

    /** Largest key in bytes (UTF-8). */
    int MAX_KEY_BYTES = 4096;
    /** Largest value in bytes. */
    int MAX_VALUE_BYTES = 64 << 20;

    /** Sets (or replaces) a value. */
    void set(String key, byte[] value);

    /**
     * The value of {@code key}, waiting until it exists.
     *
     * @throws org.jccl.CollectiveTimeoutException when it does not appear within {@code timeout}
     */
    byte[] get(String key, Duration timeout);

    /** The value of {@code key} now, or null when it does not exist. Never waits. */
    byte[] tryGet(String key);

    /** Atomically adds {@code delta} to the 64-bit counter {@code key} (absent = 0); returns the new value. */
    long add(String key, long delta);

    /**
     * Atomically sets {@code key} to {@code desired} when its value equals {@code expected}
     * ({@code expected} null or empty: when the key does not exist). Returns the value after the call.
     */
    byte[] compareSet(String key, byte[] expected, byte[] desired);

    /** Deletes a key; true when it existed. */
    boolean delete(String key);

    /** Waits until every key exists; times out with the keys still missing named. */
    void wait(List<String> keys, Duration timeout);

    /** Number of keys in the store (in this store's namespace for a PrefixStore). */
    long numKeys();

    /** Closes the connection (and the server, for the store that hosts it). */
    @Override
    void close();
}
