package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.tcp.TcpTransport;

/**
 * Recursive halving-doubling all-reduce (Rabenseifner): log2(p) steps of reduce-scatter by
 * recursive halving (exchange half of the current region with the partner at distance p/2, p/4,
 * ..., keep and reduce the other half) then log2(p) steps of all-gather by recursive doubling.
 * Each rank sends about 2(n-1)/n of the data, like the ring, in 2 log2(n) steps instead of
 * 2(n-1): the choice for mid-sized messages on many ranks.
 *
 * <p>Rank counts that are not a power of two: the first 2r ranks (r = n - p, p the largest power
 * of two below n) pair up, the even one hands its vector to the odd one, which takes part in the
 * halving-doubling for both, then hands the result back.
 *
 * <p>Order of reduction: partial results combine as a binary tree, so float sums may differ from
 * the shared-memory engine's rank order in the last bits (never between ranks), and low-precision
 * types round at every step. Exactly representable data gives the same bits as every algorithm.
 */
public final class RhdAllReduce {
    private RhdAllReduce() {
    }

    /** Runs the all-reduce (n >= 2). */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int n = t.size();
        int r = t.rank();
        DataType type = send.type();
        int es = type.byteSize();
        long count = send.count();
        MemorySegment out = recv.segment();
        Parts.inputIntoRecv(send, recv, op);
        int p2 = Integer.highestOneBit(n);
        int rem = n - p2;
        int newRank;
        int step = 0;
        if (r < 2 * rem) {
            if ((r & 1) == 0) {
                // hand the vector to the odd neighbour, get the result back at the end
                exchange(t, r + 1, out, 0, count, -1, 0, 0, type, op, es, step, false);
                newRank = -1;
            } else {
                exchange(t, -1, out, 0, 0, r - 1, 0, count, type, op, es, step, true);
                newRank = r / 2;
            }
        } else {
            newRank = r - rem;
        }
        step++;
        int levels = Integer.numberOfTrailingZeros(p2);
        long[] bounds = t.longs(2 * levels + 2);
        if (newRank >= 0) {
            long lo = 0, hi = count;
            // reduce-scatter by recursive halving: the highest bit splits first, so new rank i keeps block i
            int level = 0;
            for (int mask = p2 >> 1; mask > 0; mask >>= 1, level++) {
                int partner = real(newRank ^ mask, rem);
                long mid = lo + (hi - lo) / 2;
                bounds[2 * level] = lo;
                bounds[2 * level + 1] = hi;
                boolean lower = (newRank & mask) == 0;
                long keepLo = lower ? lo : mid, keepHi = lower ? mid : hi;
                long giveLo = lower ? mid : lo, giveHi = lower ? hi : mid;
                exchange(t, partner, out, giveLo, giveHi - giveLo, partner, keepLo, keepHi - keepLo, type, op, es,
                        step + level, true);
                lo = keepLo;
                hi = keepHi;
            }
            Parts.divideIfAvg(op, type, out, lo * es, hi - lo, n);
            // all-gather by recursive doubling, undoing the halving steps in reverse
            for (int mask = 1, lv = levels - 1; mask < p2; mask <<= 1, lv--) {
                int partner = real(newRank ^ mask, rem);
                long blo = bounds[2 * lv], bhi = bounds[2 * lv + 1];
                boolean lower = (newRank & mask) == 0;
                long otherLo = lower ? hi : blo;
                long otherHi = lower ? bhi : lo;
                exchange(t, partner, out, lo, hi - lo, partner, otherLo, otherHi - otherLo, type, op, es,
                        step + levels + (levels - 1 - lv), false);
                lo = blo;
                hi = bhi;
            }
        }
        step += 2 * levels;
        if (r < 2 * rem) {
            if ((r & 1) == 0) {
                exchange(t, -1, out, 0, 0, r + 1, 0, count, type, op, es, step, false);
            } else {
                exchange(t, r - 1, out, 0, count, -1, 0, 0, type, op, es, step, false);
            }
        }
        t.awaitAll();
    }

    /** The real rank of new rank {@code x} (the odd rank of a folded pair, or shifted by rem). */
    private static int real(int x, int rem) {
        return x < rem ? 2 * x + 1 : x + rem;
    }

    /**
     * One step: sends {@code [sLo, sLo+sLen)} to {@code to} (unless -1) and receives {@code
     * [rLo, rLo+rLen)} from {@code from} (unless -1), in chunks, several in flight. With {@code
     * reduce} the received chunks go through scratch and are accumulated into the region; else
     * they land in place.
     */
    private static void exchange(TcpTransport t, int to, MemorySegment out, long sLo, long sLen, int from, long rLo,
                                 long rLen, DataType type, ReduceOp op, int es, int step, boolean reduce) {
        if (to >= 0) {
            Parts.sendInChunks(t, to, out, sLo, sLen, Parts.pipelineElems(t, es, sLen), es, Parts.RHD, step);
        }
        if (from < 0) {
            return;
        }
        long per = Parts.pipelineElems(t, es, rLen);
        int cs = Parts.messageChunks(rLen, per);
        int window = Parts.scratchWindow(t);
        MemorySegment scratch = reduce ? t.scratch(0, window * per * es) : null;
        int[] ids = t.ids(window);
        int posted = 0;
        for (int c = 0; c < cs; c++) {
            while (posted < cs && posted - c < window) {
                long e0 = rLo + posted * per;
                long elen = Parts.chunkLen(rLen, per, posted);
                int slot = posted % window;
                ids[slot] = reduce
                        ? t.recv(from, scratch, slot * per * es, elen * es, Parts.tag(Parts.RHD, step, posted))
                        : t.recv(from, out, e0 * es, elen * es, Parts.tag(Parts.RHD, step, posted));
                posted++;
            }
            int slot = c % window;
            t.await(ids[slot]);
            if (reduce) {
                long e0 = rLo + c * per;
                long elen = Parts.chunkLen(rLen, per, c);
                Reductions.accumulate(type, op, out, e0 * es, scratch, slot * per * es, elen);
            }
        }
    }
}
