package org.jccl.cuda;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jccl.CollectiveTimeoutException;
import org.jccl.bootstrap.Store;

/**
 * A store inside one process, for ranks that are threads of it ({@link NcclCommunicator#initAll}):
 * what JCCL_CHECK exchanges there needs no server.
 */
final class MemoryStore implements Store {
    private final Map<String, byte[]> map = new HashMap<>();

    @Override
    public synchronized void set(String key, byte[] value) {
        map.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value").clone());
        notifyAll();
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        wait(List.of(key), timeout);
        return tryGet(key);
    }

    @Override
    public synchronized byte[] tryGet(String key) {
        byte[] v = map.get(key);
        return v == null ? null : v.clone();
    }

    @Override
    public synchronized long add(String key, long delta) {
        byte[] v = map.get(key);
        long n = (v == null ? 0 : Long.parseLong(new String(v, java.nio.charset.StandardCharsets.US_ASCII))) + delta;
        map.put(key, Long.toString(n).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        notifyAll();
        return n;
    }

    @Override
    public synchronized byte[] compareSet(String key, byte[] expected, byte[] desired) {
        byte[] v = map.get(key);
        if ((v == null && (expected == null || expected.length == 0)) || (v != null && Arrays.equals(v, expected))) {
            map.put(key, desired.clone());
            notifyAll();
            return desired.clone();
        }
        return v == null ? null : v.clone();
    }

    @Override
    public synchronized boolean delete(String key) {
        return map.remove(key) != null;
    }

    @Override
    public synchronized void wait(List<String> keys, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!map.keySet().containsAll(keys)) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new CollectiveTimeoutException("in-process store wait for " + keys.size() + " key(s) timed out after "
                        + timeout, List.of());
            }
            try {
                wait(Math.max(1, left / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new org.jccl.AbortedException("interrupted while waiting for keys of the in-process store");
            }
        }
    }

    @Override
    public synchronized long numKeys() {
        return map.size();
    }

    @Override
    public void close() {
    }
}
