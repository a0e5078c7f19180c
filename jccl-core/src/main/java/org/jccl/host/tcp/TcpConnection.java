package org.jccl.host.tcp;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;

/**
 * One socket to one peer, non-blocking: a send side that appends whole frames (header, then
 * payload copied from the caller's segment) to a staging buffer and writes it to the socket, and
 * a receive side that reads into a staging buffer and parses frames out of it, checking each
 * header against the message it expects next. Not thread-safe: the transport's calling thread
 * drives it.
 */
final class TcpConnection {
    private static final int PENDING_FRAMES = 256;
    /**
     * Payloads at least this large of native segments skip the staging buffers (one copy less each
     * way, one system call more each way). Measured on 2 cores over veth: 16-32 KiB frames are
     * 15-30% faster staged (all-gather of 32 KiB: 14.7 against 19.1 us), 64 KiB and larger ones
     * faster in place (all-reduce of 64 KiB: 22.2 against 26.0 us).
     */
    static final int DIRECT_MIN_BYTES = 64 << 10;
    /** Bytes of a direct payload staged with its header. */
    static final int DIRECT_PREFIX_BYTES = 4096;

    final TcpTransport t;
    /** The socket written to; {@link #rch} is read from (the same one, except for a rank's connection to itself). */
    final SocketChannel ch;
    final SocketChannel rch;
    final int peer;
    /** Index among the peer's sockets; -1 for the send/recv socket. */
    final int index;
    final int sockets;
    SelectionKey key;
    /** The read channel's key when it is another socket (the connection to itself), else null. */
    SelectionKey rkey;

    // ---- staging buffers (allocated on first use: most sockets of a large job stay idle)
    private final int capacity;
    private ByteBuffer out, in;
    private MemorySegment outSeg, inSeg;

    // ---- send side
    final ArrayDeque<TcpOp> sendQ = new ArrayDeque<>();
    private int sendFrame = -1;        // frame of sendQ.peek() being appended, -1: not started
    private int sendCopied;            // payload bytes of that frame appended
    private boolean sendMidFrame;      // header appended, payload not complete
    private ByteBuffer sendDirect;     // view of the caller's segment when the payload goes directly
    private int outFlush, outFill;     // [outFlush, outFill) waits to be written
    private long written;              // stream position: bytes written to the socket
    private final TcpOp[] pendOp = new TcpOp[PENDING_FRAMES];
    private final long[] pendEnd = new long[PENDING_FRAMES];
    private int pendHead, pendSize;

    // ---- receive side
    final ArrayDeque<TcpOp> recvQ = new ArrayDeque<>();
    private int recvFrame = -1;
    private int recvGot;
    private boolean recvInFrame;
    private ByteBuffer recvDirect;     // view of the destination when the payload is read directly
    private int inRead, inWrite;       // [inRead, inWrite) read but not parsed
    private boolean draining;          // after a mismatch: looking for the peer's ABORT frame
    private long drainSkip;            // bytes of a discarded frame still to skip
    /** Set while the transport fails: the send side finishes the frame it is in and starts no other. */
    boolean closing;
    /** Set when writing failed while failing (the peer is gone: nothing more goes out). */
    boolean sendBroken;
    boolean eof;
    boolean peerClosed;
    /** Set by the selector: readable or writable since the last pass. */
    boolean ready;
    IOException ioError;
    /** Set when the peer's ABORT frame arrived: code and reason. */
    long abortCode;
    String abortReason;
    /** The rank the peer's ABORT blames (another rank that died or was late), or -1. */
    int abortCulprit = -1;

    TcpConnection(TcpTransport t, SocketChannel ch, SocketChannel rch, int peer, int index, int sockets, int capacity) {
        this.t = t;
        this.ch = ch;
        this.rch = rch;
        this.peer = peer;
        this.index = index;
        this.sockets = sockets;
        this.capacity = capacity;
    }

    private void buffers() {
        if (out == null) {
            Arena a = t.arena();
            outSeg = a.allocate(capacity, 64);
            inSeg = a.allocate(capacity, 64);
            out = outSeg.asByteBuffer();
            in = inSeg.asByteBuffer();
        }
    }

    boolean sendPending() {
        return !sendQ.isEmpty() || outFill > outFlush;
    }

    boolean recvPending() {
        return !recvQ.isEmpty();
    }

    /** True when the receive buffer has room (reading can detect EOF and ABORT frames). */
    boolean canRead() {
        return !eof && ioError == null && (in == null || inWrite < capacity || inRead > 0);
    }

    /** True once the staging buffers exist (the socket was used, or was readable while waiting). */
    boolean buffered() {
        return in != null;
    }

    boolean unflushed() {
        return outFill > outFlush;
    }

    // ------------------------------------------------------------------ send

    /**
     * Appends what fits and writes what the socket takes.
     *
     * @return true when any byte moved
     */
    boolean progressSend() throws IOException {
        buffers();
        boolean moved = false;
        int chunk = t.chunkBytes();
        while (true) {
            TcpOp op = closing && !sendMidFrame ? null : sendQ.peek();
            boolean appended = false;
            if (op != null && pendSize < PENDING_FRAMES) {
                if (sendFrame < 0) {
                    sendFrame = op.firstFrameOn(Math.max(index, 0));
                    sendCopied = 0;
                    sendMidFrame = false;
                }
                int len = op.frameLength(sendFrame, chunk);
                ByteBuffer direct = sendMidFrame || len < DIRECT_MIN_BYTES ? null : op.view;
                if (!sendMidFrame && capacity - outFill >= Frame.HEADER_BYTES + (direct != null ? DIRECT_PREFIX_BYTES : 0)) {
                    Frame.put(outSeg, outFill, Frame.DATA, len, t.commId(), op.seq, op.call, op.count, op.tag,
                            op.frameOffset(sendFrame, chunk), op.bytes, op.prev);
                    outFill += Frame.HEADER_BYTES;
                    sendMidFrame = true;
                    sendDirect = direct;
                    if (sendDirect != null) {
                        // The header leaves with the first bytes of the payload (no lone 72-byte
                        // segment); the rest goes straight from the caller's memory.
                        MemorySegment.copy(op.seg, op.off + op.frameOffset(sendFrame, chunk), outSeg, outFill, DIRECT_PREFIX_BYTES);
                        outFill += DIRECT_PREFIX_BYTES;
                        sendCopied = DIRECT_PREFIX_BYTES;
                    }
                    appended = true;
                }
                if (sendMidFrame && sendDirect != null) {
                    // Single-buffer writes: a gathering write allocates per call for segment views.
                    if (outFill == outFlush) {
                        long at = op.viewAt + op.off + op.frameOffset(sendFrame, chunk) + sendCopied;
                        sendDirect.limit((int) (at + len - sendCopied)).position((int) at);
                        int n = ch.write(sendDirect);
                        if (n > 0) {
                            sendCopied += n;
                            written += n;
                            appended = true;
                        }
                    }
                    if (sendCopied == len) {
                        t.frameDone(op);
                        nextSendFrame(op);
                        appended = true;
                    }
                } else if (sendMidFrame) {
                    int n = Math.min(len - sendCopied, capacity - outFill);
                    if (n > 0) {
                        MemorySegment.copy(op.seg, op.off + op.frameOffset(sendFrame, chunk) + sendCopied, outSeg, outFill, n);
                        outFill += n;
                        sendCopied += n;
                        appended = true;
                    }
                    if (sendCopied == len) {
                        pushPending(op, written + (outFill - outFlush));
                        nextSendFrame(op);
                        appended = true;
                    }
                }
            }
            boolean flushed = flush();
            moved |= appended | flushed;
            if (!appended && !flushed) {
                return moved;
            }
            if (!flushed && outFill == capacity) {
                return moved;
            }
        }
    }

    private void nextSendFrame(TcpOp op) {
        sendMidFrame = false;
        sendDirect = null;
        sendCopied = 0;
        sendFrame += sockets;
        if (sendFrame >= op.frames) {
            sendQ.poll();
            sendFrame = -1;
        }
    }

    private void pushPending(TcpOp op, long end) {
        int i = (pendHead + pendSize) % PENDING_FRAMES;
        pendOp[i] = op;
        pendEnd[i] = end;
        pendSize++;
    }

    /** Writes buffered bytes; retires frames whose last byte reached the kernel. */
    private boolean flush() throws IOException {
        if (outFill == outFlush) {
            return false;
        }
        out.limit(outFill).position(outFlush);
        int n = ch.write(out);
        if (n <= 0) {
            return false;
        }
        flushed(n);
        return true;
    }

    /** {@code n} staged bytes reached the kernel. */
    private void flushed(int n) {
        outFlush += n;
        written += n;
        while (pendSize > 0 && pendEnd[pendHead] <= written) {
            t.frameDone(pendOp[pendHead]);
            pendOp[pendHead] = null;
            pendHead = (pendHead + 1) % PENDING_FRAMES;
            pendSize--;
        }
        if (outFlush == outFill) {
            outFlush = outFill = 0;
        } else if (outFlush > capacity / 2) {
            MemorySegment.copy(outSeg, outFlush, outSeg, 0, outFill - outFlush);
            outFill -= outFlush;
            outFlush = 0;
        }
    }

    /**
     * Appends an ABORT frame when the send side is between frames (else the peer learns of the
     * failure from the closed socket). Returns true when appended.
     */
    boolean appendAbort(long code, byte[] reason, int culprit) {
        int len = Math.min(reason.length, Frame.MAX_REASON);
        return appendControl(Frame.ABORT, code, reason, len, culprit + 1L);
    }

    /** Appends a CLOSE frame when between frames. */
    boolean appendClose() {
        return appendControl(Frame.CLOSE, 0, null, 0, 0);
    }

    private boolean appendControl(int kind, long code, byte[] payload, int len, long offsetWord) {
        if (sendMidFrame) {
            return false;
        }
        if (out == null) {
            // Never sent anything: write the frame directly (it fits an empty socket buffer).
            ByteBuffer b = ByteBuffer.allocate(Frame.HEADER_BYTES + len);
            MemorySegment s = MemorySegment.ofBuffer(b);
            Frame.put(s, 0, kind, len, t.commId(), 0, 0, 0, code, offsetWord, len, 0);
            if (len > 0) {
                b.put(Frame.HEADER_BYTES, payload, 0, len);
            }
            try {
                ch.write(b);
            } catch (IOException e) {
                sendBroken = true;
                return false;
            }
            if (b.hasRemaining() && b.position() > 0) {
                // Part of the frame went: stage the rest (retrying from the start would corrupt the stream).
                buffers();
                int rest = b.remaining();
                MemorySegment.copy(s, b.position(), outSeg, 0, rest);
                outFlush = 0;
                outFill = rest;
                return true;
            }
            return !b.hasRemaining();
        }
        if (capacity - outFill < Frame.HEADER_BYTES + len) {
            return false;
        }
        Frame.put(outSeg, outFill, kind, len, t.commId(), 0, 0, 0, code, offsetWord, len, 0);
        if (len > 0) {
            MemorySegment.copy(payload, 0, outSeg, java.lang.foreign.ValueLayout.JAVA_BYTE, outFill + Frame.HEADER_BYTES, len);
        }
        outFill += Frame.HEADER_BYTES + len;
        return true;
    }

    /** One write attempt of whatever is buffered (used while failing or closing). */
    boolean tryFlush() {
        try {
            flush();
        } catch (IOException e) {
            sendBroken = true;
            return false;
        }
        return outFill == outFlush;
    }

    /**
     * One step of telling the peer why this rank fails: finishes the data frame the send side is
     * in (its real payload: the caller's memory is still there), appends the ABORT frame once the
     * stream is between frames, writes what the socket takes. Non-blocking.
     *
     * @return true when the ABORT frame reached the kernel, or cannot go (the connection broke)
     */
    boolean stepAbort(long code, byte[] reason, int culprit) {
        closing = true;
        if (sendBroken) {
            return true;
        }
        try {
            if (sendMidFrame) {
                progressSend();
            }
        } catch (IOException e) {
            sendBroken = true;
            return true;
        }
        if (!sendMidFrame && !abortQueued) {
            abortQueued = appendAbort(code, reason, culprit);
        }
        tryFlush();
        return sendBroken || abortQueued && !unflushed();
    }

    private boolean abortQueued;

    /**
     * After this rank shut its output down: reads and discards what the peer sends, so that the
     * socket is not closed with unread input (that sends a reset, which discards this side's data
     * not yet transmitted, the ABORT frame included). Non-blocking.
     *
     * @return -1 when the peer's end of the stream (or an error) came: nothing more will; else
     *         the number of bytes discarded now
     */
    int discardInput(ByteBuffer scratch) {
        if (eof) {
            return -1;
        }
        int total = 0;
        try {
            while (true) {
                scratch.clear();
                int n = rch.read(scratch);
                if (n < 0) {
                    eof = true;
                    return -1;
                }
                if (n == 0) {
                    return total;
                }
                total += n;
            }
        } catch (IOException e) {
            return -1;
        }
    }

    // ------------------------------------------------------------------ receive

    /**
     * Parses what is buffered and reads what the socket has.
     *
     * @param any read even with no receive posted (to notice EOF and ABORT frames while waiting)
     * @return true when any byte moved
     */
    boolean progressRecv(boolean any) throws IOException {
        buffers();
        boolean moved = false;
        while (true) {
            moved |= parse();
            if (abortCode != 0) {
                return true;
            }
            if (recvInFrame && recvDirect != null && inRead == inWrite) {
                // The rest of a large payload goes from the socket straight into place (never past
                // the frame: the next header comes through the staging buffer).
                TcpOp op = recvQ.peek();
                int len = op.frameLength(recvFrame, t.chunkBytes());
                long at = op.viewAt + op.off + op.frameOffset(recvFrame, t.chunkBytes()) + recvGot;
                recvDirect.limit((int) (at + len - recvGot)).position((int) at);
                int n = readSome(recvDirect);
                if (n < 0) {
                    return true;
                }
                if (n == 0) {
                    return moved;
                }
                recvGot += n;
                moved = true;
                if (recvGot == len) {
                    nextRecvFrame(op);
                }
                continue;
            }
            if (inRead == inWrite) {
                inRead = inWrite = 0;
            } else if (inWrite == capacity) {
                compactIn();
            }
            if (inWrite == capacity || eof || ioError != null || (!any && recvQ.isEmpty())) {
                return moved;
            }
            int room = capacity;
            if (!recvInFrame && inWrite - inRead < Frame.HEADER_BYTES && nextFrameDirect()) {
                // The next frame's payload goes straight into place: read its header alone (one
                // small read more per frame), else the staging read takes in up to a whole frame
                // of payload and copies it once more (measured: over 90% of the bytes of 256 KiB
                // frames went that way).
                compactIn();
                room = Frame.HEADER_BYTES;
            }
            in.limit(room).position(inWrite);
            int n = readSome(in);
            if (n < 0) {
                return true;
            }
            if (n == 0) {
                return moved;
            }
            inWrite += n;
            moved = true;
        }
    }

    /**
     * One non-blocking read from the socket into {@code b}: the bytes read (0 when none were ready),
     * or -1 once an error (kept in {@code ioError}) or the peer's end of the stream ({@link
     * #endOfStream}) came.
     */
    private int readSome(ByteBuffer b) {
        int n;
        try {
            n = rch.read(b);
        } catch (IOException e) {
            ioError = e;
            return -1;
        }
        if (n < 0) {
            endOfStream();
        }
        return n;
    }

    /** Moves the unparsed bytes of the staging buffer to its front (nothing when they are there). */
    private void compactIn() {
        if (inRead > 0) {
            MemorySegment.copy(inSeg, inRead, inSeg, 0, inWrite - inRead);
            inWrite -= inRead;
            inRead = 0;
        }
    }

    /** True when the next frame expected on this socket is read straight into the receiver's memory. */
    private boolean nextFrameDirect() {
        TcpOp op = recvQ.peek();
        if (op == null || op.view == null) {
            return false;
        }
        int f = recvFrame >= 0 ? recvFrame : op.firstFrameOn(Math.max(index, 0));
        return f < op.frames && op.frameLength(f, t.chunkBytes()) >= DIRECT_MIN_BYTES;
    }

    /** Parses buffered frames into the posted receives. */
    private boolean parse() {
        boolean moved = false;
        int chunk = t.chunkBytes();
        while (inWrite > inRead) {
            int avail = inWrite - inRead;
            if (!recvInFrame) {
                if (avail < Frame.HEADER_BYTES) {
                    return moved;
                }
                int kind = Frame.kind(inSeg, inRead);
                if (kind == Frame.ABORT) {
                    int len = Frame.length(inSeg, inRead);
                    if (len < 0 || len > Frame.MAX_REASON) {
                        TcpFailures.corrupt(t, this, "an ABORT frame with a reason of " + len + " bytes");
                    }
                    if (avail < Frame.HEADER_BYTES + len) {
                        return moved;
                    }
                    readAbort(inRead, len);
                    inRead += Frame.HEADER_BYTES + len;
                    return true;
                }
                if (kind == Frame.CLOSE) {
                    peerClosed = true;
                    inRead += Frame.HEADER_BYTES;
                    moved = true;
                    continue;
                }
                if (kind != Frame.DATA) {
                    TcpFailures.corrupt(t, this, String.format("a frame of kind 0x%08x", kind));
                }
                TcpOp op = recvQ.peek();
                if (op == null) {
                    return moved; // data of a receive not posted yet: it waits here
                }
                if (recvFrame < 0) {
                    recvFrame = op.firstFrameOn(Math.max(index, 0));
                }
                int len = op.frameLength(recvFrame, chunk);
                if (Frame.word(inSeg, inRead, Frame.COMM) != t.commId()) {
                    TcpFailures.corrupt(t, this, "a frame of another communicator (id " + Long.toHexString(Frame.word(inSeg, inRead, Frame.COMM)) + ")");
                }
                if (Frame.length(inSeg, inRead) != len
                        || Frame.word(inSeg, inRead, Frame.SEQ) != op.seq
                        || Frame.word(inSeg, inRead, Frame.CALL) != op.call
                        || Frame.word(inSeg, inRead, Frame.COUNT) != op.count
                        || Frame.word(inSeg, inRead, Frame.TAG) != op.tag
                        || Frame.word(inSeg, inRead, Frame.OFFSET) != op.frameOffset(recvFrame, chunk)
                        || Frame.word(inSeg, inRead, Frame.MSG_BYTES) != op.bytes
                        || Frame.word(inSeg, inRead, Frame.PREV) != op.prev) {
                    TcpFailures.mismatch(t, this, op, Frame.word(inSeg, inRead, Frame.SEQ), Frame.word(inSeg, inRead, Frame.CALL),
                            Frame.word(inSeg, inRead, Frame.COUNT), Frame.word(inSeg, inRead, Frame.MSG_BYTES),
                            Frame.word(inSeg, inRead, Frame.TAG), Frame.word(inSeg, inRead, Frame.PREV));
                }
                inRead += Frame.HEADER_BYTES;
                recvInFrame = true;
                recvGot = 0;
                recvDirect = len >= DIRECT_MIN_BYTES ? op.view : null;
                moved = true;
            }
            TcpOp op = recvQ.peek();
            int len = op.frameLength(recvFrame, chunk);
            int n = Math.min(inWrite - inRead, len - recvGot);
            if (n > 0) {
                MemorySegment.copy(inSeg, inRead, op.seg, op.off + op.frameOffset(recvFrame, chunk) + recvGot, n);
                inRead += n;
                recvGot += n;
                moved = true;
            }
            if (recvGot == len) {
                nextRecvFrame(op);
            } else if (recvDirect != null) {
                return moved; // the rest is read straight into place
            }
        }
        return moved;
    }

    private void readAbort(int at, int len) {
        byte[] r = new byte[len];
        MemorySegment.copy(inSeg, java.lang.foreign.ValueLayout.JAVA_BYTE, at + Frame.HEADER_BYTES, r, 0, len);
        abortReason = printable(new String(r, StandardCharsets.UTF_8));
        long code = Frame.word(inSeg, at, Frame.TAG);
        long blamed = Frame.word(inSeg, at, Frame.OFFSET) - 1;
        abortCulprit = blamed >= 0 && blamed < Integer.MAX_VALUE ? (int) blamed : -1;
        abortCode = code == 0 ? Frame.ABORT_FAILED : code;
    }

    /**
     * The peer's end of the stream was read: everything it sent is in the staging buffer. Parsing
     * stops at a data frame for a receive not posted yet (the peer ran ahead, e.g. finished its
     * last call and closed), so its goodbye (CLOSE) or ABORT frame may sit behind such frames:
     * looks past them, so that a peer that closed after its last call is not taken for a dead one
     * (the buffered data frames stay for the receives still to come).
     */
    private void endOfStream() {
        eof = true;
        if (in == null || peerClosed || abortCode != 0) {
            return;
        }
        long at = inRead;
        if (recvInFrame) {
            TcpOp op = recvQ.peek();
            if (op == null || recvDirect != null) {
                return;
            }
            at += op.frameLength(recvFrame, t.chunkBytes()) - recvGot;
        }
        while (at + Frame.HEADER_BYTES <= inWrite) {
            int p = (int) at;
            int kind = Frame.kind(inSeg, p);
            int len = Frame.length(inSeg, p);
            if (len < 0) {
                return;
            }
            if (kind == Frame.CLOSE) {
                peerClosed = true;
                return;
            }
            if (kind == Frame.ABORT) {
                if (len <= Frame.MAX_REASON && at + Frame.HEADER_BYTES + len <= inWrite) {
                    readAbort(p, len);
                }
                return;
            }
            if (kind != Frame.DATA) {
                return;
            }
            at += Frame.HEADER_BYTES + (long) len;
        }
    }

    /** The reason a peer sent, with control characters (terminal escapes, line breaks in logs) replaced. */
    static String printable(String s) {
        StringBuilder b = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isISOControl(c)) {
                if (b == null) {
                    b = new StringBuilder(s.substring(0, i));
                }
                b.append('?');
            } else if (b != null) {
                b.append(c);
            }
        }
        return b == null ? s : b.toString();
    }

    private void nextRecvFrame(TcpOp op) {
        recvInFrame = false;
        recvDirect = null;
        t.frameDone(op);
        recvFrame += sockets;
        if (recvFrame >= op.frames) {
            recvQ.poll();
            recvFrame = -1;
        }
    }

    /**
     * After a mismatch on this socket, or when a connection broke or ended without a word: discards
     * the data frames that follow (the rest of the frame being received, the unexpected one
     * included) looking for the peer's ABORT frame among the bytes readable now; an abort of the
     * peer explains the mismatch or the broken connection better than they do. True when one came
     * (now or before). Destructive: the receive side is of no further use.
     */
    boolean drainForAbort() {
        if (abortCode != 0) {
            return true;
        }
        buffers();
        if (!draining) {
            draining = true;
            if (recvInFrame) {
                // in a data frame: its rest (buffered or still in the socket) goes first
                TcpOp op = recvQ.peek();
                drainSkip = op == null ? 0 : op.frameLength(recvFrame, t.chunkBytes()) - recvGot;
            }
            recvQ.clear();
            recvInFrame = false;
            recvDirect = null;
            recvFrame = -1;
        }
        try {
            while (true) {
                if (abortCode != 0) {
                    return true;
                }
                if (drainSkip > 0) {
                    int n = (int) Math.min(drainSkip, inWrite - inRead);
                    inRead += n;
                    drainSkip -= n;
                    if (drainSkip > 0) {
                        if (!readMore()) {
                            return false;
                        }
                        continue;
                    }
                }
                if (inWrite - inRead < Frame.HEADER_BYTES) {
                    if (!readMore()) {
                        return false;
                    }
                    continue;
                }
                int kind = Frame.kind(inSeg, inRead);
                int len = Frame.length(inSeg, inRead);
                if (kind == Frame.ABORT) {
                    parse();
                    if (abortCode == 0 && !readMore()) {
                        return false;
                    }
                    continue;
                }
                if (kind != Frame.DATA && kind != Frame.CLOSE || len < 0) {
                    return false;
                }
                drainSkip = Frame.HEADER_BYTES + (long) len;
            }
        } catch (IOException e) {
            return false;
        }
    }

    /** Reads once (non-blocking) after moving unparsed bytes to the front; false when nothing came. */
    private boolean readMore() throws IOException {
        compactIn();
        if (inWrite == capacity || eof) {
            return false;
        }
        in.limit(capacity).position(inWrite);
        int n = rch.read(in);
        if (n < 0) {
            eof = true;
            return false;
        }
        inWrite += n;
        return n > 0;
    }

    /** Sets the selector's interest: reads when a receive waits (or {@code watchAll}), writes when bytes wait. */
    void updateInterest(boolean watchAll) {
        int r = canRead() && (watchAll || recvPending()) ? SelectionKey.OP_READ : 0;
        // Writable matters while staged bytes wait, while a payload is written straight from the
        // caller's memory (nothing staged then), and while the staging buffer is full.
        int w = unflushed() || sendMidFrame && sendDirect != null || (!sendQ.isEmpty() && out != null && outFill == capacity)
                ? SelectionKey.OP_WRITE : 0;
        if (rkey == null) {
            set(key, r | w);
        } else {
            set(key, w);
            set(rkey, r);
        }
    }

    private static void set(SelectionKey k, int ops) {
        if (k.interestOps() != ops) {
            k.interestOps(ops);
        }
    }

    /** Closes the socket(s). */
    void close() {
        TcpTransport.closeQuietly(ch);
        if (rch != ch) {
            TcpTransport.closeQuietly(rch);
        }
    }

    /** True when the send side has appended part of a frame. */
    boolean midFrame() {
        return sendMidFrame;
    }

    @Override
    public String toString() {
        return "connection to rank " + peer + (index < 0 ? " (send/recv)" : " #" + index);
    }

    /** State for diagnostics. */
    String state() {
        return this + ": sendQ " + sendQ.size() + " frame " + sendFrame + " copied " + sendCopied + " mid " + sendMidFrame
                + " out [" + outFlush + "," + outFill + ") pend " + pendSize + " written " + written + "; recvQ " + recvQ.size()
                + " frame " + recvFrame + " got " + recvGot + " in [" + inRead + "," + inWrite + ") eof " + eof;
    }
}
