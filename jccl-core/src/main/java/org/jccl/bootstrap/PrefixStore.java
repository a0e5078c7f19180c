package org.jccl.bootstrap;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A namespace inside another store: every key is prefixed, so sub-communicators and repeated
 * initialisations never see each other's keys. {@link #numKeys()} counts the whole inner store
 * (stores cannot list keys cheaply).
 */
public final class PrefixStore implements Store {
    private final String prefix;
    private final Store inner;
    private final boolean closesInner;

    /** A view of {@code inner} under {@code prefix}; closing it leaves {@code inner} open. */
    public PrefixStore(String prefix, Store inner) {
        this(prefix, inner, false);
    }

    private PrefixStore(String prefix, Store inner, boolean closesInner) {
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        this.inner = Objects.requireNonNull(inner, "inner");
        this.closesInner = closesInner;
        if (prefix.getBytes(StandardCharsets.UTF_8).length >= MAX_KEY_BYTES) {
            throw new IllegalArgumentException("prefix is longer than a key may be (" + MAX_KEY_BYTES + " bytes)");
        }
    }

    /** A view of {@code inner} under {@code prefix} that closes {@code inner} when it closes. */
    public static PrefixStore owning(String prefix, Store inner) {
        return new PrefixStore(prefix, inner, true);
    }

    /** The prefix of this namespace. */
    public String prefix() {
        return prefix;
    }

    /** The store this one is a view of. */
    public Store inner() {
        return inner;
    }

    private String k(String key) {
        return prefix + Objects.requireNonNull(key, "key");
    }

    @Override
    public void set(String key, byte[] value) {
        inner.set(k(key), value);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        return inner.get(k(key), timeout);
    }

    @Override
    public byte[] tryGet(String key) {
        return inner.tryGet(k(key));
    }

    @Override
    public long add(String key, long delta) {
        return inner.add(k(key), delta);
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        return inner.compareSet(k(key), expected, desired);
    }

    @Override
    public boolean delete(String key) {
        return inner.delete(k(key));
    }

    @Override
    public void wait(List<String> keys, Duration timeout) {
        List<String> full = new ArrayList<>(keys.size());
        for (String key : keys) {
            full.add(k(key));
        }
        inner.wait(full, timeout);
    }

    @Override
    public long numKeys() {
        return inner.numKeys();
    }

    @Override
    public void close() {
        if (closesInner) {
            inner.close();
        }
    }

    @Override
    public String toString() {
        return "PrefixStore[" + prefix + " over " + inner + "]";
    }
}
