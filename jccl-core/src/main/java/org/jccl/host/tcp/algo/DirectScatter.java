package org.jccl.host.tcp.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.tcp.TcpTransport;

/**
 * Scatter: the root sends block p of its vector straight to rank p, all at once. Every other rank
 * sends the root an empty hello (its call's fingerprint) on entry, which the root expects: two
 * ranks that both believe they are the root meet as a mismatch instead of both passing silently.
 * A receiver checks only the root's call, so with {@code JCCL_CHECK=1} ({@link
 * TcpTransport#checkCalls()}) every rank first checks every other rank's ({@link Parts#agree}), as
 * a small broadcast does: a receiver that agrees with its root then fails too when others name
 * another root.
 */
public final class DirectScatter {
    private DirectScatter() {
    }

    /** Runs the scatter (n >= 2); {@code send} is used on the root only. */
    public static void run(TcpTransport t, HostBuffer send, HostBuffer recv, int root) {
        int r = t.rank();
        long bytes = recv.byteSize();
        long tag = Parts.tag(Parts.SCATTER, 0, 0);
        long hello = Parts.tag(Parts.HELLO, 0, 0);
        MemorySegment none = t.scratch(3, 64);
        if (t.checkCalls()) {
            Parts.agree(t);
        }
        if (r != root) {
            t.send(root, none, 0, 0, hello);
            t.await(t.recv(root, recv.segment(), 0, bytes, tag));
            t.awaitAll();
            return;
        }
        MemorySegment in = send.segment();
        int n = t.size();
        for (int k = 1; k < n; k++) {
            int p = (r + k) % n;
            t.recv(p, none, 0, 0, hello);
            t.send(p, in, p * bytes, bytes, tag);
        }
        if (!recv.overlaps(send)) { // validated: overlapping means recv is block r of send (in place)
            MemorySegment.copy(in, r * bytes, recv.segment(), 0, bytes);
        }
        t.awaitAll();
    }
}
