package org.jccl.spi;

/**
 * The operations of {@link org.jccl.Communicator}, as every backend receives them in an {@link Op}.
 * {@link #code()} is the host engine's wire numbering ({@code host.engine.OpCode}): append, never
 * reorder.
 */
public enum Collective {
    ALL_REDUCE("allReduce"),
    BROADCAST("broadcast"),
    REDUCE("reduce"),
    ALL_GATHER("allGather"),
    REDUCE_SCATTER("reduceScatter"),
    ALL_TO_ALL("allToAll"),
    GATHER("gather"),
    SCATTER("scatter"),
    BARRIER("barrier"),
    SEND("send"),
    RECV("recv");

    private static final Collective[] VALUES = values();
    private final String apiName;

    Collective(String apiName) {
        this.apiName = apiName;
    }

    /** The name of the {@link org.jccl.Communicator} method ("allReduce"). */
    public String apiName() {
        return apiName;
    }

    /** The operation code: the ordinal, which is the host engine's numbering on the wire. */
    public int code() {
        return ordinal();
    }

    /** The collective of operation code {@code code}. */
    public static Collective of(int code) {
        return VALUES[code];
    }

    /** Whether the operation has a root rank (broadcast, reduce, gather, scatter). */
    public boolean rooted() {
        return this == BROADCAST || this == REDUCE || this == GATHER || this == SCATTER;
    }

    /** Whether the operation is a send or a receive (it has a peer, not a root). */
    public boolean pointToPoint() {
        return this == SEND || this == RECV;
    }

    /** Whether the operation reduces (it takes a {@link org.jccl.ReduceOp}). */
    public boolean reduces() {
        return this == ALL_REDUCE || this == REDUCE || this == REDUCE_SCATTER;
    }
}
