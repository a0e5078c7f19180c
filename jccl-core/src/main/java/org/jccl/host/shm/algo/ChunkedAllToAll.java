package org.jccl.host.shm.algo;

import java.lang.foreign.MemorySegment;
import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmTransport;

/**
 * All-to-all and scatter: per chunk the sender(s) post the same range of all n blocks; rank r
 * copies block r of each sender's slot. In place works because a chunk's range is copied into
 * the slot before any rank writes that range of its output.
 */
public final class ChunkedAllToAll {
    private ChunkedAllToAll() {
    }

    /**
     * Runs the all-to-all (every rank sends), or a scatter from {@code root} when {@code root >= 0}
     * ({@code send} is read on the root only). {@code blockCount} is the per-rank block size.
     */
    public static void run(ShmTransport t, HostBuffer send, HostBuffer recv, long blockCount, int root) {
        int n = t.size();
        int r = t.rank();
        int es = recv.type().byteSize();
        long per = Chunks.elementsPerChunk(t.slotBytes(), n, es);
        long chunks = Chunks.chunkCount(blockCount, per);
        long blockBytes = blockCount * es;
        boolean sends = root < 0 || root == r;
        MemorySegment mine = t.segment(r);
        for (long c = 0; c < chunks; c++) {
            long first = c * per;
            long bytes = Math.min(per, blockCount - first) * es;
            long g = t.beginChunk();
            long slot = t.inData(g);
            if (sends) {
                for (int j = 0; j < n; j++) {
                    MemorySegment.copy(send.segment(), j * blockBytes + first * es, mine, slot + j * bytes, bytes);
                }
                t.postIn(g, first);
                if (root >= 0 && c == 0) {
                    // Scatter: receivers post their call on the first chunk and the root checks them,
                    // so two ranks that both believe they are the root cannot pass silently.
                    t.awaitAllIn(g);
                }
            } else if (c == 0) {
                t.postIn(g, first);
            }
            if (root < 0) {
                Chunks.copyFromEverySlot(t, g, slot + r * bytes, recv.segment(), blockBytes, first * es, bytes);
            } else {
                if (root != r) {
                    t.awaitIn(root, g);
                }
                MemorySegment.copy(t.segment(root), slot + r * bytes, recv.segment(), first * es, bytes);
            }
            t.endChunk(g);
        }
    }
}
