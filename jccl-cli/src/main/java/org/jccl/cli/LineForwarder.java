package org.jccl.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Copies a rank's stdout or stderr to the launcher's, line by line, each line preceded by the
 * rank's prefix ("[3] ") unless it starts with it already (jccl's own log lines). A whole read is written under the target's lock in one write, so lines
 * of different ranks never interleave inside a line. Bytes pass through unchanged (no charset
 * decoding); a line longer than {@link #MAX_LINE} is cut into pieces so memory stays bounded.
 *
 * <p>With an empty prefix (rank 0 of {@code jccl perf --ranks}) a carriage return also ends a
 * piece, so a progress line redrawn in place shows up at once.
 */
final class LineForwarder implements Runnable {
    /** Longest piece kept waiting for its line break. */
    static final int MAX_LINE = 64 * 1024;
    /** The JVM's notice for --add-modules jdk.incubator.vector: noise in every rank's stderr. */
    static final byte[] INCUBATOR_WARNING =
            "WARNING: Using incubator modules: jdk.incubator.vector".getBytes(StandardCharsets.US_ASCII);
    /** What a JVM in -XX:AOTMode=record prints at exit (JCCL_AOT=on's training rank): not the program's output. */
    static final byte[] AOT_RECORD_NOTICE = "AOTConfiguration recorded: ".getBytes(StandardCharsets.US_ASCII);

    private final InputStream in;
    private final PrintStream target;
    private final byte[] prefix;
    private final boolean dropJvmNotices;
    private boolean dropped;

    /**
     * A forwarder.
     *
     * @param in                   the child's stream
     * @param target               where lines go; its monitor orders the writes of all forwarders
     * @param prefix               text put before each line ("" for none)
     * @param dropJvmNotices       whether to drop the JVM's notices: the incubator one (once), an AOT record's
     */
    LineForwarder(InputStream in, PrintStream target, String prefix, boolean dropJvmNotices) {
        this.in = in;
        this.target = target;
        this.prefix = prefix.getBytes(StandardCharsets.UTF_8);
        this.dropJvmNotices = dropJvmNotices;
    }

    @Override
    public void run() {
        byte[] buf = new byte[8192];
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        ByteArrayOutputStream batch = new ByteArrayOutputStream();
        boolean splitOnCr = prefix.length == 0;
        try (in) {
            int n;
            while ((n = in.read(buf)) > 0) {
                for (int i = 0; i < n; i++) {
                    byte b = buf[i];
                    line.write(b);
                    if (b == '\n' || (splitOnCr && b == '\r') || line.size() >= MAX_LINE) {
                        emit(line, batch, b != '\n' && b != '\r');
                    }
                }
                write(batch);
            }
        } catch (IOException e) {
            // The child is gone and its pipe broke: what was read is flushed below.
        }
        if (line.size() > 0) {
            emit(line, batch, true);
        }
        write(batch);
    }

    private void emit(ByteArrayOutputStream line, ByteArrayOutputStream batch, boolean addNewline) {
        byte[] bytes = line.toByteArray();
        line.reset();
        if (dropJvmNotices && !dropped && isIncubatorWarning(bytes)) {
            dropped = true;
            return;
        }
        if (dropJvmNotices && isAotRecordNotice(bytes)) {
            return;
        }
        if (!startsWith(bytes, 0, prefix)) {
            batch.writeBytes(prefix); // jccl's own log lines already carry it
        }
        batch.writeBytes(bytes);
        if (addNewline) {
            batch.write('\n');
        }
    }

    private static boolean startsWith(byte[] line, int from, byte[] start) {
        return line.length - from >= start.length && Arrays.equals(line, from, from + start.length, start, 0, start.length);
    }

    private static boolean isAotRecordNotice(byte[] line) {
        int i = 0;
        while (i < line.length && line[i] == ' ') {
            i++;
        }
        return startsWith(line, i, AOT_RECORD_NOTICE);
    }

    private static boolean isIncubatorWarning(byte[] line) {
        int end = line.length;
        while (end > 0 && (line[end - 1] == '\n' || line[end - 1] == '\r')) {
            end--;
        }
        return Arrays.equals(line, 0, end, INCUBATOR_WARNING, 0, INCUBATOR_WARNING.length);
    }

    private void write(ByteArrayOutputStream batch) {
        if (batch.size() == 0) {
            return;
        }
        synchronized (target) {
            target.write(batch.toByteArray(), 0, batch.size());
            target.flush();
        }
        batch.reset();
    }
}
