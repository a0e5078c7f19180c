package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.tcp.TcpTransport;

/**
 * Pipelined ring all-reduce for large messages: the vector is cut into n parts and each part into
 * chunks; in 2(n-1) steps every rank sends one part to the next rank and receives one from the
 * previous (reduce-scatter: accumulate the received partial into its own; all-gather: keep the
 * received result). Steps overlap: chunk c of step g+1 leaves as soon as chunk c of step g is in,
 * and receives are posted several chunks ahead. Each rank sends 2(n-1)/n of the data whatever n
 * is, to one neighbour only.
 *
 * <p>Order of reduction: part j is accumulated along the ring (ranks j+1, j+2, ..., j), so float
 * sums associate differently from the shared-memory engine's rank order and may differ from it in
 * the last bits (never between ranks: every rank receives the owner's bits); low-precision types
 * round at every step. Integers, MIN/MAX, bitwise ops and exactly representable data give the
 * same bits as every other algorithm.
 */
public final class RingAllReduce {
    private RingAllReduce() {
    }

    /** Runs the all-reduce (n >= 2, count >= 1). */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int n = t.size();
        int r = t.rank();
        DataType type = send.type();
        int es = type.byteSize();
        long count = send.count();
        MemorySegment out = recv.segment();
        // Out of place, this rank's own data is read from send where it is first needed (the step-0
        // send and a two-input reduction into recv) instead of copying the whole vector first: one
        // pass over memory less (a 256 KiB float chunk: 6.7 us against 7.5 us for copy + accumulate
        // on the 2-core VM; small next to the network time). PREMUL_SUM must scale its own data
        // first, so it copies.
        boolean fromSend = !send.sameStart(recv) && op.kind() != ReduceOp.Kind.PREMUL_SUM;
        MemorySegment own = fromSend ? send.segment() : out;
        if (!fromSend) {
            Parts.inputIntoRecv(send, recv, op);
        }
        // AVG sums along the ring and divides once at the end
        ReduceOp stepOp = op.kind() == ReduceOp.Kind.AVG ? ReduceOp.SUM : op;
        MemorySegment[] pair = t.pairSources();
        long[] pairOff = t.pairOffsets();
        long per = Parts.pipelineElems(t, es, (count + n - 1) / n);
        int next = Parts.next(t);
        int prev = Parts.prev(t);
        int steps = 2 * (n - 1);
        int window = Parts.scratchWindow(t);
        MemorySegment scratch = t.scratch(0, window * per * es);
        int[] rids = t.ids(window);

        // step 0 sends this rank's own part
        int s0 = r;
        long lo0 = Parts.start(count, n, s0);
        long len0 = Parts.start(count, n, s0 + 1) - lo0;
        int pg = 0, pc = 0;        // next receive to post: step, chunk
        long posted = 0, done = 0; // receives posted / completed
        for (int k = 0; k < window && pg < steps; ) {
            // post the first window of receives before any send, so the peers' sends find them
            if (postRecv(t, rids, window, posted, prev, scratch, out, pg, pc, count, per, es)) {
                pc++;
                posted++;
                k++;
            } else {
                pg++;
                pc = 0;
            }
        }
        for (int c = 0, cs = Parts.chunks(len0, per); c < cs; c++) {
            long e0 = lo0 + c * per;
            long elen = Math.min(per, lo0 + len0 - e0);
            t.send(next, own, e0 * es, elen * es, Parts.tag(Parts.RING, 0, c));
        }
        int g = 0, c = 0;          // next receive to complete
        while (done < posted) {
            int sl = Math.floorMod(r - g - 1, n);
            long lo = Parts.start(count, n, sl);
            long len = Parts.start(count, n, sl + 1) - lo;
            if (c >= Parts.chunks(len, per)) {
                g++;
                c = 0;
                continue;
            }
            long e0 = lo + c * per;
            long elen = Math.min(per, lo + len - e0);
            int slot = (int) (done % window);
            t.await(rids[slot]);
            if (g < n - 1) {
                if (fromSend) {
                    pair[0] = own;
                    pair[1] = scratch;
                    pairOff[0] = e0 * es;
                    pairOff[1] = slot * per * es;
                    Reductions.reduce(type, stepOp, out, e0 * es, pair, pairOff, 2, elen, 1);
                } else {
                    Reductions.accumulate(type, op, out, e0 * es, scratch, slot * per * es, elen);
                }
                if (g == n - 2) {
                    Parts.divideIfAvg(op, type, out, e0 * es, elen, n);
                }
            }
            if (g + 1 < steps) {
                t.send(next, out, e0 * es, elen * es, Parts.tag(Parts.RING, g + 1, c));
            }
            c++;
            done++;
            // the slot is free again: post the next receive
            while (pg < steps) {
                if (postRecv(t, rids, window, posted, prev, scratch, out, pg, pc, count, per, es)) {
                    pc++;
                    posted++;
                    break;
                }
                pg++;
                pc = 0;
            }
        }
        t.awaitAll();
    }

    /**
     * Receives chunk {@code c} of step {@code g}: into scratch while reducing, into the result while
     * gathering. False, posting nothing, when the part of step {@code g} has no chunk {@code c}.
     */
    private static boolean postRecv(TcpTransport t, int[] rids, int window, long u, int prev, MemorySegment scratch,
                                    MemorySegment out, int g, int c, long count, long per, int es) {
        int n = t.size();
        int sl = Math.floorMod(t.rank() - g - 1, n);
        long lo = Parts.start(count, n, sl);
        long len = Parts.start(count, n, sl + 1) - lo;
        if (c >= Parts.chunks(len, per)) {
            return false;
        }
        long e0 = lo + c * per;
        long elen = Math.min(per, lo + len - e0);
        int slot = (int) (u % window);
        long tag = Parts.tag(Parts.RING, g, c);
        if (g < n - 1) {
            rids[slot] = t.recv(prev, scratch, slot * per * es, elen * es, tag);
        } else {
            rids[slot] = t.recv(prev, out, e0 * es, elen * es, tag);
        }
        return true;
    }
}
