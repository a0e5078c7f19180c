package org.jccl.cuda;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.CollectiveMismatchException;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.bootstrap.Store;

/**
 * {@code JCCL_CHECK=1} for the NCCL backend: before a collective is handed to NCCL, every rank
 * posts its fingerprint (sequence, operation, data type, count, root, reduction) in the store and
 * reads every other rank's. NCCL cannot tell that two ranks called different collectives; it
 * would hang or move the wrong bytes. With the check, a mismatch fails the collective on every
 * rank, before anything is launched, with a message that shows what each rank called, and a
 * rank that never arrives is named in the timeout. The communicator stays usable afterwards:
 * no rank launched the mismatched collective.
 *
 * <p>Cost: one store write and one store read per peer per collective (tens of microseconds
 * over TCP per peer): a debugging mode. Sends and receives are not checked.
 *
 * <pre>
 * key:   &lt;prefix&gt;/&lt;sequence&gt;/&lt;rank&gt;
 * value: +--------+--------+--------+---------+--------+
 *        | kind   | dtype  | root   | redop   | count  |
 *        | int32  | int32  | int32  | int32   | int64  |   big-endian, 24 bytes
 *        +--------+--------+--------+---------+--------+
 * </pre>
 */
final class CollectiveCheck {
    /** Bytes of a fingerprint: the fields of the table above, in its order. */
    static final int BYTES = 24;
    private static final long SLICE_NANOS = 100_000_000;

    /** Whether JCCL_CHECK asks for the check. */
    static boolean enabledByEnv() {
        return org.jccl.internal.CheckSetting.enabled(System.getenv());
    }

    private final Store store;
    private final String prefix;
    private final int rank;
    private final int size;
    private final Duration timeout;

    CollectiveCheck(Store store, String prefix, int rank, int size, Duration timeout) {
        this.store = store;
        this.prefix = prefix;
        this.rank = rank;
        this.size = size;
        this.timeout = timeout;
    }

    /** The encoded fingerprint of one call. */
    static byte[] fingerprint(int kind, DataType type, long count, int root, ReduceOp op) {
        return ByteBuffer.allocate(BYTES).putInt(kind).putInt(type == null ? -1 : type.ordinal()).putInt(root)
                .putInt(op == null ? -1 : op.kind().ordinal()).putLong(count).array();
    }

    static String describe(byte[] fp) {
        ByteBuffer b = ByteBuffer.wrap(fp);
        int kind = b.getInt();
        int dt = b.getInt();
        int root = b.getInt();
        int red = b.getInt();
        long count = b.getLong();
        StringBuilder s = new StringBuilder(NcclCommunicator.opName(kind)).append('(');
        s.append(dt < 0 || dt >= DataType.values().length ? "?" : DataType.values()[dt]).append(" x ").append(count);
        if (red >= 0 && red < ReduceOp.Kind.values().length) {
            s.append(", ").append(ReduceOp.Kind.values()[red]);
        }
        if (kind >= 0 && kind < org.jccl.spi.Collective.values().length && org.jccl.spi.Collective.of(kind).rooted()) {
            s.append(", root ").append(root);
        }
        return s.append(')').toString();
    }

    private String key(long seq, int r) {
        return prefix + "/" + seq + "/" + r;
    }

    /** Publishes this rank's fingerprint of operation {@code seq}; never blocks on peers. */
    void post(long seq, byte[] fp) {
        store.set(key(seq, rank), fp);
        if (seq > 2) {
            // Every rank that posted seq - 1 has read all of seq - 2: this rank's older key is no longer needed.
            store.delete(key(seq - 2, rank));
        }
    }

    /**
     * Reads every other rank's fingerprint of collective {@code seq} and compares it with {@code
     * mine}. Returns early with {@code stopped}'s exception when it gives one (the communicator
     * was aborted).
     *
     * @throws CollectiveMismatchException when any rank called something else (on every rank)
     * @throws CollectiveTimeoutException  naming the ranks that did not post within the deadline
     */
    void verify(long seq, byte[] mine, String what, java.util.function.Supplier<JcclException> stopped) {
        List<String> keys = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (r != rank) {
                keys.add(key(seq, r));
            }
        }
        if (keys.isEmpty()) {
            return;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            // In slices, so that an abort of the communicator releases this wait within a fraction of a second.
            long left = deadline - System.nanoTime();
            try {
                store.wait(keys, Duration.ofNanos(Math.max(1_000_000, Math.min(left, SLICE_NANOS))));
                break;
            } catch (CollectiveTimeoutException e) {
                JcclException stop = stopped.get();
                if (stop != null) {
                    throw stop;
                }
                if (System.nanoTime() - deadline < 0) {
                    continue;
                }
                List<Integer> missing = new ArrayList<>();
                for (int r = 0; r < size; r++) {
                    if (r != rank && store.tryGet(key(seq, r)) == null) {
                        missing.add(r);
                    }
                }
                throw new CollectiveTimeoutException(what + " (JCCL_CHECK) timed out after " + timeout + " on rank " + rank
                        + ": rank(s) " + missing + " had not called collective #" + seq + " (stuck, dead, or they called "
                        + "fewer collectives)", missing);
            }
        }
        byte[][] all = new byte[size][];
        all[rank] = mine;
        boolean same = true;
        for (int r = 0; r < size; r++) {
            if (r != rank) {
                all[r] = store.get(key(seq, r), timeout);
                same &= java.util.Arrays.equals(all[r], mine);
            }
        }
        if (!same) {
            StringBuilder m = new StringBuilder("collective mismatch at collective #").append(seq)
                    .append(" (JCCL_CHECK): ");
            for (int r = 0; r < size; r++) {
                m.append(r == 0 ? "" : "; ").append("rank ").append(r).append(" called ").append(describe(all[r]));
            }
            m.append(". Nothing was launched: every rank must call the same collectives, in the same order, with the same "
                    + "type, count and root.");
            throw new CollectiveMismatchException(m.toString());
        }
    }
}
