package org.jccl.bootstrap;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.jccl.CollectiveTimeoutException;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;

/**
 * A store over a directory that every rank can reach (a shared filesystem, or a local directory
 * for ranks on one host). Same semantics as {@link TcpStore}, no server.
 *
 * <ul>
 *   <li>Each key is one file: {@code k-<base64url(UTF-8 key)>}, or {@code h-<hex SHA-256 of the key>}
 *       when that name would be longer than 200 characters. The file holds the value's bytes.</li>
 *   <li>Writes go to a temporary file ({@code .tmp-*}) that is renamed over the key's file
 *       (atomic), so a reader sees the old value or the new one, never a part.</li>
 *   <li>Writes (set, add, compareSet, delete) hold an exclusive lock on {@code .lock} in the
 *       directory ({@link FileChannel#lock()}, between processes; a lock per directory inside the
 *       JVM), so add and compareSet are atomic against every other writer.</li>
 *   <li>get and wait poll the files with a backoff from 1 ms up to 50 ms until the deadline.</li>
 *   <li>Counters are 8 bytes, little-endian, as in {@link StoreProtocol}.</li>
 * </ul>
 * On NFS, locking needs a working lock manager (lockd / NFSv4), and a key's file appears to
 * other hosts within the filesystem's attribute cache delay.
 */
public final class FileStore implements Store {
    private static final ConcurrentHashMap<Path, ReentrantLock> JVM_LOCKS = new ConcurrentHashMap<>();
    private static final int MAX_NAME = 200;
    private static final long MAX_POLL_MS = 50;

    private final Path dir;
    private final Path lockFile;
    private final ReentrantLock jvmLock;
    private volatile boolean closed;

    /** A store over {@code dir}, created when missing. */
    public FileStore(Path dir) {
        if (dir == null) {
            throw new IllegalArgumentException("dir is null: give the directory the ranks share");
        }
        try {
            Files.createDirectories(dir);
            this.dir = dir.toRealPath();
        } catch (IOException e) {
            throw new JcclException("file store: cannot create or open the directory " + dir + ": " + e, e);
        }
        this.lockFile = this.dir.resolve(".lock");
        this.jvmLock = JVM_LOCKS.computeIfAbsent(this.dir, p -> new ReentrantLock());
    }

    /** Same as the constructor. */
    public static FileStore open(Path dir) {
        return new FileStore(dir);
    }

    /** The directory. */
    public Path directory() {
        return dir;
    }

    // ---------------------------------------------------------------------------------------------
    // Store operations

    @Override
    public void set(String key, byte[] value) {
        Path p = path(key);
        StoreProtocol.checkValue(value, "value");
        locked("set", key, () -> {
            write(p, value);
            return null;
        });
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        Path p = path(key);
        long deadline = deadline(timeout);
        long sleep = 1;
        while (true) {
            byte[] v = read(p, "get", key);
            if (v != null) {
                return v;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new CollectiveTimeoutException("store get of key '" + TcpStoreServer.shortKey(key) + "' timed out after "
                        + timeout + " in the file store at " + dir + ": no rank set that key (is a rank missing, dead or "
                        + "behind, or on a host that does not share this directory?)", List.of());
            }
            sleep = pause(sleep, left);
        }
    }

    @Override
    public byte[] tryGet(String key) {
        return read(path(key), "tryGet", key);
    }

    @Override
    public long add(String key, long delta) {
        Path p = path(key);
        return locked("add", key, () -> {
            byte[] cur = readOrNull(p);
            if (cur != null && cur.length != 8) {
                throw new JcclException("the file store at " + dir + " refused add of key '" + TcpStoreServer.shortKey(key)
                        + "': its value has " + cur.length + " bytes and is not a counter (a counter is 8 bytes, little-endian)");
            }
            long now = (cur == null ? 0 : StoreProtocol.decodeCounter(cur)) + delta;
            write(p, StoreProtocol.encodeCounter(now));
            return now;
        });
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        Path p = path(key);
        byte[] exp = expected == null ? new byte[0] : StoreProtocol.checkValue(expected, "expected");
        StoreProtocol.checkValue(desired, "desired");
        return locked("compareSet", key, () -> {
            byte[] cur = readOrNull(p);
            if (exp.length == 0 ? cur == null : cur != null && Arrays.equals(cur, exp)) {
                write(p, desired);
                return desired.clone();
            }
            return cur;
        });
    }

    @Override
    public boolean delete(String key) {
        Path p = path(key);
        return locked("delete", key, () -> Files.deleteIfExists(p));
    }

    @Override
    public void wait(List<String> keys, Duration timeout) {
        if (keys == null) {
            throw new IllegalArgumentException("keys is null");
        }
        Map<String, Path> missing = new LinkedHashMap<>();
        for (String k : keys) {
            missing.put(k, path(k));
        }
        long deadline = deadline(timeout);
        long sleep = 1;
        while (true) {
            missing.values().removeIf(Files::exists);
            checkOpen("wait", null);
            if (missing.isEmpty()) {
                return;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                List<String> names = List.copyOf(missing.keySet());
                throw new CollectiveTimeoutException("store wait timed out after " + timeout + " in the file store at " + dir
                        + ": " + names.size() + " of " + keys.size() + " keys never appeared: "
                        + names.subList(0, Math.min(20, names.size())).stream().map(TcpStoreServer::shortKey).toList()
                        + (names.size() > 20 ? " and " + (names.size() - 20) + " more" : "")
                        + " (is a rank missing, dead or behind?)", List.of());
            }
            sleep = pause(sleep, left);
        }
    }

    @Override
    public long numKeys() {
        checkOpen("numKeys", null);
        long n = 0;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                if (name.startsWith("k-") || name.startsWith("h-")) {
                    n++;
                }
            }
        } catch (IOException e) {
            throw new JcclException("file store at " + dir + ": cannot list the directory: " + e, e);
        }
        return n;
    }

    /** Marks the store closed; the files stay (remove the directory when the job is done). */
    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return "FileStore[" + dir + (closed ? ", closed" : "") + "]";
    }

    // ---------------------------------------------------------------------------------------------
    // Files

    /** The file of a key; validates the key. */
    private Path path(String key) {
        byte[] k = StoreProtocol.keyBytes(key);
        String b64 = Base64.getUrlEncoder().withoutPadding().encodeToString(k);
        if (b64.length() + 2 <= MAX_NAME) {
            return dir.resolve("k-" + b64);
        }
        try {
            byte[] h = MessageDigest.getInstance("SHA-256").digest(k);
            return dir.resolve("h-" + HexFormat.of().formatHex(h));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is not available in this JDK", e);
        }
    }

    private byte[] read(Path p, String op, String key) {
        checkOpen(op, key);
        try {
            return readOrNull(p);
        } catch (IOException e) {
            throw new JcclException("file store at " + dir + ": " + op + " of key '" + TcpStoreServer.shortKey(key)
                    + "' failed: " + e, e);
        }
    }

    private static byte[] readOrNull(Path p) throws IOException {
        try {
            return Files.readAllBytes(p);
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    private void write(Path p, byte[] value) throws IOException {
        Path tmp = dir.resolve(".tmp-" + UUID.randomUUID());
        try {
            Files.write(tmp, value, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            try {
                Files.move(tmp, p, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, p, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private interface IoBody<T> {
        T run() throws IOException;
    }

    /** Runs {@code body} holding the directory's lock (in this JVM and between processes). */
    private <T> T locked(String op, String key, IoBody<T> body) {
        checkOpen(op, key);
        jvmLock.lock();
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            FileLock lock = ch.lock();
            try {
                return body.run();
            } finally {
                lock.release();
            }
        } catch (IOException e) {
            throw new JcclException("file store at " + dir + ": " + op + " of key '" + TcpStoreServer.shortKey(key)
                    + "' failed: " + e, e);
        } finally {
            jvmLock.unlock();
        }
    }

    private void checkOpen(String op, String key) {
        if (closed) {
            throw new InvalidUsageException(op + " on a closed file store (" + dir + ")");
        }
    }

    private static long deadline(Duration timeout) {
        if (timeout == null) {
            throw new IllegalArgumentException("timeout is null: give a Duration (e.g. Duration.ofSeconds(30))");
        }
        long ns;
        try {
            ns = Math.min(timeout.toNanos(), Long.MAX_VALUE / 4);
        } catch (ArithmeticException e) {
            ns = Long.MAX_VALUE / 4;
        }
        return System.nanoTime() + Math.max(ns, 0);
    }

    /** Sleeps {@code sleepMs} (at most what is left), returns the next backoff. */
    private static long pause(long sleepMs, long leftNanos) {
        long ms = Math.max(1, Math.min(sleepMs, TimeUnit.NANOSECONDS.toMillis(leftNanos) + 1));
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new JcclException("interrupted while waiting on the file store", e);
        }
        return Math.min(sleepMs * 2, MAX_POLL_MS);
    }
}
