package org.jccl.host.shm.algo;

import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.kernel.Reductions;
import org.jccl.host.shm.ShmTransport;
import org.jccl.internal.SegmentArrays;

/**
 * Reduce-scatter on registered send buffers ({@link ZeroCopy}): rank r reduces block r straight
 * from every rank's send buffer (in rank order) into its recv buffer, which may be any memory.
 * Returns once every peer is done with this rank's send buffer.
 */
public final class ZeroCopyReduceScatter {
    private ZeroCopyReduceScatter() {
    }

    /** Runs the reduce-scatter when every rank's send buffer is registered; false (nothing moved) otherwise. */
    public static boolean tryRun(ShmTransport t, HostBuffer send, HostBuffer recv, ReduceOp op, boolean enabled) {
        long g = ZeroCopy.exchange(t, send, recv, true, enabled, ZeroCopy.SEND_ALL, -1);
        if (g < 0) {
            return false;
        }
        int n = t.size();
        int me = t.rank();
        long blockBytes = recv.byteSize();
        for (int p = 0; p < n; p++) {
            SegmentArrays.set(t.srcs, p, t.peerSend[p]);
            t.srcOffsets[p] = t.peerSendOffsets[p] + me * blockBytes;
        }
        Reductions.reduce(send.type(), op, recv.segment(), 0, t.srcs, t.srcOffsets, n, recv.count(), n);
        ZeroCopy.checkPeers(t);
        t.endChunk(g);
        t.awaitAllDone(g);
        return true;
    }
}
