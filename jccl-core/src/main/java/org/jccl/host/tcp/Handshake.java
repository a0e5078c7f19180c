package org.jccl.host.tcp;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import org.jccl.bootstrap.StoreProtocol;

/**
 * Connection setup of the TCP transport. Every byte that crosses the socket before the first
 * frame is described here; integers are big-endian. The connector is the higher rank (a rank
 * connects to itself for send/recv to itself); the acceptor checks who is calling and, when the
 * job has a token, that the caller knows it. The token never crosses the wire.
 *
 * <pre>
 *  acceptor -> connector, WELCOME (40 bytes)
 *  |  0 MAGIC u32 "JCTP" |  4 VERSION u16 |  6 FLAGS u16 (bit 0: a token proof is required) |
 *  |  8 NONCE [32] (fresh SecureRandom bytes)                                               |
 *
 *  connector -> acceptor, HELLO (64 bytes)
 *  |  0 MAGIC u32 |  4 VERSION u16 |  6 FLAGS u16 (bit 0: little-endian host, bit 1: has token) |
 *  |  8 COMMUNICATOR ID u64 | 16 FROM RANK u32 | 20 TO RANK u32 |
 *  | 24 SOCKET INDEX u16 (0..SOCKETS-1: collectives; SOCKETS: send/recv) | 26 SOCKETS u16 | 28 CHUNK BYTES u32 |
 *  | 32 PROOF [32] = HMAC-SHA256(key = UTF-8 token, NONCE || HELLO[0..32) || "jccl-tcp-auth-v1"), zeros without token |
 *
 *  acceptor -> connector, RESULT (1 byte): one of the {@code R_*} codes; the acceptor closes the
 *  socket after any code but {@link #R_OK}.
 * </pre>
 * The proof covers the hello, so a recorded proof cannot be replayed for another rank, socket or
 * communicator, and its context string differs from the store's, so a proof of one protocol is
 * never valid in the other.
 */
final class Handshake {
    private Handshake() {
    }

    static final int MAGIC = 0x4A435450;
    static final short VERSION = 1;
    static final int WELCOME_BYTES = 40;
    static final int HELLO_BYTES = 64;
    static final int NONCE_BYTES = 32;
    static final short F_AUTH = 1;
    static final short F_LITTLE_ENDIAN = 1, F_HAS_TOKEN = 2;
    static final byte R_OK = 0, R_AUTH = 1, R_COMM = 2, R_PEER = 3, R_VERSION = 4, R_BYTE_ORDER = 5, R_SETTINGS = 6;
    private static final byte[] CONTEXT = "jccl-tcp-auth-v1".getBytes(StandardCharsets.US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();

    /** What a connector announced. */
    record Hello(long comm, int from, int to, int index, int sockets, int chunk, boolean littleEndian, boolean hasToken,
                 byte[] signed, byte[] proof) {
    }

    static byte[] welcome(boolean auth, byte[] nonce) {
        ByteBuffer b = ByteBuffer.allocate(WELCOME_BYTES);
        b.putInt(MAGIC).putShort(VERSION).putShort(auth ? F_AUTH : 0).put(nonce);
        return b.array();
    }

    static byte[] nonce() {
        byte[] n = new byte[NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }

    /** Writes the hello (with the proof when {@code token} is set) for the nonce of the welcome. */
    static void sendHello(OutputStream out, long comm, int from, int to, int index, int sockets, int chunk,
                          String token, byte[] nonce) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(HELLO_BYTES);
        short flags = (short) ((ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN ? F_LITTLE_ENDIAN : 0)
                | (token != null ? F_HAS_TOKEN : 0));
        b.putInt(MAGIC).putShort(VERSION).putShort(flags).putLong(comm).putInt(from).putInt(to)
                .putShort((short) index).putShort((short) sockets).putInt(chunk);
        byte[] a = b.array();
        if (token != null) {
            byte[] signed = java.util.Arrays.copyOf(a, 32);
            System.arraycopy(StoreProtocol.hmac(token, nonce, signed, CONTEXT), 0, a, 32, 32);
        }
        DataOutputStream d = new DataOutputStream(out);
        d.write(a);
        d.flush();
    }

    /** Parses the {@value #HELLO_BYTES} bytes of a hello (nothing in it sizes an allocation). */
    static Hello parseHello(byte[] a) throws IOException {
        if (a.length != HELLO_BYTES) {
            throw new IOException("a hello has " + HELLO_BYTES + " bytes, not " + a.length);
        }
        ByteBuffer b = ByteBuffer.wrap(a);
        if (b.getInt() != MAGIC) {
            throw new IOException("not a jccl transport connection (wrong magic)");
        }
        short version = b.getShort();
        if (version != VERSION) {
            throw new VersionException(version);
        }
        short flags = b.getShort();
        long comm = b.getLong();
        int from = b.getInt();
        int to = b.getInt();
        int index = b.getShort() & 0xffff;
        int sockets = b.getShort() & 0xffff;
        int chunk = b.getInt();
        byte[] proof = java.util.Arrays.copyOfRange(a, 32, 64);
        return new Hello(comm, from, to, index, sockets, chunk, (flags & F_LITTLE_ENDIAN) != 0, (flags & F_HAS_TOKEN) != 0,
                java.util.Arrays.copyOf(a, 32), proof);
    }

    static boolean proofValid(String token, byte[] nonce, Hello h) {
        return StoreProtocol.proofEquals(StoreProtocol.hmac(token, nonce, h.signed(), CONTEXT), h.proof());
    }

    /** A peer speaking another protocol version. */
    static final class VersionException extends IOException {
        private static final long serialVersionUID = 1L;
        final int version;

        VersionException(int version) {
            super("transport protocol version " + version + ", this jccl speaks " + VERSION);
            this.version = version;
        }
    }

    static String describeResult(int code) {
        return switch (code) {
            case R_AUTH -> "rejected the job token: give every rank the same JCCL_TOKEN (or Options.withToken)";
            case R_COMM -> "does not know this communicator: another job listens at that address, or ranks disagree "
                    + "on the store (check JCCL_STORE / MASTER_ADDR and JCCL_JOB_ID)";
            case R_PEER -> "did not expect this connection (rank or socket index out of place): ranks disagree on the world size?";
            case R_VERSION -> "speaks another transport protocol version: run the same jccl version on every rank";
            case R_BYTE_ORDER -> "has another byte order: jccl connects hosts of one byte order only";
            case R_SETTINGS -> "uses other transport settings: give every rank the same JCCL_SOCKETS_PER_PEER and JCCL_TCP_CHUNK_BYTES";
            default -> "answered with unknown code " + code;
        };
    }
}
