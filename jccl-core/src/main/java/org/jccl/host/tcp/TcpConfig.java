package org.jccl.host.tcp;

import java.util.Locale;
import java.util.Map;

/**
 * Settings of the TCP transport, read from the environment (docs/ENVIRONMENT.md):
 *
 * <ul>
 *   <li>{@code JCCL_SOCKET_IFNAME}: the interface(s) to listen on (see {@link NetInterfaces});
 *       unset: the interface of the route to the store host.</li>
 *   <li>{@code JCCL_SOCKETS_PER_PEER}: sockets a collective uses per peer (1..16); large
 *       messages are cut into chunks spread over them.</li>
 *   <li>{@code JCCL_TCP_CHUNK_BYTES}: the largest frame payload (pipelining unit; 4 KiB..16 MiB).</li>
 *   <li>{@code JCCL_TCP_SPIN_US}: how long a wait polls its sockets after the last byte moved
 *       before it sleeps in the selector (0..100000 microseconds). Unset: 100000 when the ranks of
 *       this host fit its cores (polling keeps the core and the latency low, as Open MPI and NCCL
 *       do; a rank that sleeps is woken by the softirq of its peer's send on the peer's core, and
 *       where ranks share a machine the scheduler then often runs both on one core: measured with
 *       2 ranks on 2 cores, a 128 KiB all-reduce took 78-81 us with 1 ms against 40-48 us with
 *       100 ms), else 20 (a sleeping rank leaves the core to the others).</li>
 *   <li>{@code JCCL_CHECK} (or the system property {@code jccl.check}, which wins): {@code 1}
 *       adds the checks that cost a latency to calls that need no answer from a peer: every rank
 *       of a small broadcast first checks every other rank's fingerprint (ceil(log2 n) one-way
 *       latencies), so that any disagreement about it (root, count, type, or a root whose peers
 *       called another collective) fails on every rank in that call. Unset, every frame's
 *       fingerprint is still checked by its receiver, and the cases {@link org.jccl.host.tcp.algo.TreeBroadcast}
 *       lists are reported by the next collective instead.</li>
 * </ul>
 *
 * @param ifname          JCCL_SOCKET_IFNAME, or null
 * @param socketsPerPeer  sockets per peer for collectives
 * @param chunkBytes      largest frame payload
 * @param bufferBytes     bytes of each connection's send and receive staging buffer
 * @param spinNanos       polling time of a wait before it blocks in the selector; negative: by
 *                        the number of ranks on this host ({@link #spinNanos(int)})
 * @param check           JCCL_CHECK: the checks that cost a round trip are on
 */
public record TcpConfig(String ifname, int socketsPerPeer, int chunkBytes, int bufferBytes, long spinNanos,
                        boolean check) {

    /** Validates the values. */
    public TcpConfig {
        if (socketsPerPeer < 1 || socketsPerPeer > 16) {
            throw new IllegalArgumentException("socketsPerPeer is " + socketsPerPeer + ": use 1..16");
        }
        if (chunkBytes < 4096 || chunkBytes > 16 << 20) {
            throw new IllegalArgumentException("chunkBytes is " + chunkBytes + ": use 4 KiB..16 MiB");
        }
        if (bufferBytes < 4096) {
            throw new IllegalArgumentException("bufferBytes is " + bufferBytes + ": use at least 4 KiB");
        }
    }

    /** The defaults with nothing set. */
    public static TcpConfig defaults() {
        return fromEnv(Map.of());
    }

    /** Settings from the process environment. */
    public static TcpConfig fromEnv() {
        return fromEnv(org.jccl.internal.Settings.environment());
    }

    /** Settings from an environment map. */
    public static TcpConfig fromEnv(Map<String, String> env) {
        String ifname = env.get("JCCL_SOCKET_IFNAME");
        if (ifname != null && ifname.isBlank()) {
            ifname = null;
        }
        int socks = (int) number(env, "JCCL_SOCKETS_PER_PEER", 2, 1, 16);
        int chunk = (int) number(env, "JCCL_TCP_CHUNK_BYTES", 256 << 10, 4096, 16 << 20);
        long spinUs = number(env, "JCCL_TCP_SPIN_US", -1, 0, 100_000);
        return new TcpConfig(ifname, socks, chunk, Math.max(chunk, 64 << 10) + Frame.HEADER_BYTES,
                spinUs < 0 ? -1 : spinUs * 1000, org.jccl.internal.CheckSetting.enabled(env));
    }

    /** The polling time of a wait with {@code localRanks} ranks of the communicator on this host. */
    public long spinNanos(int localRanks) {
        if (spinNanos >= 0) {
            return spinNanos;
        }
        return localRanks <= org.jccl.internal.Affinity.cpus() ? 100_000_000 : 20_000;
    }

    /** Copy with another number of sockets per peer. */
    public TcpConfig withSocketsPerPeer(int n) {
        return new TcpConfig(ifname, n, chunkBytes, bufferBytes, spinNanos, check);
    }

    static long number(Map<String, String> env, String name, long dflt, long min, long max) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            return dflt;
        }
        try {
            long x = Long.parseLong(v.trim());
            if (x >= min && x <= max) {
                return x;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(name + "=" + v + " is invalid: give an integer in [" + min + ", " + max + "]");
    }

    /** How ranks of a communicator talk: chosen by host placement, or forced. */
    public enum Transport {
        /** Shared memory inside a host, TCP between hosts (the default). */
        AUTO,
        /** TCP between every pair of ranks, even on one host. */
        TCP,
        /** Shared memory only: an error when the ranks are on several hosts. */
        SHM;

        /**
         * The transport {@code JCCL_TRANSPORT} names ({@link org.jccl.internal.Settings}: a
         * communicator setting, the system property {@code jccl.transport}, or the environment):
         * {@code auto}, {@code tcp} or {@code shm}.
         */
        public static Transport fromEnv() {
            return parse(org.jccl.internal.Settings.get("JCCL_TRANSPORT"), "JCCL_TRANSPORT");
        }

        /** Parses a transport name; null or blank is AUTO. */
        public static Transport parse(String v, String source) {
            if (v == null || v.isBlank()) {
                return AUTO;
            }
            return switch (v.trim().toLowerCase(Locale.ROOT)) {
                case "auto" -> AUTO;
                case "tcp", "socket", "sockets" -> TCP;
                case "shm", "shared-memory" -> SHM;
                default -> throw new IllegalArgumentException(source + "=" + v
                        + " is not a transport: use auto (shared memory inside a host, TCP across hosts), "
                        + "tcp (TCP everywhere) or shm (one host only)");
            };
        }
    }
}
