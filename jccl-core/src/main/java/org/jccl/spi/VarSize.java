package org.jccl.spi;

import java.util.ArrayList;
import java.util.List;
import org.jccl.Buffer;
import org.jccl.Checks;
import org.jccl.Communicator;
import org.jccl.ReduceOp;

/**
 * The variable-size collectives (MPI's {@code *v}) as steps of the fixed-size ones, for every
 * backend alike: all-gather-v is one broadcast per rank, reduce-scatter-v one reduce per rank (as
 * PyTorch runs them on NCCL), all-to-all-v, gather-v and scatter-v are sends and receives (a
 * rank's own block included, as a send to itself). Every argument is checked here, before the
 * first step starts, so bad input moves no byte. A step of zero elements is left out on every
 * rank alike (the counts it depends on are the same on both ends).
 */
public final class VarSize {
    private VarSize() {
    }

    /**
     * One step: a fixed-size operation of {@link AbstractCommunicator#execute}.
     *
     * @param collective which
     * @param send       its send buffer (or null)
     * @param recv       its receive buffer (or null)
     * @param op         its reduction (or null)
     * @param root       its root (or -1)
     * @param peer       its peer (or -1)
     */
    public record Step(Collective collective, Buffer send, Buffer recv, ReduceOp op, int root, int peer) {
    }

    /** The steps of one variable-size call, and its name for messages ("allGatherV"). */
    record Plan(String name, List<Step> steps) {
    }

    /**
     * This rank's block of {@code buffer} under {@code counts} and {@code displs} (null: packed):
     * the input of an in-place all-gather-v, the output of an in-place reduce-scatter-v.
     */
    public static Buffer ownBlock(Communicator c, Buffer buffer, long[] counts, long[] displs) {
        Checks.buffer(buffer, "buffer");
        long[] d = layout(counts, "counts", displs, "displs", c.size(), buffer, "buffer");
        return buffer.slice(d[c.rank()], counts[c.rank()]);
    }

    /**
     * Checks {@code counts} (one per rank, none negative) and {@code displs} (null, or one per
     * rank, none negative) against buffer {@code b}'s length, and that no two non-empty blocks
     * overlap; returns the displacements (packed in rank order when {@code displs} is null).
     */
    static long[] layout(long[] counts, String cn, long[] displs, String dn, int size, Buffer b, String bn) {
        perRank(counts, cn, size);
        long[] d;
        if (displs == null) {
            d = new long[size];
            long at = 0;
            for (int r = 0; r < size; r++) {
                d[r] = at;
                at += counts[r];
            }
        } else {
            perRank(displs, dn, size);
            d = displs;
        }
        long end = 0;
        for (int r = 0; r < size; r++) {
            end = Math.max(end, counts[r] == 0 ? 0 : d[r] + counts[r]);
        }
        if (end > b.count()) {
            throw new IllegalArgumentException(cn + (displs == null ? "" : " and " + dn) + " reach element " + end
                    + " but " + bn + " holds " + b.count() + ": give " + bn + " at least " + end + " elements, or "
                    + "smaller counts");
        }
        Integer[] byStart = new Integer[size];
        for (int r = 0; r < size; r++) {
            byStart[r] = r;
        }
        java.util.Arrays.sort(byStart, (x, y) -> Long.compare(d[x], d[y]));
        int prev = -1;
        for (int r : byStart) {
            if (counts[r] == 0) {
                continue;
            }
            if (prev >= 0 && d[prev] + counts[prev] > d[r]) {
                throw new IllegalArgumentException("the blocks of ranks " + prev + " and " + r + " of " + bn
                        + " overlap (" + dn + "[" + prev + "] = " + d[prev] + " with " + counts[prev] + " elements, "
                        + dn + "[" + r + "] = " + d[r] + "): give every rank its own elements");
            }
            prev = r;
        }
        return d;
    }

    private static void perRank(long[] a, String name, int size) {
        if (a == null) {
            throw new IllegalArgumentException(name + " is null: give one entry per rank (" + size + ")");
        }
        if (a.length != size) {
            throw new IllegalArgumentException(name + " has " + a.length + " entries but the communicator has " + size
                    + " ranks: give one entry per rank");
        }
        for (int r = 0; r < size; r++) {
            if (a[r] < 0) {
                throw new IllegalArgumentException(name + "[" + r + "] is " + a[r] + ": counts and displacements are "
                        + "element numbers, zero or more");
            }
        }
    }

    /** {@code send} is {@code recv}'s block {@code [at, at + n)} (in place), or does not touch {@code recv}. */
    private static void inPlaceOrApart(Buffer send, String sn, Buffer recv, String rn, long at, long n) {
        if (send.overlaps(recv) && !(send.sameStart(recv.slice(at, n)) && send.count() == n)) {
            throw new IllegalArgumentException(sn + " overlaps " + rn + " but is not this rank's block of it (element "
                    + at + ", " + n + " elements): pass that block for an in-place call, or disjoint buffers");
        }
    }

    /** Both buffers there, of one type. */
    private static void sendAndRecv(Buffer send, Buffer recv) {
        Checks.buffer(send, "send");
        Checks.buffer(recv, "recv");
        Checks.sameType(send, "send", recv, "recv");
    }

    /** One step rooted at each rank r with a non-empty block (counts[r] elements of {@code b} at d[r]). */
    private static List<Step> perRoot(long[] counts, long[] d, Buffer b,
                                      java.util.function.BiFunction<Integer, Buffer, Step> step) {
        List<Step> steps = new ArrayList<>();
        for (int r = 0; r < counts.length; r++) {
            if (counts[r] > 0) {
                steps.add(step.apply(r, b.slice(d[r], counts[r])));
            }
        }
        return steps;
    }

    static Plan allGatherV(int rank, int size, Buffer send, Buffer recv, long[] counts, long[] displs) {
        sendAndRecv(send, recv);
        long[] d = layout(counts, "recvCounts", displs, "displs", size, recv, "recv");
        Checks.count(send, "send", counts[rank], "recvCounts[" + rank + "], this rank's block");
        inPlaceOrApart(send, "send", recv, "recv", d[rank], counts[rank]);
        return new Plan("allGatherV", perRoot(counts, d, recv,
                (r, block) -> new Step(Collective.BROADCAST, r == rank ? send : block, block, null, r, -1)));
    }

    static Plan reduceScatterV(int rank, int size, Buffer send, Buffer recv, long[] counts, ReduceOp op) {
        sendAndRecv(send, recv);
        Checks.op(op, send.type());
        long[] d = layout(counts, "recvCounts", null, "offsets", size, send, "send");
        long total = 0;
        for (long c : counts) {
            total += c;
        }
        Checks.count(send, "send", total, "the sum of recvCounts");
        Checks.count(recv, "recv", counts[rank], "recvCounts[" + rank + "]");
        inPlaceOrApart(recv, "recv", send, "send", d[rank], counts[rank]);
        return new Plan("reduceScatterV", perRoot(counts, d, send,
                (r, block) -> new Step(Collective.REDUCE, block, r == rank ? recv : null, op, r, -1)));
    }

    static Plan allToAllV(int rank, int size, Buffer send, long[] sendCounts, long[] sendDispls, Buffer recv,
                          long[] recvCounts, long[] recvDispls) {
        sendAndRecv(send, recv);
        long[] sd = layout(sendCounts, "sendCounts", sendDispls, "sendDispls", size, send, "send");
        long[] rd = layout(recvCounts, "recvCounts", recvDispls, "recvDispls", size, recv, "recv");
        if (sendCounts[rank] != recvCounts[rank]) {
            throw new IllegalArgumentException("sendCounts[" + rank + "] is " + sendCounts[rank] + " but recvCounts["
                    + rank + "] is " + recvCounts[rank] + ": this rank's block to itself has one size");
        }
        if (send.overlaps(recv)) {
            throw new IllegalArgumentException("send and recv overlap: allToAllV has no in-place form, pass disjoint "
                    + "buffers");
        }
        List<Step> steps = new ArrayList<>();
        // Every receive first, then the sends, each in rank order starting after this rank: the
        // pairs' messages then meet in the same order everywhere.
        for (int k = 0; k < size; k++) {
            int from = (rank - k + size) % size;
            if (recvCounts[from] > 0) {
                steps.add(p2p(false, recv.slice(rd[from], recvCounts[from]), from));
            }
        }
        for (int k = 0; k < size; k++) {
            int to = (rank + k) % size;
            if (sendCounts[to] > 0) {
                steps.add(p2p(true, send.slice(sd[to], sendCounts[to]), to));
            }
        }
        return new Plan("allToAllV", steps);
    }

    /** A send to {@code dst} and a receive from {@code src}, started together. */
    static Plan sendRecv(int size, Buffer send, int dst, Buffer recv, int src) {
        checkSendRecv(size, send, dst, recv, src);
        return sendRecvPlan(send, dst, recv, src);
    }

    /** {@link #sendRecv}'s plan for arguments {@link #checkSendRecv} already passed. */
    static Plan sendRecvPlan(Buffer send, int dst, Buffer recv, int src) {
        return new Plan("sendRecv", List.of(new Step(Collective.SEND, send, null, null, -1, dst),
                new Step(Collective.RECV, null, recv, null, -1, src)));
    }

    /** {@link #sendRecv}'s argument checks alone (a blocking call checks before its inline path, which builds no plan). */
    static void checkSendRecv(int size, Buffer send, int dst, Buffer recv, int src) {
        Checks.buffer(send, "send"); // the two halves may differ in type and count, as in MPI_Sendrecv
        Checks.buffer(recv, "recv");
        org.jccl.Checks.rank(dst, size, "dst");
        org.jccl.Checks.rank(src, size, "src");
        if (send.overlaps(recv)) {
            // the peer may read send while recv is written (one copy straight from the buffer on shared memory)
            throw new IllegalArgumentException("send and recv overlap: sendRecv has no in-place form (as MPI_Sendrecv); "
                    + "pass disjoint buffers (copy send first to exchange a buffer's contents)");
        }
    }

    static Plan gatherV(int rank, int size, Buffer send, Buffer recv, long[] counts, long[] displs, int root) {
        return rooted(true, rank, size, send, recv, counts, displs, root);
    }

    static Plan scatterV(int rank, int size, Buffer send, long[] counts, long[] displs, Buffer recv, int root) {
        return rooted(false, rank, size, recv, send, counts, displs, root);
    }

    /**
     * Gather-v ({@code gather}: every rank's {@code mine} into its block of the root's {@code all})
     * or scatter-v (the root's blocks of {@code all} into every rank's {@code mine}). The root's own
     * block moves as a send to itself, unless it is in place.
     */
    private static Plan rooted(boolean gather, int rank, int size, Buffer mine, Buffer all, long[] counts,
                               long[] displs, int root) {
        String name = gather ? "gatherV" : "scatterV";
        String mn = gather ? "send" : "recv";
        String an = gather ? "recv" : "send";
        String cn = gather ? "recvCounts" : "sendCounts";
        Checks.rank(root, size, "root");
        Checks.buffer(mine, mn);
        List<Step> steps = new ArrayList<>();
        if (rank != root) {
            if (mine.count() > 0) {
                steps.add(p2p(gather, mine, root));
            }
            return new Plan(name, steps);
        }
        Checks.buffer(all, an);
        Checks.sameType(mine, mn, all, an);
        long[] d = layout(counts, cn, displs, "displs", size, all, an);
        Checks.count(mine, mn, counts[rank], cn + "[" + rank + "], the root's own block");
        inPlaceOrApart(mine, mn, all, an, d[rank], counts[rank]);
        boolean inPlace = counts[rank] > 0 && mine.sameStart(all.slice(d[rank], counts[rank]));
        for (int r = 0; r < size; r++) {
            if (counts[r] > 0 && !(r == rank && inPlace)) {
                steps.add(p2p(!gather, all.slice(d[r], counts[r]), r));
            }
        }
        if (counts[rank] > 0 && !inPlace) {
            steps.add(p2p(gather, mine, rank));
        }
        return new Plan(name, steps);
    }

    /** A send of {@code b} to {@code peer} ({@code send}) or a receive into it from {@code peer}. */
    private static Step p2p(boolean send, Buffer b, int peer) {
        return send ? new Step(Collective.SEND, b, null, null, -1, peer) : new Step(Collective.RECV, null, b, null, -1, peer);
    }
}
