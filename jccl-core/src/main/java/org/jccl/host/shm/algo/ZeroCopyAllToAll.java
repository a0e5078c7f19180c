package org.jccl.host.shm.algo;

import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmTransport;

/**
 * All-to-all and scatter from registered send buffers, or native ones every rank can read
 * ({@link ZeroCopy}, process_vm_readv): rank r copies block r
 * of each sender's send buffer straight into its recv buffer, which may be any memory. An
 * all-to-all in place (send and recv the same memory) takes the copy path: its blocks are
 * overwritten while peers read them. A sender returns once every rank is done with its buffer.
 */
public final class ZeroCopyAllToAll {
    private ZeroCopyAllToAll() {
    }

    /**
     * Runs the all-to-all (every rank sends), or a scatter from {@code root} when {@code root >= 0},
     * when the senders' buffers are registered; false (nothing moved) otherwise. {@code blockCount}
     * is the per-rank block size.
     * With {@code readPeers}, a peer's unregistered send buffer in native memory will do when every rank
     * can read every peer (process_vm_readv).
     */
    public static boolean tryRun(ShmTransport t, HostBuffer send, HostBuffer recv, long blockCount, int root,
                                 boolean enabled, boolean readPeers) {
        int n = t.size();
        int me = t.rank();
        boolean sends = root < 0 || root == me;
        boolean sendOk = root >= 0 || !send.overlaps(recv);
        long g = ZeroCopy.exchange(t, sends ? send : null, recv, sendOk, enabled,
                root < 0 ? ZeroCopy.SEND_ALL : ZeroCopy.SEND_ROOT, root, readPeers);
        if (g < 0) {
            return false;
        }
        long blockBytes = blockCount * recv.type().byteSize();
        if (root < 0) {
            for (int k = 0; k < n; k++) {
                int p = (me + k) % n;
                ZeroCopy.read(t, p, me * blockBytes, recv.segment(), p * blockBytes, blockBytes);
            }
        } else {
            ZeroCopy.read(t, root, me * blockBytes, recv.segment(), 0, blockBytes);
        }
        t.endChunk(g);
        if (sends) {
            t.awaitAllDone(g);
        }
        return true;
    }
}
