package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;

/** Scatter: the root sends block p of its vector straight to rank p, all at once. */
public final class TcpDirectScatter {
    private TcpDirectScatter() {
    }

    /** Runs the scatter (n >= 2); {@code send} is used on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, int root) {
        int n = t.size();
        int r = t.rank();
        long bytes = recv.byteSize();
        long tag = Parts.tag(Parts.SCATTER, 0, 0);
        if (r != root) {
            t.await(t.recv(root, recv.segment(), 0, bytes, tag));
            return;
        }
        MemorySegment in = send.segment();
        for (int k = 1; k < n; k++) {
            int p = (r + k) % n;
            t.send(p, in, p * bytes, bytes, tag);
        }
        if (!recv.overlaps(send)) { // validated: overlapping means recv is block r of send (in place)
            MemorySegment.copy(in, r * bytes, recv.segment(), 0, bytes);
        }
        t.awaitAll();
    }
}
