package org.jccl.host.tcp.algo;

import org.jccl.HostBuffer;
import org.jccl.host.tcp.TcpTransport;

/**
 * Gather: every rank sends its block straight to the root, which receives all of them at once
 * into place (the root's link carries the n-1 blocks it must receive anyway). A rank that is not
 * the root sends and returns, so with {@code JCCL_CHECK=1} ({@link TcpTransport#checkCalls()})
 * every rank first checks every other rank's call ({@link Parts#agree}): ranks that name different
 * roots then fail in the call instead of leaving the roots waiting for blocks that went elsewhere.
 */
public final class DirectGather {
    private DirectGather() {
    }

    /** Runs the gather (n >= 2); {@code recv} is used on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, int root) {
        int r = t.rank();
        long bytes = send.byteSize();
        long tag = Parts.tag(Parts.GATHER, 0, 0);
        if (t.checkCalls()) {
            Parts.agree(t);
        }
        if (r != root) {
            Parts.sendToRoot(t, send, root, tag);
            return;
        }
        Parts.recvBlockFromEach(t, recv.segment(), bytes, tag);
        Parts.ownBlockIntoRecv(send, recv, r);
        t.awaitAll();
    }
}
