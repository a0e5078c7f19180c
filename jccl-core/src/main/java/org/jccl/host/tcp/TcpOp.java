package org.jccl.host.tcp;

import java.lang.foreign.MemorySegment;

/**
 * One posted message: a send or receive of {@code bytes} bytes of a segment, cut into frames of
 * at most the transport's chunk size, spread round-robin over the peer's sockets. Pooled by the
 * transport, so posting allocates nothing after warm-up.
 */
final class TcpOp {
    final int id;
    boolean inUse;
    boolean send;
    boolean p2p;
    int peer;
    MemorySegment seg;
    long off;
    long bytes;
    /** Header fields every frame of this message carries (and the receiver expects). */
    long seq, call, count, tag;
    /** The CALL word of the collective before this one (0: a send/recv, or none). */
    long prev;
    /** Frames of the message; frames not yet flushed to the kernel (send) or copied in (recv). */
    int frames, framesLeft;
    /**
     * A buffer over native memory containing the message's segment, for payloads read or written
     * in place (null: through the staging buffers), and the position of the segment's byte 0 in it.
     */
    java.nio.ByteBuffer view;
    long viewAt;
    /** Global index (per peer and direction) of frame 0, and the sockets it is spread over. */
    long base;
    int sockets;

    TcpOp(int id) {
        this.id = id;
    }

    /** Byte offset of frame {@code j} in the message. */
    long frameOffset(int j, int chunk) {
        return (long) j * chunk;
    }

    /** Payload bytes of frame {@code j}. */
    int frameLength(int j, int chunk) {
        return (int) Math.min(chunk, bytes - (long) j * chunk);
    }

    /** The first frame of this message that goes over socket {@code index}. */
    int firstFrameOn(int index) {
        return (int) Math.floorMod(index - base, (long) sockets);
    }

    boolean done() {
        return framesLeft == 0;
    }
}
