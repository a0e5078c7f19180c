package org.jccl.host.shm.algo;

import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmTransport;

/**
 * Broadcast from a registered root buffer, or a native one every rank can read ({@link ZeroCopy},
 * process_vm_readv): every rank copies the root's send
 * buffer straight into its recv buffer, which may be any memory; the root returns once every rank
 * has copied it.
 */
public final class ZeroCopyBroadcast {
    private ZeroCopyBroadcast() {
    }

    /**
     * Runs the broadcast when the root's send buffer is registered; false (nothing moved) otherwise.
     * With {@code readPeers}, a root's unregistered send buffer in native memory will do when every
     * rank can read every peer (process_vm_readv; HostCommunicator passes false: slower than the slots).
     */
    public static boolean tryRun(ShmTransport t, HostBuffer send, HostBuffer recv, int root, boolean enabled,
                                 boolean readPeers) {
        boolean isRoot = t.rank() == root;
        long g = ZeroCopy.exchange(t, isRoot ? send : null, recv, true, enabled, ZeroCopy.SEND_ROOT, root, readPeers);
        if (g < 0) {
            return false;
        }
        ZeroCopy.read(t, root, 0, recv.segment(), 0, recv.byteSize());
        t.endChunk(g);
        if (isRoot) {
            t.awaitAllDone(g);
        }
        return true;
    }
}
