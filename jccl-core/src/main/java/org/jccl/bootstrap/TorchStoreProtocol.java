package org.jccl.bootstrap;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The wire format of PyTorch's c10d {@code TCPStore}, which {@link TorchStore} (a client of a torch
 * store) and {@link TorchStoreServer} (a store torch clients connect to) speak. Every integer is in
 * the x86-64 / aarch64 host order torch writes it in: <b>little-endian</b>. There are no frame
 * headers: a request is one op byte and its fields, a response is its fields alone, and a
 * connection carries one request at a time (a torch client holds a lock around each).
 *
 * <h2>Generations</h2>
 * Torch 1.x clients ({@link Generation#TORCH_1}, e.g. Debian's 1.13.1) send requests from the
 * first byte. Torch 2.x clients ({@link Generation#TORCH_2}; 2.5 and later) open every connection
 * with VALIDATE and PING, and number the ops one higher:
 * <pre>
 *  op             1.x   2.x   request after the op byte                 response
 *  VALIDATE        -     0    u32 magic 0x3C85F7CE                      (none)
 *  SET             0     1    str key, vec value                        (none)
 *  COMPARE_SET     1     2    str key, vec expected, vec desired        vec value (see below)
 *  GET             2     3    str key                                   vec value (empty when absent)
 *  ADD             3     4    str key, i64 delta                        i64 new value
 *  CHECK           4     5    u64 n, n x str key                        u8 READY 0 / NOT_READY 1
 *  WAIT            5     6    u64 n, n x str key                        u8 STOP_WAITING 0, once every key exists
 *  GETNUMKEYS      6     7    -                                         i64
 *  WATCH_KEY       7     -    str key                                   (1.x callbacks: not served here)
 *  DELETE_KEY      8     8    str key                                   i64 0 or 1
 *  APPEND          -     9    str key, vec value                        (none)
 *  MULTI_GET       -    10    u64 n, n x str key                        n x vec
 *  MULTI_SET       -    11    i64 n, n x (str key, vec value)           (none)
 *  CANCEL_WAIT     -    12    -                                         u8 WAIT_CANCELED 1 (after a STOP_WAITING 0
 *                                                                        already on its way, if any)
 *  PING            -    13    u32 nonce                                 u32 the same nonce
 *  LIST_KEYS       -    17    -                                         i64 n, n x str key
 *  BARRIER         -    18    str key, i64 world size                   u8 STOP_WAITING 0, once the key's
 *                                                                        counter (ADDed 1 by each) reaches it
 *
 *  str = u64 length + bytes (a key; torch does not require UTF-8)
 *  vec = u64 length + bytes (a value)
 *
 *  first bytes of a 2.x connection:  00 | CE F7 85 3C  (VALIDATE)   0D | u32 nonce  (PING; the
 *  client reads the echo before anything else)
 * </pre>
 * A 1.x SET also starts with byte 0, but its next 8 bytes are a key length: their low 4 bytes are
 * never the magic for a key shorter than 1 GB, so a server tells the generations apart by the
 * first five bytes ({@link #isValidate}). The two generations cannot talk to each other otherwise
 * (the op numbers are shifted).
 *
 * <h2>Semantics both ends follow</h2>
 * <ul>
 *   <li>Torch clients put {@value #KEY_PREFIX} before every key of the user (except the {@value
 *       #INIT_KEY} counter every client ADDs 1 to when it connects with a world size): {@code
 *       store.set("a", ...)} is key {@code "/a"} on the wire. {@link TorchStore} does the same,
 *       so both see each other's keys.</li>
 *   <li>ADD keeps its counter as ASCII decimal ({@code "5"}); a GET of it returns those digits.</li>
 *   <li>COMPARE_SET on an absent key: with an empty {@code expected} it stores {@code desired} and
 *       answers it; with another {@code expected} it stores nothing and answers {@code expected}.
 *       On a present key it stores {@code desired} when the value equals {@code expected}, and
 *       answers the value after the call.</li>
 *   <li>A client's get is WAIT then GET. On its timeout a 2.x client sends CANCEL_WAIT and reads up
 *       to WAIT_CANCELED; a 1.x client has no way to cancel, so its connection is of no further use
 *       after a timed-out wait (a late STOP_WAITING would be read as the next answer).</li>
 * </ul>
 */
public final class TorchStoreProtocol {
    private TorchStoreProtocol() {
    }

    /** The two incompatible generations of the protocol. */
    public enum Generation {
        /** Torch 1.x: no handshake, SET is op 0. */
        TORCH_1,
        /** Torch 2.x (2.5 and later): VALIDATE and PING first, SET is op 1. */
        TORCH_2
    }

    /** VALIDATE's magic number. */
    public static final int VALIDATE_MAGIC = 0x3C85F7CE;
    /** What torch clients put before each key of the user. */
    public static final String KEY_PREFIX = "/";
    /** The counter every torch client ADDs 1 to when it connects with a world size (no prefix). */
    public static final String INIT_KEY = "init/";

    /** CHECK's answers. */
    public static final int READY = 0, NOT_READY = 1;
    /** WAIT's and CANCEL_WAIT's answers. */
    public static final int STOP_WAITING = 0, WAIT_CANCELED = 1;

    /** Largest key this side sends or accepts (torch's libuv server takes 8 KiB). */
    public static final int MAX_KEY_BYTES = 8 << 10;
    /** Largest value this side accepts (jccl's own store limit). */
    public static final int MAX_VALUE_BYTES = Store.MAX_VALUE_BYTES;
    /** Most keys of one CHECK, WAIT or MULTI_* (torch's libuv server: 128 Ki). */
    public static final int MAX_KEYS = 128 << 10;

    /** The operations, with their numbers in each generation. */
    public enum Op {
        VALIDATE(-1, 0), SET(0, 1), COMPARE_SET(1, 2), GET(2, 3), ADD(3, 4), CHECK(4, 5), WAIT(5, 6),
        GETNUMKEYS(6, 7), WATCH_KEY(7, -1), DELETE_KEY(8, 8), APPEND(-1, 9), MULTI_GET(-1, 10), MULTI_SET(-1, 11),
        CANCEL_WAIT(-1, 12), PING(-1, 13), QUEUE_PUSH(-1, 14), QUEUE_POP(-1, 15), QUEUE_LEN(-1, 16),
        LIST_KEYS(-1, 17), BARRIER(-1, 18);

        private final int v1;
        private final int v2;

        Op(int v1, int v2) {
            this.v1 = v1;
            this.v2 = v2;
        }

        /** This op's byte in {@code g}, or -1 when {@code g} has no such op. */
        public int code(Generation g) {
            return g == Generation.TORCH_1 ? v1 : v2;
        }

        /** The op {@code code} names in {@code g}, or null. */
        public static Op of(Generation g, int code) {
            for (Op o : values()) {
                if (o.code(g) == code) {
                    return o;
                }
            }
            return null;
        }
    }

    /** Whether the five bytes at {@code b} are a 2.x VALIDATE (op 0 and the magic, little-endian). */
    public static boolean isValidate(byte[] b) {
        return b.length >= 5 && b[0] == 0 && u32(b, 1) == VALIDATE_MAGIC;
    }

    // ------------------------------------------------------------------ encoding

    /** Appends a u64 / i64, little-endian. */
    static void putLong(OutputStream out, long v) throws IOException {
        byte[] b = new byte[8];
        for (int i = 0; i < 8; i++) {
            b[i] = (byte) (v >>> (8 * i));
        }
        out.write(b);
    }

    /** Appends a u32, little-endian. */
    static void putInt(OutputStream out, int v) throws IOException {
        out.write(new byte[] {(byte) v, (byte) (v >>> 8), (byte) (v >>> 16), (byte) (v >>> 24)});
    }

    /** Appends a str or a vec: u64 length and the bytes. */
    static void putBytes(OutputStream out, byte[] b) throws IOException {
        putLong(out, b.length);
        out.write(b);
    }

    /** Appends a key (UTF-8). */
    static void putKey(OutputStream out, String key) throws IOException {
        putBytes(out, key.getBytes(StandardCharsets.UTF_8));
    }

    /** Appends a key list: u64 count, then each key. */
    static void putKeys(OutputStream out, java.util.List<String> keys) throws IOException {
        putLong(out, keys.size());
        for (String k : keys) {
            putKey(out, k);
        }
    }

    /** Reads one byte; EOFException at the end of the stream. */
    static int readU8(InputStream in) throws IOException {
        int b = in.read();
        if (b < 0) {
            throw new EOFException("the connection closed");
        }
        return b;
    }

    /** Reads exactly {@code n} bytes. */
    static byte[] readExactly(InputStream in, int n) throws IOException {
        byte[] b = in.readNBytes(n);
        if (b.length != n) {
            throw new EOFException("the connection closed after " + b.length + " of " + n + " bytes");
        }
        return b;
    }

    /** Reads a little-endian u64 / i64. */
    static long readLong(InputStream in) throws IOException {
        byte[] b = readExactly(in, 8);
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (b[i] & 0xff);
        }
        return v;
    }

    /** Reads a little-endian u32. */
    static int readInt(InputStream in) throws IOException {
        return u32(readExactly(in, 4), 0);
    }

    /** Reads a str or vec of at most {@code max} bytes; a longer one is a protocol error. */
    static byte[] readBytes(InputStream in, int max, String what) throws IOException {
        long n = readLong(in);
        if (n < 0 || n > max) {
            throw new IOException(what + " of " + Long.toUnsignedString(n) + " bytes (at most " + max + " taken)");
        }
        return readExactly(in, (int) n);
    }

    /** Reads a key. */
    static String readKey(InputStream in) throws IOException {
        return new String(readBytes(in, MAX_KEY_BYTES, "a key"), StandardCharsets.UTF_8);
    }

    /** Reads a u64 count of keys (CHECK, WAIT, MULTI_*) of at most {@link #MAX_KEYS}. */
    static int readCount(InputStream in) throws IOException {
        long n = readLong(in);
        if (n < 0 || n > MAX_KEYS) {
            throw new IOException("a list of " + Long.toUnsignedString(n) + " keys (at most " + MAX_KEYS + " taken)");
        }
        return (int) n;
    }

    private static int u32(byte[] b, int off) {
        return (b[off] & 0xff) | (b[off + 1] & 0xff) << 8 | (b[off + 2] & 0xff) << 16 | (b[off + 3] & 0xff) << 24;
    }

    /** ADD's counter value: ASCII decimal, as torch keeps it ({@code std::stoll} of the old value). */
    static long parseCounter(byte[] value) {
        String s = new String(value, StandardCharsets.US_ASCII).strip();
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("ADD on a key whose value is not a decimal number (" + value.length + " bytes)");
        }
    }

    /** ADD's counter as stored. */
    static byte[] formatCounter(long v) {
        return Long.toString(v).getBytes(StandardCharsets.US_ASCII);
    }
}
