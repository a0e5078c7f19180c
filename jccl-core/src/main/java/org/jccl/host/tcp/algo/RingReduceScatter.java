package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.tcp.TcpTransport;

/**
 * Pipelined ring reduce-scatter: in n-1 steps every rank receives the partial result of one block
 * from the previous rank, adds its own input of that block and sends the sum on; after the last
 * step rank r holds block r. Blocks travel in chunks, several in flight, and chunk c of step g+1
 * leaves as soon as chunk c of step g is reduced (partials alternate between two block buffers).
 * Each rank sends (n-1)/n of the input to one neighbour.
 *
 * <p>Order of reduction: block b accumulates along the ring (ranks b+1, ..., b), so float sums may
 * differ from the shared-memory engine in the last bits (never between runs); low-precision types
 * round at every step. Integers, MIN/MAX, bitwise ops and exact data give the same bits.
 */
public final class RingReduceScatter {
    private RingReduceScatter() {
    }

    /** Runs the reduce-scatter (n >= 2). */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, ReduceOp op) {
        int n = t.size();
        int r = t.rank();
        DataType type = send.type();
        int es = type.byteSize();
        long rc = recv.count();
        MemorySegment in = Parts.premulScaled(t, type, op, send.segment(), n * rc);
        ReduceOp acc = Parts.accumulateOp(op);
        MemorySegment out = recv.segment();
        long per = Parts.pipelineElems(t, es, rc);
        int chunks = Parts.messageChunks(rc, per);
        int window = Parts.scratchWindow(t);
        MemorySegment rbuf = t.scratch(0, window * per * es);
        MemorySegment work = t.scratch(2, 2 * rc * es);
        int[] ids = t.ids(window + 2 * chunks);
        java.util.Arrays.fill(ids, window, window + 2 * chunks, -1);
        int next = Parts.next(t);
        int prev = Parts.prev(t);
        int units = (n - 1) * chunks;
        int posted = 0;
        for (; posted < Math.min(window, units); posted++) {
            postRecv(t, ids, window, posted, chunks, prev, rbuf, rc, per, es);
        }
        int b0 = Math.floorMod(r - 1, n);
        Parts.sendInChunks(t, next, in, b0 * rc, rc, per, es, Parts.RING_RS, 0);
        for (int u = 0; u < units; u++) {
            int g = u / chunks;
            int c = u % chunks;
            int slot = u % window;
            t.await(ids[slot]);
            int b = Math.floorMod(r - g - 2, n);
            long e0 = c * per;
            long elen = Parts.chunkLen(rc, per, c);
            long at = slot * per * es; // the received partial
            long own = (b * rc + e0) * es;
            if (g == n - 2) {
                Parts.reducePair(t, type, acc, out, e0 * es, rbuf, at, in, own, elen);
                Parts.divideIfAvg(op, type, out, e0 * es, elen, n);
            } else {
                int parity = g & 1;
                int sid = window + parity * chunks + c;
                if (ids[sid] >= 0) {
                    // the send of step g-1 read this chunk of the buffer: it must be out before we overwrite
                    t.await(ids[sid]);
                }
                long to = (parity * rc + e0) * es;
                Parts.reducePair(t, type, acc, work, to, rbuf, at, in, own, elen);
                ids[sid] = t.send(next, work, to, elen * es, Parts.tag(Parts.RING_RS, g + 1, c));
            }
            if (posted < units) {
                postRecv(t, ids, window, posted, chunks, prev, rbuf, rc, per, es);
                posted++;
            }
        }
        Parts.dropPairSources(t);
        t.awaitAll();
    }

    private static void postRecv(TcpTransport t, int[] ids, int window, int u, int chunks, int prev, MemorySegment rbuf,
                                 long rc, long per, int es) {
        int g = u / chunks;
        int c = u % chunks;
        long elen = Parts.chunkLen(rc, per, c);
        int slot = u % window;
        ids[slot] = t.recv(prev, rbuf, slot * per * es, elen * es, Parts.tag(Parts.RING_RS, g, c));
    }
}
