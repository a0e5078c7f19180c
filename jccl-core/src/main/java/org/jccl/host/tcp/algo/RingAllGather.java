package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.tcp.TcpTransport;

/**
 * Pipelined ring all-gather: in n-1 steps every rank forwards to the next rank the block it
 * received from the previous one (its own first), in chunks, chunk c of step g+1 leaving as soon
 * as chunk c of step g arrived. Each rank sends (n-1)/n of the result to one neighbour: the
 * choice for large messages.
 */
public final class RingAllGather {
    private RingAllGather() {
    }

    /** Runs the all-gather (n >= 2): recv holds n blocks of send.count() elements. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv) {
        int n = t.size();
        int r = t.rank();
        int es = send.type().byteSize();
        long bc = send.count();
        MemorySegment out = recv.segment();
        Parts.ownBlockIntoRecv(send, recv, r);
        long per = Parts.pipelineElems(t, es, bc);
        int chunks = Parts.messageChunks(bc, per);
        int next = Parts.next(t);
        int prev = Parts.prev(t);
        int units = (n - 1) * chunks;
        int window = Parts.inPlaceWindow(t);
        int[] ids = t.ids(window);
        int posted = 0;
        for (; posted < Math.min(window, units); posted++) {
            ids[posted % window] = postRecv(t, posted, chunks, prev, out, bc, per, es, n);
        }
        Parts.sendInChunks(t, next, out, r * bc, bc, per, es, Parts.RING_AG, 0);
        for (int u = 0; u < units; u++) {
            int g = u / chunks;
            int c = u % chunks;
            t.await(ids[u % window]);
            if (g + 1 < n - 1) {
                int b = Math.floorMod(r - g - 1, n);
                long e0 = c * per;
                long elen = Parts.chunkLen(bc, per, c);
                t.send(next, out, (b * bc + e0) * es, elen * es, Parts.tag(Parts.RING_AG, g + 1, c));
            }
            if (posted < units) {
                ids[posted % window] = postRecv(t, posted, chunks, prev, out, bc, per, es, n);
                posted++;
            }
        }
        t.awaitAll();
    }

    private static int postRecv(TcpTransport t, int u, int chunks, int prev, MemorySegment out, long bc, long per, int es,
                                int n) {
        int g = u / chunks;
        int c = u % chunks;
        int b = Math.floorMod(t.rank() - g - 1, n);
        long e0 = c * per;
        long elen = Parts.chunkLen(bc, per, c);
        return t.recv(prev, out, (b * bc + e0) * es, elen * es, Parts.tag(Parts.RING_AG, g, c));
    }
}
