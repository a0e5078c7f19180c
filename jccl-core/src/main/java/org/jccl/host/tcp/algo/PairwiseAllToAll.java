package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.tcp.TcpTransport;

/**
 * All-to-all: every rank sends block p of its input straight to rank p and receives block q of
 * its output from rank q, all pairs at once (the transport interleaves the sockets). In place,
 * the input is first copied aside so that no block is overwritten before it left.
 */
public final class PairwiseAllToAll {
    private PairwiseAllToAll() {
    }

    /** Runs the all-to-all (n >= 2); blocks hold {@code send.count() / n} elements. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv) {
        int n = t.size();
        int r = t.rank();
        long block = send.byteSize() / n;
        MemorySegment in = send.segment();
        MemorySegment out = recv.segment();
        if (send.sameStart(recv)) {
            MemorySegment copy = t.scratch(1, send.byteSize());
            MemorySegment.copy(in, 0, copy, 0, send.byteSize());
            in = copy;
        }
        long tag = Parts.tag(Parts.ALLTOALL, 0, 0);
        Parts.recvBlockFromEachBackwards(t, out, block, tag);
        Parts.sendToEach(t, in, block, block, tag);
        if (in != out) {
            MemorySegment.copy(in, r * block, out, r * block, block);
        }
        t.awaitAll();
    }
}
