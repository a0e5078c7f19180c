package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.tcp.TcpTransport;

/**
 * Pipelined reduce for large messages: the partial result flows down the chain 0, 1, ..., n-1 in
 * chunks, each rank adding its input to the partial it received and passing it on; rank n-1
 * sends the result to the root (unless it is the root). Every link carries the message once.
 * The partial is a left fold in rank order, so 32- and 64-bit float sums are bitwise the shared
 * memory engine's; low-precision types round at every step.
 */
public final class ChainReduce {
    private ChainReduce() {
    }

    /** Runs the reduce (n >= 2); {@code recv} is used on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, int root) {
        if (t.checkCalls()) {
            Parts.agree(t); // JCCL_CHECK: every rank compares every rank's call first
        }
        int n = t.size();
        int r = t.rank();
        DataType type = send.type();
        int es = type.byteSize();
        long count = send.count();
        MemorySegment in = Parts.premulScaled(t, type, op, send.segment(), count);
        ReduceOp acc = Parts.accumulateOp(op);
        long per = Parts.pipelineElems(t, es, count);
        int chunks = Parts.messageChunks(count, per);
        int window = Parts.scratchWindow(t);
        long slotBytes = per * es;
        int last = n - 1;
        if (r == root && root != last) {
            // the result comes back from the end of the chain straight into place
            for (int c = 0; c < chunks; c++) {
                long e0 = c * per;
                t.recv(last, recv.segment(), e0 * es, Parts.chunkLen(count, per, c) * es,
                        Parts.tag(Parts.CHAIN_REDUCE, 1, c));
            }
        }
        if (r == 0) {
            Parts.sendInChunks(t, 1, in, 0, count, per, es, Parts.CHAIN_REDUCE, 0);
            t.awaitAll();
            return;
        }
        MemorySegment inSlots = t.scratch(0, window * slotBytes);
        MemorySegment outSlots = t.scratch(2, window * slotBytes);
        int[] ids = t.ids(2 * window);
        java.util.Arrays.fill(ids, window, 2 * window, -1);
        int posted = 0;
        for (int c = 0; c < chunks; c++) {
            while (posted < chunks && posted - c < window) {
                ids[posted % window] = t.recv(r - 1, inSlots, (posted % window) * slotBytes,
                        Parts.chunkLen(count, per, posted) * es, Parts.tag(Parts.CHAIN_REDUCE, 0, posted));
                posted++;
            }
            int slot = c % window;
            t.await(ids[slot]);
            long e0 = c * per;
            long elen = Parts.chunkLen(count, per, c);
            if (r == last && root == last) {
                Parts.reducePair(t, type, acc, recv.segment(), e0 * es, inSlots, slot * slotBytes, in, e0 * es, elen);
                Parts.divideIfAvg(op, type, recv.segment(), e0 * es, elen, n);
                continue;
            }
            if (ids[window + slot] >= 0) {
                t.await(ids[window + slot]); // the send that used this slot must be out
            }
            Parts.reducePair(t, type, acc, outSlots, slot * slotBytes, inSlots, slot * slotBytes, in, e0 * es, elen);
            if (r == last) {
                Parts.divideIfAvg(op, type, outSlots, slot * slotBytes, elen, n);
                ids[window + slot] = t.send(root, outSlots, slot * slotBytes, elen * es, Parts.tag(Parts.CHAIN_REDUCE, 1, c));
            } else {
                ids[window + slot] = t.send(r + 1, outSlots, slot * slotBytes, elen * es, Parts.tag(Parts.CHAIN_REDUCE, 0, c));
            }
        }
        Parts.dropPairSources(t);
        t.awaitAll();
    }
}
