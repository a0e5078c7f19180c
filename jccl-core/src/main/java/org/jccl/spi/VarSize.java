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

    private static void count(Buffer b, String name, long want, String what) {
        if (b.count() != want) {
            throw new IllegalArgumentException(name + " has " + b.count() + " elements but " + what + " is " + want
                    + ": make them agree");
        }
    }

    static Plan allGatherV(int rank, int size, Buffer send, Buffer recv, long[] counts, long[] displs) {
        Checks.buffer(send, "send");
        Checks.buffer(recv, "recv");
        Checks.sameType(send, "send", recv, "recv");
        long[] d = layout(counts, "recvCounts", displs, "displs", size, recv, "recv");
        count(send, "send", counts[rank], "recvCounts[" + rank + "] (this rank's block)");
        inPlaceOrApart(send, "send", recv, "recv", d[rank], counts[rank]);
        List<Step> steps = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (counts[r] > 0) {
                Buffer block = recv.slice(d[r], counts[r]);
                steps.add(new Step(Collective.BROADCAST, r == rank ? send : block, block, null, r, -1));
            }
        }
        return new Plan("allGatherV", steps);
    }

    static Plan reduceScatterV(int rank, int size, Buffer send, Buffer recv, long[] counts, ReduceOp op) {
        Checks.buffer(send, "send");
        Checks.buffer(recv, "recv");
        Checks.sameType(send, "send", recv, "recv");
        Checks.op(op, send.type());
        long[] d = layout(counts, "recvCounts", null, "offsets", size, send, "send");
        long total = 0;
        for (long c : counts) {
            total += c;
        }
        count(send, "send", total, "the sum of recvCounts");
        count(recv, "recv", counts[rank], "recvCounts[" + rank + "]");
        inPlaceOrApart(recv, "recv", send, "send", d[rank], counts[rank]);
        List<Step> steps = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (counts[r] > 0) {
                Buffer block = send.slice(d[r], counts[r]);
                steps.add(new Step(Collective.REDUCE, block, r == rank ? recv : null, op, r, -1));
            }
        }
        return new Plan("reduceScatterV", steps);
    }

    static Plan allToAllV(int rank, int size, Buffer send, long[] sendCounts, long[] sendDispls, Buffer recv,
                          long[] recvCounts, long[] recvDispls) {
        Checks.buffer(send, "send");
        Checks.buffer(recv, "recv");
        Checks.sameType(send, "send", recv, "recv");
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
                steps.add(new Step(Collective.RECV, null, recv.slice(rd[from], recvCounts[from]), null, -1, from));
            }
        }
        for (int k = 0; k < size; k++) {
            int to = (rank + k) % size;
            if (sendCounts[to] > 0) {
                steps.add(new Step(Collective.SEND, send.slice(sd[to], sendCounts[to]), null, null, -1, to));
            }
        }
        return new Plan("allToAllV", steps);
    }

    static Plan gatherV(int rank, int size, Buffer send, Buffer recv, long[] counts, long[] displs, int root) {
        Checks.rank(root, size, "root");
        Checks.buffer(send, "send");
        List<Step> steps = new ArrayList<>();
        if (rank != root) {
            if (send.count() > 0) {
                steps.add(new Step(Collective.SEND, send, null, null, -1, root));
            }
            return new Plan("gatherV", steps);
        }
        Checks.buffer(recv, "recv");
        Checks.sameType(send, "send", recv, "recv");
        long[] d = layout(counts, "recvCounts", displs, "displs", size, recv, "recv");
        count(send, "send", counts[rank], "recvCounts[" + rank + "] (the root's own block)");
        inPlaceOrApart(send, "send", recv, "recv", d[rank], counts[rank]);
        boolean inPlace = counts[rank] > 0 && send.sameStart(recv.slice(d[rank], counts[rank]));
        for (int r = 0; r < size; r++) {
            if (counts[r] > 0 && !(r == rank && inPlace)) {
                steps.add(new Step(Collective.RECV, null, recv.slice(d[r], counts[r]), null, -1, r));
            }
        }
        if (counts[rank] > 0 && !inPlace) {
            steps.add(new Step(Collective.SEND, send, null, null, -1, rank));
        }
        return new Plan("gatherV", steps);
    }

    static Plan scatterV(int rank, int size, Buffer send, long[] counts, long[] displs, Buffer recv, int root) {
        Checks.rank(root, size, "root");
        Checks.buffer(recv, "recv");
        List<Step> steps = new ArrayList<>();
        if (rank != root) {
            if (recv.count() > 0) {
                steps.add(new Step(Collective.RECV, null, recv, null, -1, root));
            }
            return new Plan("scatterV", steps);
        }
        Checks.buffer(send, "send");
        Checks.sameType(send, "send", recv, "recv");
        long[] d = layout(counts, "sendCounts", displs, "displs", size, send, "send");
        count(recv, "recv", counts[rank], "sendCounts[" + rank + "] (the root's own block)");
        inPlaceOrApart(recv, "recv", send, "send", d[rank], counts[rank]);
        boolean inPlace = counts[rank] > 0 && recv.sameStart(send.slice(d[rank], counts[rank]));
        if (counts[rank] > 0 && !inPlace) {
            steps.add(new Step(Collective.RECV, null, recv, null, -1, rank));
        }
        for (int r = 0; r < size; r++) {
            if (counts[r] > 0 && !(r == rank && inPlace)) {
                steps.add(new Step(Collective.SEND, send.slice(d[r], counts[r]), null, null, -1, r));
            }
        }
        return new Plan("scatterV", steps);
    }
}
