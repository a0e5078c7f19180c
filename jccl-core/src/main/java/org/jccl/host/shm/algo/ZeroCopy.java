package org.jccl.host.shm.algo;

import static org.jccl.host.shm.ShmRegionDescriptor.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jccl.HostBuffer;
import org.jccl.host.shm.ShmRegions;
import org.jccl.host.shm.ShmTransport;
import org.jccl.internal.SegmentArrays;

/**
 * The decision every zero-copy algorithm starts with (layout in {@link
 * org.jccl.host.shm.ShmRegionDescriptor}): on the call's first chunk every rank publishes where
 * its send and recv buffers lie in its registered memory (or that they do not), waits for every
 * rank's (checking that all ranks are in the same call), and every rank takes the zero-copy path
 * only when every buffer the algorithm touches on a peer is registered. The inputs are the same on
 * every rank, so the decision is too; otherwise every rank goes on with the copy path.
 *
 * <p>On the zero-copy path the peers' buffers are then in the transport's {@code peerSend} /
 * {@code peerRecv} (with their byte offsets; this rank's own buffers at offset 0), and the caller
 * owns the exchange chunk: it ends it ({@code endChunk}) when done reading, and before returning
 * waits until every peer is done with this rank's buffers ({@code awaitAllDone}) — the caller may
 * overwrite them once the call returns.
 */
public final class ZeroCopy {
    private ZeroCopy() {
    }

    /** Every rank's send buffer must be registered. */
    public static final int SEND_ALL = 1;
    /** Every rank's recv buffer must be registered. */
    public static final int RECV_ALL = 2;
    /** The root's send buffer must be registered. */
    public static final int SEND_ROOT = 4;
    /** The root's recv buffer must be registered. */
    public static final int RECV_ROOT = 8;

    /** {@link #exchange(ShmTransport, HostBuffer, HostBuffer, boolean, boolean, int, int, boolean)} for algorithms that reduce (registered buffers only). */
    public static long exchange(ShmTransport t, HostBuffer send, HostBuffer recv, boolean sendOk, boolean enabled,
                                int needs, int root) {
        return exchange(t, send, recv, sendOk, enabled, needs, root, false);
    }

    /**
     * Publishes this rank's descriptor and decides.
     *
     * @param send    this rank's send buffer (null where the collective has none on this rank)
     * @param recv    this rank's recv buffer (null where it has none)
     * @param sendOk  false when this rank's send buffer must not be read in place even if
     *                registered (all-to-all in place: its blocks are overwritten while peers read)
     * @param enabled false when zero copy is off on this rank (it publishes "not registered")
     * @param needs   which buffers must be registered ({@link #SEND_ALL}, ...)
     * @param root    the root for {@link #SEND_ROOT} / {@link #RECV_ROOT}
     * @param readsOnly the algorithm only copies from peers' send buffers ({@link #read}): a peer's
     *                unregistered send buffer in native memory will do when every rank can read every
     *                peer (process_vm_readv; {@code needs} then names send buffers only)
     * @return the exchange chunk id when every rank takes the zero-copy path, else -1 (the
     *         exchange chunk is then ended: go on with the copy path)
     */
    public static long exchange(ShmTransport t, HostBuffer send, HostBuffer recv, boolean sendOk, boolean enabled,
                                int needs, int root, boolean readsOnly) {
        ShmRegions regions = t.regions();
        int n = t.size();
        int me = t.rank();
        MemorySegment mine = t.segment(me);
        long g = t.beginChunk();
        long at = t.inData(g);
        long sid = enabled && sendOk && send != null ? regions.find(send.segment()) : NONE;
        long rid = enabled && recv != null ? regions.find(recv.segment()) : NONE;
        mine.set(ValueLayout.JAVA_LONG, at + X_SEND_ID, sid);
        mine.set(ValueLayout.JAVA_LONG, at + X_SEND_OFFSET, sid == NONE ? 0 : regions.offsetIn(sid, send.segment()));
        mine.set(ValueLayout.JAVA_LONG, at + X_RECV_ID, rid);
        mine.set(ValueLayout.JAVA_LONG, at + X_RECV_OFFSET, rid == NONE ? 0 : regions.offsetIn(rid, recv.segment()));
        boolean readable = enabled && sendOk && send != null && send.segment().isNative() && t.readsAllPeers();
        mine.set(ValueLayout.JAVA_LONG, at + X_SEND_ADDRESS, readable ? send.segment().address() : 0L);
        mine.set(ValueLayout.JAVA_LONG, at + X_READS_ALL, t.readsAllPeers() ? 1L : 0L);
        t.postIn(g);
        t.awaitAllIn(g);
        boolean readsAll = readsOnly;
        for (int p = 0; p < n && readsAll; p++) {
            readsAll = t.segment(p).get(ValueLayout.JAVA_LONG, at + X_READS_ALL) == 1L;
        }
        boolean all = true;
        for (int p = 0; p < n && all; p++) {
            MemorySegment s = t.segment(p);
            boolean sendReg = s.get(ValueLayout.JAVA_LONG, at + X_SEND_ID) != NONE
                    || readsAll && s.get(ValueLayout.JAVA_LONG, at + X_SEND_ADDRESS) != 0L;
            boolean recvReg = s.get(ValueLayout.JAVA_LONG, at + X_RECV_ID) != NONE;
            all = ((needs & SEND_ALL) == 0 || sendReg) && ((needs & RECV_ALL) == 0 || recvReg)
                    && ((needs & SEND_ROOT) == 0 || p != root || sendReg)
                    && ((needs & RECV_ROOT) == 0 || p != root || recvReg);
        }
        if (!all) {
            t.endChunk(g);
            return -1;
        }
        for (int p = 0; p < n; p++) {
            MemorySegment s = t.segment(p);
            long ps = s.get(ValueLayout.JAVA_LONG, at + X_SEND_ID);
            long pr = s.get(ValueLayout.JAVA_LONG, at + X_RECV_ID);
            if (p == me) {
                SegmentArrays.set(t.peerSend, p, send == null ? null : send.segment());
                t.peerSendOffsets[p] = 0;
                SegmentArrays.set(t.peerRecv, p, recv == null ? null : recv.segment());
                t.peerRecvOffsets[p] = 0;
                continue;
            }
            // Map only what the algorithm reads or writes: the peer's other buffer may be anything.
            boolean wantSend = (needs & SEND_ALL) != 0 || ((needs & SEND_ROOT) != 0 && p == root);
            boolean wantRecv = (needs & RECV_ALL) != 0 || ((needs & RECV_ROOT) != 0 && p == root);
            SegmentArrays.set(t.peerSend, p, wantSend && ps != NONE ? regions.peer(p, ps) : null);
            t.peerSendOffsets[p] = DATA + s.get(ValueLayout.JAVA_LONG, at + X_SEND_OFFSET);
            t.peerSendAddress[p] = wantSend && ps == NONE ? s.get(ValueLayout.JAVA_LONG, at + X_SEND_ADDRESS) : 0L;
            SegmentArrays.set(t.peerRecv, p, wantRecv && pr != NONE ? regions.peer(p, pr) : null);
            t.peerRecvOffsets[p] = DATA + s.get(ValueLayout.JAVA_LONG, at + X_RECV_OFFSET);
        }
        return g;
    }

    /**
     * Copies {@code bytes} at {@code offset} of peer {@code p}'s send buffer into {@code dst}: from
     * its registered region where mapped, else from its process (process_vm_readv, one copy); this
     * rank's own buffer directly (nothing when source and destination are the same memory). A peer
     * that gave up on the call while it was read fails the read ({@link ShmTransport#checkReadFrom}).
     */
    static void read(ShmTransport t, int p, long offset, MemorySegment dst, long dstOffset, long bytes) {
        if (bytes <= 0) {
            return;
        }
        MemorySegment src = t.peerSend[p];
        if (src != null) {
            copy(src, t.peerSendOffsets[p] + offset, dst, dstOffset, bytes);
        } else {
            t.readPeer(p, t.peerSendAddress[p] + offset, dst, dstOffset, bytes);
        }
        if (p != t.rank()) {
            t.checkReadFrom(p);
        }
    }

    /**
     * After this rank's reads of peers' registered buffers in place (the reducing collectives, which
     * read them in the kernels): fails when a peer gave up on the call meanwhile ({@link
     * ShmTransport#checkReadFrom}), as {@link #read} does after each read.
     */
    static void checkPeers(ShmTransport t) {
        int me = t.rank();
        for (int p = 0; p < t.size(); p++) {
            if (p != me) {
                t.checkReadFrom(p);
            }
        }
    }

    /** Copies {@code bytes} unless source and destination are the very same memory (in place). */
    static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        if (bytes > 0 && (src.address() + srcOffset != dst.address() + dstOffset || !src.isNative() || !dst.isNative())) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes);
        }
    }
}
