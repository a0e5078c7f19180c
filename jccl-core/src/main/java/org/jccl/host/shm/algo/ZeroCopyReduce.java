package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.shm.ShmTransport;
import org.jccl.internal.SegmentArrays;

/**
 * Reduce on registered buffers ({@link ZeroCopy}: every rank's send and the root's recv): rank r
 * reduces part r straight from every rank's send buffer (in rank order: the same bits as the
 * all-reduce) into the root's recv buffer. Returns once every rank is done.
 */
public final class ZeroCopyReduce {
    private ZeroCopyReduce() {
    }

    /** Runs the reduce when the buffers are registered; false (nothing moved) otherwise. */
    public static boolean tryRun(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, int root,
                                 boolean enabled) {
        long g = ZeroCopy.exchange(t, send, t.rank() == root ? recv : null, true, enabled,
                ZeroCopy.SEND_ALL | ZeroCopy.RECV_ROOT, root);
        if (g < 0) {
            return false;
        }
        int n = t.size();
        int me = t.rank();
        int es = send.type().byteSize();
        long count = send.count();
        long lo = Chunks.partStart(count, n, me);
        long hi = Chunks.partStart(count, n, me + 1);
        if (hi > lo) {
            for (int p = 0; p < n; p++) {
                SegmentArrays.set(t.srcs, p, t.peerSend[p]);
                t.srcOffsets[p] = t.peerSendOffsets[p] + lo * es;
            }
            MemorySegment dst = t.peerRecv[root];
            Reductions.reduce(send.type(), op, dst, t.peerRecvOffsets[root] + lo * es, t.srcs, t.srcOffsets, n, hi - lo, n);
        }
        ZeroCopy.checkPeers(t);
        t.endChunk(g);
        // The root needs every part; the others must not reuse their send before everyone read it.
        t.awaitAllDone(g);
        return true;
    }
}
