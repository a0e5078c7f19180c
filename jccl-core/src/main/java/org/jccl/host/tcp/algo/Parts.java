package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.tcp.TcpTransport;
import org.jccl.internal.SegmentArrays;

/**
 * What the TCP algorithms share: element arithmetic (parts of a vector, chunks, tags) and the
 * steps several of them take the same way (posting a block to or from every peer, sending a range
 * in chunks, reducing the received blocks). Small static methods: the JIT inlines them. Public
 * only for the message tags ({@link #tag} and the algorithm ids), which the transport's tests
 * build frames with.
 */
public final class Parts {
    private Parts() {
    }

    /** Start element of part {@code i} when {@code count} elements are split into {@code n} near-equal parts. */
    static long start(long count, int n, int i) {
        return i * (count / n) + Math.min(i, count % n);
    }

    /** Smallest pipelining chunk: below it a chunk's fixed costs (a frame, a wake-up) dominate. */
    static final int MIN_PIPELINE_BYTES = 64 << 10;

    /**
     * Elements per pipelining chunk of a part of {@code partElems} elements: a quarter of the
     * part, so that the next step starts while the part still arrives, between {@value
     * #MIN_PIPELINE_BYTES} bytes and the transport's chunk size. Both ends of a message compute it
     * from the same part, so they cut it the same way.
     */
    static long pipelineElems(TcpTransport t, int es, long partElems) {
        long bytes = Math.min(t.chunkBytes(), Math.max(MIN_PIPELINE_BYTES, partElems * es / 4));
        return Math.max(1, bytes / es);
    }

    /** Chunks of a part of {@code len} elements (0 for an empty part). */
    static int chunks(long len, long per) {
        return (int) ((len + per - 1) / per);
    }

    /**
     * Chunks of a message of {@code len} elements: at least one, so that an empty message still
     * travels (the receiver posts one).
     */
    static int messageChunks(long len, long per) {
        return Math.max(1, chunks(len, per));
    }

    /**
     * Receives in flight for an algorithm that receives into scratch slots (one per receive, to
     * reduce from): enough to keep every socket to the peer busy.
     */
    static int scratchWindow(TcpTransport t) {
        return Math.max(4, 2 * t.socketsPerPeer());
    }

    /** Receives in flight for an algorithm that receives in place (no scratch slot to bound them). */
    static int inPlaceWindow(TcpTransport t) {
        return Math.max(8, 4 * t.socketsPerPeer());
    }

    /** The next rank on the ring. */
    static int next(TcpTransport t) {
        return (t.rank() + 1) % t.size();
    }

    /** The previous rank on the ring. */
    static int prev(TcpTransport t) {
        return (t.rank() + t.size() - 1) % t.size();
    }

    /**
     * Elements of chunk {@code c} of a range of {@code len} elements cut into chunks of {@code per}
     * (0 past its end).
     */
    static long chunkLen(long len, long per, int c) {
        return Math.max(0, Math.min(per, len - c * per));
    }

    /**
     * The tag of a message: algorithm, step and chunk, so that ranks running different
     * algorithms or steps never match each other's frames.
     */
    public static long tag(int algo, int step, long chunk) {
        return ((long) algo << 56) | ((long) (step & 0xffffff) << 32) | (chunk & 0xffffffffL);
    }

    /** Algorithm ids of the tags. */
    public static final int ONESHOT = 1, RING = 2, RHD = 3, RING_RS = 4, RING_AG = 5, DIRECT_AG = 6, TREE_BCAST = 7,
            CHAIN_BCAST = 8, DIRECT_REDUCE = 9, CHAIN_REDUCE = 10, GATHER = 11, SCATTER = 12, ALLTOALL = 13, BARRIER = 14,
            SPLIT = 15, HELLO = 16;

    /**
     * Sends elements {@code [lo, lo + len)} of {@code seg} to {@code peer} in chunks of {@code
     * per} elements, tagged ({@code algo}, {@code step}, chunk): at least one chunk, so an empty
     * range still sends one empty message (the receiver posts one).
     */
    static void sendInChunks(TcpTransport t, int peer, MemorySegment seg, long lo, long len, long per, int es, int algo,
                             int step) {
        int cs = messageChunks(len, per);
        for (int c = 0; c < cs; c++) {
            t.send(peer, seg, (lo + c * per) * es, chunkLen(len, per, c) * es, tag(algo, step, c));
        }
    }

    /**
     * What a non-root rank does in a direct rooted collective (gather, reduce): sends its whole
     * input to the root in one message and waits until it is out.
     */
    static void sendToRoot(TcpTransport t, HostBuffer send, int root, long tag) {
        t.await(t.send(root, send.segment(), 0, send.byteSize(), tag));
    }

    /**
     * Posts the receive of block p ({@code blockBytes} at p * {@code blockBytes} of {@code into})
     * from every other rank p, in the order rank + 1, rank + 2, ...
     */
    static void recvBlockFromEach(TcpTransport t, MemorySegment into, long blockBytes, long tag) {
        int n = t.size();
        int r = t.rank();
        for (int k = 1; k < n; k++) {
            int p = (r + k) % n;
            t.recv(p, into, p * blockBytes, blockBytes, tag);
        }
    }

    /** {@link #recvBlockFromEach}, in the order rank - 1, rank - 2, ... */
    static void recvBlockFromEachBackwards(TcpTransport t, MemorySegment into, long blockBytes, long tag) {
        int n = t.size();
        int r = t.rank();
        for (int k = 1; k < n; k++) {
            int p = (r + n - k) % n;
            t.recv(p, into, p * blockBytes, blockBytes, tag);
        }
    }

    /**
     * Posts the send of {@code bytes} at p * {@code stride} of {@code from} to every other rank p,
     * in the order rank + 1, rank + 2, ...; stride 0 sends the same bytes to all.
     */
    static void sendToEach(TcpTransport t, MemorySegment from, long stride, long bytes, long tag) {
        int n = t.size();
        int r = t.rank();
        for (int k = 1; k < n; k++) {
            int p = (r + k) % n;
            t.send(p, from, p * stride, bytes, tag);
        }
    }

    /**
     * Reduces the n blocks of {@code count} elements, in rank order, into {@code dst}: this rank's
     * from {@code own} at {@code ownOffset}, rank p's from {@code received} at p * {@code
     * blockBytes}; then drops the references to the sources.
     */
    static void reduceReceived(TcpTransport t, DataType type, ReduceOp op, MemorySegment own, long ownOffset,
                               MemorySegment received, long blockBytes, MemorySegment dst, long count) {
        int n = t.size();
        int r = t.rank();
        for (int p = 0; p < n; p++) {
            SegmentArrays.set(t.srcs, p, p == r ? own : received);
            t.srcOffsets[p] = p == r ? ownOffset : p * blockBytes;
        }
        Reductions.reduce(type, op, dst, 0, t.srcs, t.srcOffsets, n, count, n);
        java.util.Arrays.fill(t.srcs, null);
    }

    /**
     * Copies this rank's block, {@code send}, into block {@code r} of {@code recv}, unless it is
     * there already (validated: a send that overlaps recv is block r of it, in place).
     */
    static void ownBlockIntoRecv(HostBuffer send, HostBuffer recv, int r) {
        if (!send.overlaps(recv)) {
            long bytes = send.byteSize();
            MemorySegment.copy(send.segment(), 0, recv.segment(), r * bytes, bytes);
        }
    }

    /**
     * Reduces two sources into {@code dst} at {@code dstOffset}: {@code elems} elements of {@code
     * a} (first) and {@code b}, through the transport's source arrays (slots 0 and 1; the caller
     * drops them at the end, {@link #dropPairSources}).
     */
    static void reducePair(TcpTransport t, DataType type, ReduceOp op, MemorySegment dst, long dstOffset,
                           MemorySegment a, long aOffset, MemorySegment b, long bOffset, long elems) {
        SegmentArrays.set(t.srcs, 0, a);
        t.srcOffsets[0] = aOffset;
        SegmentArrays.set(t.srcs, 1, b);
        t.srcOffsets[1] = bOffset;
        Reductions.reduce(type, op, dst, dstOffset, t.srcs, t.srcOffsets, 2, elems, 1);
    }

    /** Drops the references {@link #reducePair} left in the transport's source arrays. */
    static void dropPairSources(TcpTransport t) {
        t.srcs[0] = null;
        t.srcs[1] = null;
    }

    /** For AVG, divides the {@code elems} elements at {@code offset} of {@code seg} by {@code n}: the last step. */
    static void divideIfAvg(ReduceOp op, DataType type, MemorySegment seg, long offset, long elems, int n) {
        if (op.kind() == ReduceOp.Kind.AVG) {
            Reductions.divide(type, seg, offset, elems, n);
        }
    }

    /**
     * Makes {@code recv} this rank's input, for an algorithm that reduces in it in place: copies
     * {@code send} into it (unless in place), then scales it for PREMUL_SUM.
     */
    static void inputIntoRecv(HostBuffer send, HostBuffer recv, ReduceOp op) {
        DataType type = send.type();
        long count = send.count();
        if (!send.sameStart(recv)) {
            MemorySegment.copy(send.segment(), 0, recv.segment(), 0, count * type.byteSize());
        }
        if (op.kind() == ReduceOp.Kind.PREMUL_SUM) {
            Reductions.scale(type, op.scalar(), recv.segment(), 0, count);
        }
    }

    /**
     * The input of an algorithm that accumulates partial results: for PREMUL_SUM the first {@code
     * elems} elements of {@code in} scaled by the op's scalar, in scratch slot 1; else {@code in}.
     */
    static MemorySegment premulScaled(TcpTransport t, DataType type, ReduceOp op, MemorySegment in, long elems) {
        if (op.kind() != ReduceOp.Kind.PREMUL_SUM) {
            return in;
        }
        long bytes = elems * type.byteSize();
        MemorySegment scaled = t.scratch(1, bytes);
        MemorySegment.copy(in, 0, scaled, 0, bytes);
        Reductions.scale(type, op.scalar(), scaled, 0, elems);
        return scaled;
    }

    /**
     * The operator that accumulates partial results: SUM for AVG (divided once at the end) and for
     * PREMUL_SUM (scaled once at the start, {@link #premulScaled}); else {@code op}.
     */
    static ReduceOp accumulateOp(ReduceOp op) {
        return op.kind() == ReduceOp.Kind.AVG || op.kind() == ReduceOp.Kind.PREMUL_SUM ? ReduceOp.SUM : op;
    }

    /**
     * The fingerprint exchange of {@code JCCL_CHECK}: dissemination, round k sends an empty hello
     * (the frame header carries the call's fingerprint) to rank + 2^k and waits for the one of rank
     * - 2^k, which its receiver checks.
     */
    static void agree(TcpTransport t) {
        int n = t.size();
        int rank = t.rank();
        MemorySegment none = t.scratch(3, 64);
        int k = 0;
        for (int d = 1; d < n; d <<= 1, k++) {
            long tag = Parts.tag(Parts.HELLO, k + 1, 0);
            t.send((rank + d) % n, none, 0, 0, tag);
            t.await(t.recv((rank - d + n) % n, none, 0, 0, tag));
        }
    }
}
