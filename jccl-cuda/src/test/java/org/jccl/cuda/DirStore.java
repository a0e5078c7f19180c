package org.jccl.cuda;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Supplier;
import org.jccl.CollectiveTimeoutException;
import org.jccl.bootstrap.Store;

/**
 * A {@link Store} over a directory shared by the processes of one host, for the multi-process
 * GPU tests (the TCP store is built elsewhere). A key is a file named by the hex of its UTF-8
 * bytes; writes go through a temporary file and an atomic rename, and read-modify-write
 * operations hold an exclusive lock on {@code .lock}.
 */
final class DirStore implements Store {
    private final Path dir;

    DirStore(Path dir) {
        this.dir = dir;
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Path file(String key) {
        return dir.resolve("k" + HexFormat.of().formatHex(key.getBytes(StandardCharsets.UTF_8)));
    }

    private void write(String key, byte[] value) throws IOException {
        Path tmp = Files.createTempFile(dir, ".tmp", null);
        Files.write(tmp, value);
        Files.move(tmp, file(key), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private <T> T locked(Supplier<T> body) {
        try (FileChannel ch = FileChannel.open(dir.resolve(".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock l = ch.lock()) {
            return body.get();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void set(String key, byte[] value) {
        try {
            write(key, value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            byte[] v = tryGet(key);
            if (v != null) {
                return v;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new CollectiveTimeoutException("key '" + key + "' did not appear in " + dir + " within " + timeout,
                        List.of());
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    @Override
    public byte[] tryGet(String key) {
        try {
            return Files.readAllBytes(file(key));
        } catch (java.nio.file.NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public long add(String key, long delta) {
        return locked(() -> {
            byte[] v = tryGet(key);
            long n = (v == null ? 0 : ByteBuffer.wrap(v).getLong()) + delta;
            set(key, ByteBuffer.allocate(8).putLong(n).array());
            return n;
        });
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        return locked(() -> {
            byte[] v = tryGet(key);
            boolean match = (expected == null || expected.length == 0) ? v == null : Arrays.equals(v, expected);
            if (match) {
                set(key, desired);
                return desired;
            }
            return v;
        });
    }

    @Override
    public boolean delete(String key) {
        try {
            return Files.deleteIfExists(file(key));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void wait(List<String> keys, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (String k : keys) {
            long left = Math.max(1, deadline - System.nanoTime());
            get(k, Duration.ofNanos(left));
        }
    }

    @Override
    public long numKeys() {
        try (var s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith("k")).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
    }
}
