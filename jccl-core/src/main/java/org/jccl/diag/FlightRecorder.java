package org.jccl.diag;

import static org.jccl.internal.Json.quote;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * A ring buffer of the last operations of one communicator on one rank: sequence number, what
 * was called, and when it was scheduled, started and completed. Recording allocates nothing (the
 * entries are preallocated primitive arrays); dumping writes JSON that {@link Doctor} reads.
 *
 * <p>Capacity: {@code JCCL_TRACE_BUFFER} (default 2000, 0 disables recording). Dumps go to
 * {@code JCCL_TRACE_DIR} on timeout, failure and abort, and on demand.
 *
 * <p>Dump format (one operation per line, so it is greppable):
 * <pre>
 * {"jccl_trace":1,"comm":"job-1a2b","rank":0,"size":4,"host":"h","pid":123,"reason":"...","dumped_at":"...",
 * "ops":[
 * {"seq":17,"op":"allReduce","dtype":"FLOAT32","count":1024,"redop":"SUM","root":-1,"peer":-1,"state":"completed","scheduled_us":...,"started_us":...,"completed_us":...},
 * ...
 * ]}
 * </pre>
 * Times are microseconds since the epoch; 0 when that state was not reached. A completion time
 * is stamped when the next operation starts (so it is an upper bound; 0 for the newest entry).
 */
public final class FlightRecorder {
    /** States of an entry. */
    public static final int SCHEDULED = 0, STARTED = 1, COMPLETED = 2, FAILED = 3;
    private static final String[] STATES = {"scheduled", "started", "completed", "failed"};

    private final int capacity;
    private final long[] seq;
    private final byte[] opcode;
    private final byte[] dtype;
    private final byte[] redop;
    private final int[] root;
    private final int[] peer;
    private final long[] count;
    private final byte[] state;
    private final long[] scheduled;
    private final long[] started;
    private final long[] completed;
    private final String[] opNames;
    private final long epochOffsetNanos;
    private long next;
    /** The slot of handle {@code next - 1} (the newest entry): the hot path divides nothing. */
    private int newest = -1;

    /**
     * @param capacity entries kept (0: recording is off)
     * @param opNames  names of the op codes the backend records
     */
    public FlightRecorder(int capacity, String[] opNames) {
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity is " + capacity + ": use >= 0 (0 turns recording off)");
        }
        this.capacity = capacity;
        this.seq = new long[capacity];
        this.opcode = new byte[capacity];
        this.dtype = new byte[capacity];
        this.redop = new byte[capacity];
        this.root = new int[capacity];
        this.peer = new int[capacity];
        this.count = new long[capacity];
        this.state = new byte[capacity];
        this.scheduled = new long[capacity];
        this.started = new long[capacity];
        this.completed = new long[capacity];
        this.opNames = opNames.clone();
        Instant now = Instant.now();
        this.epochOffsetNanos = now.getEpochSecond() * 1_000_000_000L + now.getNano() - System.nanoTime();
    }

    /** A recorder sized by JCCL_TRACE_BUFFER. */
    public static FlightRecorder fromEnv(String[] opNames) {
        String v = org.jccl.internal.Settings.get("JCCL_TRACE_BUFFER");
        int cap = 2000;
        if (v != null && !v.isBlank()) {
            try {
                cap = Integer.parseInt(v.trim());
                if (cap < 0 || cap > 10_000_000) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("JCCL_TRACE_BUFFER=" + v + " is invalid: give a number of operations in [0, 10000000]");
            }
        }
        return new FlightRecorder(cap, opNames);
    }

    /** The directory of automatic dumps (JCCL_TRACE_DIR), or null when unset. */
    public static Path traceDirFromEnv() {
        String v = org.jccl.internal.Settings.get("JCCL_TRACE_DIR");
        return v == null || v.isBlank() ? null : Path.of(v.trim());
    }

    /**
     * Records a scheduled operation; returns its handle for {@link #started}/{@link #completed}
     * (-1 when recording is off).
     *
     * @param redopOrdinal ReduceOp.Kind ordinal, or -1
     */
    public long schedule(long sequence, int op, int dtypeOrdinal, long elements, int redopOrdinal,
                                      int rootRank, int peerRank) {
        return schedule(sequence, op, dtypeOrdinal, elements, redopOrdinal, rootRank, peerRank, System.nanoTime());
    }

    /**
     * As {@link #schedule(long, int, int, long, int, int, int)} at time {@code now} (a
     * System.nanoTime the caller read anyway: one clock reading less on its hot path).
     */
    public long schedule(long sequence, int op, int dtypeOrdinal, long elements, int redopOrdinal,
                         int rootRank, int peerRank, long now) {
        if (capacity == 0) {
            return -1;
        }
        int prev = newest;
        if (prev >= 0) {
            // Completion is stamped lazily, with the next operation's start (one clock reading
            // per operation on the hot path): an upper bound of when it completed.
            if (completed[prev] == 0 && state[prev] == COMPLETED) {
                completed[prev] = now;
            }
        }
        long h = next++;
        // Wraps without a branch: the JIT warm-up clears the recorder before it fills, so a wrap
        // branch would first be taken at a caller's capacity-th call, and its trap would send the
        // compiled call path (this method inlined in it) back to the interpreter there.
        int i = prev + 1;
        i -= capacity & ((capacity - 1 - i) >> 31);
        newest = i;
        seq[i] = sequence;
        opcode[i] = (byte) op;
        dtype[i] = (byte) dtypeOrdinal;
        redop[i] = (byte) redopOrdinal;
        root[i] = rootRank;
        peer[i] = peerRank;
        count[i] = elements;
        state[i] = SCHEDULED;
        scheduled[i] = now;
        started[i] = 0;
        completed[i] = 0;
        return h;
    }

    /** Marks an entry started at the time it was scheduled (operations run at once). */
    public void startedNow(long handle) {
        int i = index(handle);
        if (i >= 0) {
            state[i] = STARTED;
            started[i] = scheduled[i];
        }
    }

    /** Marks an entry started. */
    public void started(long handle) {
        int i = index(handle);
        if (i >= 0) {
            state[i] = STARTED;
            started[i] = System.nanoTime();
        }
    }

    /** Marks an entry completed (its time is stamped when the next operation is scheduled). */
    public void completed(long handle) {
        int i = index(handle);
        if (i >= 0) {
            state[i] = COMPLETED;
        }
    }

    /**
     * Marks an entry completed at {@code nanos} (a System.nanoTime), for a caller that records
     * its operations after the fact and knows when each one finished.
     */
    public void completed(long handle, long nanos) {
        int i = index(handle);
        if (i >= 0) {
            state[i] = COMPLETED;
            completed[i] = nanos;
        }
    }

    /** Whether entries are kept (capacity above 0). */
    public boolean isRecording() {
        return capacity > 0;
    }

    /** Marks an entry failed. */
    public void failed(long handle) {
        int i = index(handle);
        if (i >= 0) {
            state[i] = FAILED;
            completed[i] = System.nanoTime();
        }
    }

    private int index(long handle) {
        // An entry overwritten since is no longer this handle's.
        if (handle == next - 1) {
            return newest; // the operation in progress (-1 before the first)
        }
        return handle < 0 || handle < next - capacity ? -1 : (int) (handle % capacity);
    }

    /**
     * Forgets every entry, so that the next one is the first the dump shows. Only while no recorded
     * operation is in flight (their handles would point at entries that are gone).
     */
    public void clear() {
        next = 0;
        newest = -1;
    }

    /** The JSON dump of the entries, oldest first. */
    public String toJson(String comm, int rank, int size, String reason) {
        StringBuilder b = new StringBuilder(256 + 200 * (int) Math.min(next, capacity));
        b.append("{\"jccl_trace\":1,\"comm\":").append(quote(comm)).append(",\"rank\":").append(rank)
                .append(",\"size\":").append(size).append(",\"host\":").append(quote(hostName()))
                .append(",\"pid\":").append(ProcessHandle.current().pid())
                .append(",\"reason\":").append(quote(reason == null ? "on demand" : reason))
                .append(",\"dumped_at\":").append(quote(Instant.now().toString())).append(",\n\"ops\":[\n");
        long first = Math.max(0, next - capacity);
        for (long h = first; h < next; h++) {
            int i = (int) (h % capacity);
            b.append("{\"seq\":").append(seq[i])
                    .append(",\"op\":").append(quote(opcode[i] < opNames.length ? opNames[opcode[i]] : "op" + opcode[i]))
                    .append(",\"dtype\":").append(quote(dtype[i] >= 0 && dtype[i] < DataType.values().length
                            ? DataType.values()[dtype[i]].name() : "-"))
                    .append(",\"count\":").append(count[i])
                    .append(",\"redop\":").append(quote(redop[i] >= 0 && redop[i] < ReduceOp.Kind.values().length
                            ? ReduceOp.Kind.values()[redop[i]].name() : "-"))
                    .append(",\"root\":").append(root[i]).append(",\"peer\":").append(peer[i])
                    .append(",\"state\":").append(quote(STATES[state[i]]))
                    .append(",\"scheduled_us\":").append(micros(scheduled[i]))
                    .append(",\"started_us\":").append(micros(started[i]))
                    .append(",\"completed_us\":").append(micros(completed[i]))
                    .append(h + 1 < next ? "},\n" : "}\n");
        }
        return b.append("]}\n").toString();
    }

    private long micros(long nanos) {
        return nanos == 0 ? 0 : (nanos + epochOffsetNanos) / 1000;
    }

    /**
     * The dump a backend writes by itself when a communicator fails: to {@code dir} (nothing when
     * it is null, i.e. JCCL_TRACE_DIR unset), with a warning that says where and how to read it,
     * or why it could not be written. Never throws: a failure being reported must not be masked.
     * Callers that share this recorder across threads hold its monitor, as for {@link #dump}.
     */
    public void dumpOnFailure(Path dir, String comm, int rank, int size, String reason, org.jccl.internal.Log log) {
        if (dir == null) {
            return;
        }
        try {
            Path f = dump(dir, comm, rank, size, reason);
            log.warn(rank, "flight recorder written to " + f + " (read all ranks' dumps with: jccl doctor " + dir + ")");
        } catch (IOException | RuntimeException e) {
            log.warn(rank, "cannot write the flight recorder to " + dir + ": " + e.getMessage());
        }
    }

    /**
     * Writes the dump to {@code dir/jccl-trace-<comm>-rank<r>.json} (atomically) and returns the
     * file.
     */
    public Path dump(Path dir, String comm, int rank, int size, String reason) throws IOException {
        Files.createDirectories(dir);
        Path file = dir.resolve("jccl-trace-" + comm.replaceAll("[^A-Za-z0-9._-]", "_") + "-rank" + rank + ".json");
        Path tmp = dir.resolve(file.getFileName() + ".tmp");
        Files.writeString(tmp, toJson(comm, rank, size, reason), StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return file;
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }
}
