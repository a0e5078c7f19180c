package org.jccl.mpi;

import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.diag.FlightRecorder;

/**
 * The flight recorder of one {@link MpiCommunicator}: the last {@code JCCL_TRACE_BUFFER}
 * operations, dumped by {@code dumpFlightRecord} or on a failure into {@code JCCL_TRACE_DIR}. Works
 * complete on other threads, so every access holds the recorder's monitor.
 */
final class MpiTrace {
    /** Operation names as the flight recorder and jccl doctor show them. */
    private static final String[] OPS = java.util.Arrays.stream(org.jccl.spi.Collective.values())
            .map(org.jccl.spi.Collective::apiName).toArray(String[]::new);

    private final FlightRecorder recorder = FlightRecorder.fromEnv(OPS);
    private final java.nio.file.Path traceDir = FlightRecorder.traceDirFromEnv();
    /** Collectives issued (sends and receives are not counted: they need not pair up across ranks). */
    private long collectives;

    /** Records operation {@code name} as started (called under the communicator's lock); its handle. */
    long start(String name, DataType type, long n, ReduceOp op, int peer) {
        int code = java.util.Arrays.asList(OPS).indexOf(name);
        boolean p2p = name.equals("send") || name.equals("recv");
        long index = p2p ? 0 : ++collectives;
        synchronized (recorder) {
            long h = recorder.schedule(index, code, type == null ? -1 : type.ordinal(), n,
                    op == null ? -1 : op.kind().ordinal(), p2p ? -1 : peer, p2p ? peer : -1);
            recorder.started(h);
            return h;
        }
    }

    /** Records an operation's end. */
    void end(long handle, boolean ok) {
        synchronized (recorder) {
            if (ok) {
                recorder.completed(handle);
            } else {
                recorder.failed(handle);
            }
        }
    }

    /** Dumps into JCCL_TRACE_DIR, when set, after a failure. */
    void dumpOnFailure(String id, int rank, int size, String reason, org.jccl.internal.Log log) {
        synchronized (recorder) {
            recorder.dumpOnFailure(traceDir, id, rank, size, reason, log);
        }
    }

    /** Writes the record as {@code dir/jccl-trace-<comm>-rank<r>.json}. */
    java.nio.file.Path dump(java.nio.file.Path dir, String id, int rank, int size) {
        try {
            synchronized (recorder) {
                return recorder.dump(dir, id, rank, size, "dumpFlightRecord() called");
            }
        } catch (java.io.IOException e) {
            throw new JcclException("cannot write the flight recorder to " + dir + ": " + e.getMessage(), e);
        }
    }
}
