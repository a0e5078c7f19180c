package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.shm.ShmTransport;
import org.jccl.internal.SegmentArrays;

/**
 * All-reduce on registered buffers ({@link ZeroCopy}): per piece, rank r reduces part r straight
 * from every rank's send buffer (in rank order: the same bits as the copy path) into its own recv
 * buffer and posts it; then every rank copies the other parts from their owners' recv buffers.
 * Each rank reads about 2x the data (the copy path: 3x, and writes twice as much). Returns once
 * every peer is done with this rank's buffers.
 */
public final class ZeroCopyAllReduce {
    private ZeroCopyAllReduce() {
    }

    /** Runs the all-reduce when every rank's buffers are registered; false (nothing moved) otherwise. */
    public static boolean tryRun(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, boolean enabled) {
        long g0 = ZeroCopy.exchange(t, send, recv, true, enabled, ZeroCopy.SEND_ALL | ZeroCopy.RECV_ALL, -1);
        if (g0 < 0) {
            return false;
        }
        t.endChunk(g0);
        int n = t.size();
        int me = t.rank();
        DataType type = send.type();
        int es = type.byteSize();
        long count = send.count();
        // A piece holds about one slot per rank: rank r reduces ~slotBytes of it.
        long per = Math.max(16L * n, t.slotBytes() * n / es);
        long pieces = Chunks.chunkCount(count, per);
        MemorySegment out = recv.segment();
        long g = g0;
        for (long c = 0; c < pieces; c++) {
            long first = c * per;
            long elems = Math.min(per, count - first);
            g = t.beginChunk();
            long lo = Chunks.partStart(elems, n, me);
            long hi = Chunks.partStart(elems, n, me + 1);
            if (hi > lo) {
                for (int p = 0; p < n; p++) {
                    SegmentArrays.set(t.srcs, p, t.peerSend[p]);
                    t.srcOffsets[p] = t.peerSendOffsets[p] + (first + lo) * es;
                }
                Reductions.reduce(type, op, out, (first + lo) * es, t.srcs, t.srcOffsets, n, hi - lo, n);
            }
            t.postReduced(g);
            for (int k = 1; k < n; k++) {
                int p = (me + k) % n;
                long plo = Chunks.partStart(elems, n, p);
                long phi = Chunks.partStart(elems, n, p + 1);
                if (phi > plo) {
                    t.awaitReduced(p, g);
                    MemorySegment.copy(t.peerRecv[p], t.peerRecvOffsets[p] + (first + plo) * es, out, (first + plo) * es,
                            (phi - plo) * es);
                }
            }
            ZeroCopy.checkPeers(t);
            t.endChunk(g);
        }
        // Peers read this rank's send (their parts) and recv (its part): the caller may reuse both
        // once this returns.
        t.awaitAllDone(g);
        return true;
    }
}
