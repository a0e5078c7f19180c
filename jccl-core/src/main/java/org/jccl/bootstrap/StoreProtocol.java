package org.jccl.bootstrap;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The wire format of {@link TcpStore} and {@link TcpStoreServer}: every byte that crosses the
 * socket is described here. All integers are big-endian (network order) unless said otherwise.
 * Nothing is ever Java-serialized.
 *
 * <h2>Handshake</h2>
 * <pre>
 *  client -> server, HELLO (8 bytes)
 *  +--------+--------+--------+--------+--------+--------+--------+--------+
 *  |  0  MAGIC u32 = 0x4A43434C "JCCL"  |  4  VERSION u16 |  6  FLAGS u16  |
 *  +--------+--------+--------+--------+--------+--------+--------+--------+
 *
 *  server -> client, WELCOME (8 bytes, then 32 bytes of nonce when FLAG_AUTH is set)
 *  +--------+--------+--------+--------+--------+--------+--------+--------+
 *  |  0  MAGIC u32                      |  4  VERSION u16 |  6  FLAGS u16  |
 *  +--------+--------+--------+--------+--------+--------+--------+--------+
 *  |  8  NONCE [32]  (only when FLAGS has FLAG_AUTH: a fresh SecureRandom nonce)   |
 *  +-------------------------------------------------------------------------------+
 *    The server answers with its own VERSION; when it differs from the client's, it
 *    closes the connection right after WELCOME (and the client reports both versions).
 *
 *  client -> server, PROOF (32 bytes, only when FLAG_AUTH)
 *  |  0  HMAC-SHA256(key = UTF-8 token, message = NONCE || "jccl-store-auth-v1") [32] |
 *
 *  server -> client, AUTH_RESULT (1 byte, only when FLAG_AUTH)
 *  |  0  AUTH_OK = 0  or  AUTH_REJECTED = 1 (the server closes the connection after it) |
 * </pre>
 * The token itself never crosses the wire. The server reads the whole handshake under a read
 * timeout, so a silent client cannot hold a connection slot.
 *
 * <h2>Frames (after the handshake)</h2>
 * <pre>
 *  request, client -> server
 *  +--------+--------+--------+--------+--------+--------+--------+--------+--------+-------
 *  |  0  LENGTH u32 (bytes after it)    |  4  REQUEST ID u32                 |  8  OP |  9 BODY..
 *  +--------+--------+--------+--------+--------+--------+--------+--------+--------+-------
 *
 *  response, server -> client
 *  +--------+--------+--------+--------+--------+--------+--------+--------+--------+-------
 *  |  0  LENGTH u32 (bytes after it)    |  4  REQUEST ID u32 (echoed)        |  8 STA |  9 BODY..
 *  +--------+--------+--------+--------+--------+--------+--------+--------+--------+-------
 *
 *  LENGTH >= 5 and &lt;= MAX_FRAME. Field encodings inside BODY:
 *    key    = u16 byte length (1..MAX_KEY_BYTES) + UTF-8 bytes (well-formed UTF-8 only)
 *    bytes  = u32 byte length (0..MAX_VALUE_BYTES) + the bytes
 *    i64    = 8 bytes, big-endian two's complement
 *    millis = i64, a timeout in milliseconds (negative is treated as 0)
 *
 *  OP            request BODY                      response (STATUS: BODY)
 *  1  SET        key, bytes value                  OK: -
 *  2  GET        key, millis                       OK: bytes   | TIMEOUT: -
 *  3  TRY_GET    key                               OK: bytes   | NOT_FOUND: -
 *  4  ADD        key, i64 delta                    OK: i64 new value
 *  5  CMP_SET    key, bytes expected, bytes desired OK: bytes value after | NOT_FOUND: - (no value after)
 *  6  DELETE     key                               OK: u8 existed (0/1)
 *  7  WAIT       u32 n (1..MAX_WAIT_KEYS), key * n, millis
 *                                                  OK: -       | TIMEOUT: u32 m, key * m (missing)
 *  8  NUM_KEYS   -                                 OK: i64
 *  9  HEARTBEAT  key scope, u32 rank, u32 interval ms (1..2^31-1), u8 flags, i64 known epoch
 *                                                  OK: heartbeat state (below) | ERROR: message
 *  any                                             ERROR: u16 length + UTF-8 message
 * </pre>
 *
 * <h2>Heartbeats</h2>
 * A rank sends HEARTBEAT on a connection of its own every interval; {@code scope} names its job
 * (one {@code Jccl.init}: {@code "jccl/<job id>/c<n>/"}), {@code rank} its job rank. The first
 * HEARTBEAT ties the connection to (scope, rank); a rank already tied to another open connection,
 * or already declared dead, gets ERROR, and so does a connection that names another (scope, rank)
 * later. FLAGS: {@code HB_LEAVING} (1): the rank leaves cleanly (it closed its communicator) and
 * the connection is untied; {@code HB_HOSTS_SERVER} (2): this rank's process hosts the server.
 * When a tied connection closes for any reason other than the server's own shutdown (end of
 * stream, reset, a protocol violation), the server declares that rank dead. A rank whose
 * heartbeats stop while its connection stays open (a stopped process) is only "silent".
 * <pre>
 *  heartbeat state (OK body)
 *    i64 epoch                   the scope's state number; it changes with every join, leave, death
 *    u8  has state               1 when epoch differs from the request's known epoch, else 0
 *    [has state = 1:]
 *      i32 host rank             the rank whose process hosts the server, or -1
 *      u32 n dead, then n x (u32 rank, u16 length + UTF-8 reason)    ranks declared dead
 *      u32 n left, then n x u32 rank                                  ranks that left cleanly
 *    u32 n silent, then n x (u32 rank, i64 ms)   live ranks unheard for more than two of their intervals
 * </pre>
 * Counts are at most {@link #MAX_HEARTBEAT_RANKS}; a rank is in {@code [0, 2^31)}.
 * Requests are independent and carry an id, so one connection multiplexes any number of
 * concurrent requests: the server answers GET/WAIT when the key appears or the deadline passes
 * (it keeps the waiter; the client never polls), and other requests on the same connection are
 * answered meanwhile. Responses may come in any order.
 *
 * <h2>Counters</h2>
 * ADD keeps its counter as the key's value: exactly 8 bytes, the signed 64-bit count in
 * <b>little-endian</b> order (so a GET of a counter key returns those 8 bytes; {@link
 * #decodeCounter(byte[])} reads them). An absent key counts as 0; ADD on a value that is not 8
 * bytes long is an ERROR. Overflow wraps (two's complement).
 *
 * <h2>Compare-and-set</h2>
 * An empty {@code expected} means "the key must not exist". Otherwise the swap happens when the
 * current value equals {@code expected} byte for byte. The response carries the value after the
 * call: {@code desired} when it swapped, else the current value, or NOT_FOUND when the key does
 * not exist (and {@code expected} was not empty).
 *
 * <h2>What closes a connection</h2>
 * Wrong magic, a version the server does not speak, a missing or wrong proof, a LENGTH outside
 * [5, MAX_FRAME], a frame cut short, an unknown OP or STATUS, a body that does not parse exactly
 * (short, trailing bytes, a key that is empty, too long or not UTF-8, a value too long). The
 * server closes that connection only and keeps serving the others.
 */
public final class StoreProtocol {
    private StoreProtocol() {
    }

    /** "JCCL" in ASCII. */
    public static final int MAGIC = 0x4A43434C;
    /** The protocol version this code speaks. */
    public static final short VERSION = 1;
    /** WELCOME flag: the server requires a token proof. */
    public static final short FLAG_AUTH = 0x0001;
    /** Length of the HELLO and of the WELCOME without nonce. */
    public static final int HELLO_BYTES = 8;
    /** Length of the nonce and of the proof. */
    public static final int NONCE_BYTES = 32;
    /** AUTH_RESULT values. */
    public static final byte AUTH_OK = 0, AUTH_REJECTED = 1;
    /** Appended to the nonce before the HMAC, so the proof is bound to this protocol. */
    static final byte[] AUTH_CONTEXT = "jccl-store-auth-v1".getBytes(StandardCharsets.US_ASCII);

    // Frame header offsets.
    /** Offset of LENGTH. */
    public static final int OFF_LENGTH = 0;
    /** Offset of the request id. */
    public static final int OFF_ID = 4;
    /** Offset of OP (request) or STATUS (response). */
    public static final int OFF_OP = 8;
    /** Offset of the body. */
    public static final int OFF_BODY = 9;
    /** Smallest LENGTH: id + op. */
    public static final int MIN_LENGTH = OFF_BODY - OFF_ID;
    /** Largest LENGTH: a CMP_SET with a longest key and two largest values, plus headers. */
    public static final int MAX_FRAME = MIN_LENGTH + 2 + Store.MAX_KEY_BYTES + 2 * (4 + Store.MAX_VALUE_BYTES);
    /** Bodies up to this size are read into an exactly sized array; larger ones grow as bytes arrive. */
    static final int EXACT_READ_LIMIT = 1 << 20;
    /** Most keys in one WAIT. */
    public static final int MAX_WAIT_KEYS = 1 << 16;

    // Opcodes.
    public static final byte OP_SET = 1;
    public static final byte OP_GET = 2;
    public static final byte OP_TRY_GET = 3;
    public static final byte OP_ADD = 4;
    public static final byte OP_CMP_SET = 5;
    public static final byte OP_DELETE = 6;
    public static final byte OP_WAIT = 7;
    public static final byte OP_NUM_KEYS = 8;
    /** A rank's heartbeat (see the class description). */
    public static final byte OP_HEARTBEAT = 9;

    /** HEARTBEAT flag: the rank leaves cleanly; its connection is no longer watched. */
    public static final int HB_LEAVING = 1;
    /** HEARTBEAT flag: this rank's process hosts the store server. */
    public static final int HB_HOSTS_SERVER = 2;
    /** Most ranks in one list of a heartbeat answer (and most ranks the server tracks per scope). */
    public static final int MAX_HEARTBEAT_RANKS = 1 << 20;

    // Statuses.
    public static final byte ST_OK = 0;
    public static final byte ST_NOT_FOUND = 1;
    public static final byte ST_TIMEOUT = 2;
    public static final byte ST_ERROR = 3;

    /** Name of an opcode for messages. */
    static String opName(int op) {
        return switch (op) {
            case OP_SET -> "SET";
            case OP_GET -> "GET";
            case OP_TRY_GET -> "TRY_GET";
            case OP_ADD -> "ADD";
            case OP_CMP_SET -> "CMP_SET";
            case OP_DELETE -> "DELETE";
            case OP_WAIT -> "WAIT";
            case OP_NUM_KEYS -> "NUM_KEYS";
            case OP_HEARTBEAT -> "HEARTBEAT";
            default -> "op " + op;
        };
    }

    /**
     * A parsed heartbeat answer.
     *
     * @param epoch    the scope's state number
     * @param hasState whether hostRank, dead and left are filled (the epoch changed)
     * @param hostRank the rank that hosts the server, or -1
     * @param dead     ranks declared dead, with the reason
     * @param left     ranks that left cleanly
     * @param silentMs live ranks unheard for more than two intervals, with the milliseconds
     */
    record HeartbeatReply(long epoch, boolean hasState, int hostRank, java.util.Map<Integer, String> dead,
                          java.util.Set<Integer> left, java.util.Map<Integer, Long> silentMs) {

        /** Parses an OK body. */
        static HeartbeatReply parse(BodyReader r) throws ProtocolException {
            long epoch = r.readLong("epoch");
            int has = r.readByte("has state");
            if (has > 1) {
                throw new ProtocolException("heartbeat 'has state' is " + has + ", not 0 or 1");
            }
            int host = -1;
            java.util.Map<Integer, String> dead = new java.util.TreeMap<>();
            java.util.Set<Integer> left = new java.util.TreeSet<>();
            if (has == 1) {
                host = r.readInt("host rank");
                if (host < -1) {
                    throw new ProtocolException("heartbeat host rank " + host + " is below -1");
                }
                int nd = count(r, "dead count");
                for (int i = 0; i < nd; i++) {
                    dead.put(rank(r), r.readMessage());
                }
                int nl = count(r, "left count");
                for (int i = 0; i < nl; i++) {
                    left.add(rank(r));
                }
            }
            int ns = count(r, "silent count");
            java.util.Map<Integer, Long> silent = new java.util.TreeMap<>();
            for (int i = 0; i < ns; i++) {
                int rank = rank(r);
                long ms = r.readLong("silent ms");
                if (ms < 0) {
                    throw new ProtocolException("silent time " + ms + " ms is negative");
                }
                silent.put(rank, ms);
            }
            r.end();
            return new HeartbeatReply(epoch, has == 1, host, dead, left, silent);
        }

        private static int count(BodyReader r, String what) throws ProtocolException {
            int n = r.readInt(what);
            if (n < 0 || n > MAX_HEARTBEAT_RANKS) {
                throw new ProtocolException(what + " " + Integer.toUnsignedString(n) + " is over " + MAX_HEARTBEAT_RANKS);
            }
            return n;
        }

        private static int rank(BodyReader r) throws ProtocolException {
            int rank = r.readInt("rank");
            if (rank < 0) {
                throw new ProtocolException("rank " + Integer.toUnsignedString(rank) + " is over 2^31-1");
            }
            return rank;
        }
    }

    /** The 8-byte little-endian form of a counter. */
    public static byte[] encodeCounter(long value) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(value).array();
    }

    /** Reads an 8-byte little-endian counter. */
    public static long decodeCounter(byte[] value) {
        if (value.length != 8) {
            throw new IllegalArgumentException("a counter value is 8 bytes, this one has " + value.length);
        }
        return ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    /** The HMAC proof of knowing {@code token} for {@code nonce}. */
    static byte[] proof(String token, byte[] nonce) {
        return hmac(token, nonce, AUTH_CONTEXT);
    }

    /**
     * HMAC-SHA256 keyed with the UTF-8 {@code token} over the concatenation of {@code parts}: the
     * proof of the store's handshake, shared with the host engine's TCP transport (which binds
     * its own context string, so a proof of one protocol is never valid in the other).
     */
    public static byte[] hmac(String token, byte[]... parts) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            for (byte[] p : parts) {
                mac.update(p);
            }
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JDK", e);
        }
    }

    /** Constant-time comparison of a received proof with the expected one. */
    public static boolean proofEquals(byte[] expected, byte[] received) {
        return MessageDigest.isEqual(expected, received);
    }

    /** Constant-time comparison of a received proof. */
    static boolean proofMatches(String token, byte[] nonce, byte[] received) {
        return MessageDigest.isEqual(proof(token, nonce), received);
    }

    /** Checks a key and returns its UTF-8 bytes. */
    static byte[] keyBytes(String key) {
        if (key == null) {
            throw new IllegalArgumentException("key is null");
        }
        byte[] b = key.getBytes(StandardCharsets.UTF_8);
        if (b.length == 0) {
            throw new IllegalArgumentException("key is empty");
        }
        if (b.length > Store.MAX_KEY_BYTES) {
            throw new IllegalArgumentException("key is " + b.length + " bytes in UTF-8; the limit is "
                    + Store.MAX_KEY_BYTES + " (key starts with '" + key.substring(0, Math.min(40, key.length())) + "')");
        }
        return b;
    }

    /** Checks a value. */
    static byte[] checkValue(byte[] value, String what) {
        if (value == null) {
            throw new IllegalArgumentException(what + " is null");
        }
        if (value.length > Store.MAX_VALUE_BYTES) {
            throw new IllegalArgumentException(what + " is " + value.length + " bytes; the limit is "
                    + Store.MAX_VALUE_BYTES + " (64 MiB)");
        }
        return value;
    }

    /** Builds one frame: header (LENGTH, id, op/status) then body. */
    static final class FrameWriter {
        private final ByteArrayOutputStream out;

        FrameWriter(int id, byte opOrStatus, int bodyHint) {
            out = new ByteArrayOutputStream(OFF_BODY + Math.max(16, bodyHint));
            writeInt(0); // LENGTH, patched in toByteArray
            writeInt(id);
            out.write(opOrStatus);
        }

        FrameWriter writeInt(int v) {
            out.write(v >>> 24);
            out.write(v >>> 16);
            out.write(v >>> 8);
            out.write(v);
            return this;
        }

        FrameWriter writeLong(long v) {
            writeInt((int) (v >>> 32));
            return writeInt((int) v);
        }

        FrameWriter writeByte(int v) {
            out.write(v);
            return this;
        }

        FrameWriter writeKey(byte[] utf8) {
            out.write(utf8.length >>> 8);
            out.write(utf8.length);
            out.write(utf8, 0, utf8.length);
            return this;
        }

        FrameWriter writeBytes(byte[] value) {
            writeInt(value.length);
            out.write(value, 0, value.length);
            return this;
        }

        FrameWriter writeMessage(String message) {
            byte[] b = message.getBytes(StandardCharsets.UTF_8);
            int n = Math.min(b.length, 0xFFFF);
            out.write(n >>> 8);
            out.write(n);
            out.write(b, 0, n);
            return this;
        }

        byte[] toByteArray() {
            byte[] b = out.toByteArray();
            int len = b.length - OFF_ID;
            b[0] = (byte) (len >>> 24);
            b[1] = (byte) (len >>> 16);
            b[2] = (byte) (len >>> 8);
            b[3] = (byte) len;
            return b;
        }
    }

    /** A body that does not follow the protocol. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }

    /** A received frame: id, op or status, and the body to parse. */
    record Frame(int id, byte code, byte[] payload) {
        /** A reader over the body. */
        BodyReader body() {
            return new BodyReader(payload);
        }
    }

    /**
     * Reads one frame. Returns null on a clean end of stream before the first byte of a frame;
     * throws {@link EOFException} when the stream ends inside a frame and {@link ProtocolException}
     * when LENGTH is out of bounds. The body is read as it arrives, so a LENGTH that lies costs
     * no more memory than the bytes actually sent.
     */
    static Frame readFrame(DataInputStream in) throws IOException {
        int b0 = in.read();
        if (b0 < 0) {
            return null;
        }
        return readFrameRest(b0, in);
    }

    /** {@link #readFrame} once the first byte of LENGTH has been read. */
    static Frame readFrameRest(int b0, DataInputStream in) throws IOException {
        int len = (b0 << 24) | (in.readUnsignedByte() << 16) | (in.readUnsignedByte() << 8) | in.readUnsignedByte();
        if (len < MIN_LENGTH || len > MAX_FRAME) {
            throw new ProtocolException("frame length " + Integer.toUnsignedString(len) + " is outside [" + MIN_LENGTH
                    + ", " + MAX_FRAME + "]");
        }
        int id = in.readInt();
        byte code = in.readByte();
        int bodyLen = len - MIN_LENGTH;
        byte[] body;
        if (bodyLen <= EXACT_READ_LIMIT) {
            body = new byte[bodyLen];
            in.readFully(body);
        } else {
            // Large claims: grow with what actually arrives.
            body = in.readNBytes(bodyLen);
            if (body.length != bodyLen) {
                throw new EOFException("frame cut short: " + body.length + " of " + bodyLen + " body bytes arrived");
            }
        }
        return new Frame(id, code, body);
    }

    /** Strict parser of a frame body: every read is bounds-checked, {@link #end()} checks nothing is left. */
    static final class BodyReader {
        private final byte[] b;
        private int pos;

        BodyReader(byte[] b) {
            this.b = b;
        }

        private void need(int n, String what) throws ProtocolException {
            if (b.length - pos < n) {
                throw new ProtocolException("body too short for " + what + " (needs " + n + " more bytes, has "
                        + (b.length - pos) + ")");
            }
        }

        int readInt(String what) throws ProtocolException {
            need(4, what);
            int v = ((b[pos] & 0xFF) << 24) | ((b[pos + 1] & 0xFF) << 16) | ((b[pos + 2] & 0xFF) << 8) | (b[pos + 3] & 0xFF);
            pos += 4;
            return v;
        }

        long readLong(String what) throws ProtocolException {
            long hi = readInt(what) & 0xFFFFFFFFL;
            long lo = readInt(what) & 0xFFFFFFFFL;
            return (hi << 32) | lo;
        }

        int readByte(String what) throws ProtocolException {
            need(1, what);
            return b[pos++] & 0xFF;
        }

        String readKey() throws ProtocolException {
            need(2, "key length");
            int n = ((b[pos] & 0xFF) << 8) | (b[pos + 1] & 0xFF);
            pos += 2;
            if (n == 0 || n > Store.MAX_KEY_BYTES) {
                throw new ProtocolException("key length " + n + " is outside [1, " + Store.MAX_KEY_BYTES + "]");
            }
            need(n, "key");
            String key = decodeUtf8(b, pos, n);
            pos += n;
            return key;
        }

        byte[] readBytes(String what) throws ProtocolException {
            int n = readInt(what + " length");
            if (n < 0 || n > Store.MAX_VALUE_BYTES) {
                throw new ProtocolException(what + " length " + Integer.toUnsignedString(n) + " is over the limit of "
                        + Store.MAX_VALUE_BYTES);
            }
            need(n, what);
            byte[] v = java.util.Arrays.copyOfRange(b, pos, pos + n);
            pos += n;
            return v;
        }

        String readMessage() throws ProtocolException {
            need(2, "message length");
            int n = ((b[pos] & 0xFF) << 8) | (b[pos + 1] & 0xFF);
            pos += 2;
            need(n, "message");
            String s = new String(b, pos, n, StandardCharsets.UTF_8);
            pos += n;
            return s;
        }

        List<String> readKeys() throws ProtocolException {
            int n = readInt("key count");
            if (n < 1 || n > MAX_WAIT_KEYS) {
                throw new ProtocolException("key count " + Integer.toUnsignedString(n) + " is outside [1, " + MAX_WAIT_KEYS + "]");
            }
            List<String> keys = new ArrayList<>(Math.min(n, 1024));
            for (int i = 0; i < n; i++) {
                keys.add(readKey());
            }
            return keys;
        }

        void end() throws ProtocolException {
            if (pos != b.length) {
                throw new ProtocolException((b.length - pos) + " unexpected bytes after the body");
            }
        }
    }

    private static String decodeUtf8(byte[] b, int off, int len) throws ProtocolException {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(b, off, len))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new ProtocolException("key is not well-formed UTF-8");
        }
    }

    /** Clamps a timeout to whole milliseconds for the wire ({@code null} or negative: 0). */
    static long millis(java.time.Duration timeout) {
        if (timeout == null || timeout.isNegative()) {
            return 0;
        }
        try {
            long ms = timeout.toMillis();
            if (ms == 0 && !timeout.isZero()) {
                return 1;
            }
            return ms;
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }
}
