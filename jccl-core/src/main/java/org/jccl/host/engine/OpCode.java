package org.jccl.host.engine;

/**
 * The host engine's operation codes: one numbering for the call fingerprints every transport
 * compares (shared-memory call words, TCP frames), flight-recorder entries and messages. Values
 * are part of the wire format between ranks: append, never renumber.
 */
public final class OpCode {
    public static final int ALL_REDUCE = 0, BROADCAST = 1, REDUCE = 2, ALL_GATHER = 3, REDUCE_SCATTER = 4,
            ALL_TO_ALL = 5, GATHER = 6, SCATTER = 7, BARRIER = 8, SEND = 9, RECV = 10, SPLIT = 11;
    /** The reduction code of an operation without one. */
    public static final int NO_REDOP = 15;

    /** What every collective mismatch message ends with: the rule the ranks broke. */
    public static final String SAME_CALLS =
            "every rank must call the same collectives with the same type, count, op and root in the same order";
    /** Operation names by code (the API's method names): the collectives', then split. */
    private static final String[] NAMES = java.util.stream.Stream.concat(
            java.util.Arrays.stream(org.jccl.spi.Collective.values()).map(org.jccl.spi.Collective::apiName),
            java.util.stream.Stream.of("split")).toArray(String[]::new);

    private OpCode() {
    }

    /** The API name of {@code code} ("allReduce"), or "op" + code for an unknown one. */
    public static String name(int code) {
        return code >= 0 && code < NAMES.length ? NAMES[code] : "op" + code;
    }

    /** opcode, dtype, redop and root packed into one word: the call fingerprint every transport compares. */
    public static long pack(int opcode, int dtype, int redop, int root) {
        return ((long) opcode << 48) | ((long) dtype << 40) | ((long) redop << 32) | (root & 0xffffffffL);
    }

    /** The operation code of a {@link #pack packed} fingerprint. */
    public static int opcodeOf(long packed) {
        return (int) (packed >>> 48) & 0xffff;
    }

    /**
     * A fingerprint in words: "allReduce #7 (FLOAT32 x 1024, SUM)", "broadcast #2 (INT8 x 5, root
     * 1)", "barrier #3 ()"; sends and receives (which share a fingerprint's opcode between the
     * two ends) read "send/recv". A negative {@code count} is left out.
     */
    public static String describe(long packed, long count, long seq) {
        int op = opcodeOf(packed);
        int dt = (int) (packed >>> 40) & 0xff;
        int ro = (int) (packed >>> 32) & 0xff;
        int root = (int) packed;
        StringBuilder b = new StringBuilder();
        b.append(op == SEND ? "send/recv" : name(op)).append(" #").append(seq).append(" (");
        if (op != BARRIER) {
            b.append(dt < org.jccl.DataType.values().length ? org.jccl.DataType.values()[dt] : "type" + dt);
            if (count >= 0) {
                b.append(" x ").append(count);
            }
            if (ro < org.jccl.ReduceOp.Kind.values().length) {
                b.append(", ").append(org.jccl.ReduceOp.Kind.values()[ro]);
            }
            if (root >= 0) {
                b.append(", root ").append(root);
            }
        }
        return b.append(')').toString();
    }

    /** The names by code, for the flight recorder. */
    public static String[] names() {
        return NAMES.clone();
    }
}
