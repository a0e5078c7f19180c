package org.jccl.host.shm.algo;

import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmTransport;

/**
 * All-gather and gather on registered send buffers, or native ones every rank can read ({@link
 * ZeroCopy}, process_vm_readv): each receiver copies every
 * rank's block straight from its send buffer into its recv buffer, which may be any memory.
 * Returns once every peer is done with this rank's send buffer.
 */
public final class ZeroCopyAllGather {
    private ZeroCopyAllGather() {
    }

    /**
     * Runs the all-gather, or a gather to {@code root} when {@code root >= 0}, when every rank's
     * send buffer is registered; false (nothing moved) otherwise.
     * With {@code readPeers}, a peer's unregistered send buffer in native memory will do when every rank
     * can read every peer (process_vm_readv).
     */
    public static boolean tryRun(ShmTransport t, HostBuffer send, HostBuffer recv, int root, boolean enabled,
                                 boolean readPeers) {
        int me = t.rank();
        boolean receives = root < 0 || root == me;
        long g = ZeroCopy.exchange(t, send, receives ? recv : null, true, enabled, ZeroCopy.SEND_ALL, root, readPeers);
        if (g < 0) {
            return false;
        }
        int n = t.size();
        long blockBytes = send.byteSize();
        if (receives) {
            for (int k = 0; k < n; k++) {
                int p = (me + k) % n;
                ZeroCopy.read(t, p, 0, recv.segment(), p * blockBytes, blockBytes);
            }
        }
        t.endChunk(g);
        t.awaitAllDone(g);
        return true;
    }
}
