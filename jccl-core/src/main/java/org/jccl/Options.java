package org.jccl;

import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.jccl.bootstrap.Store;

/**
 * How to form a communicator: who this rank is, where the rendezvous store is, and the limits.
 * Immutable; every {@code with}-style method returns a copy. {@link #fromEnv()} reads the
 * {@code JCCL_*}, torchrun, Slurm and Open MPI variables.
 *
 * @param rank          this rank, {@code [0, size)}
 * @param size          number of ranks
 * @param localRank     rank among the ranks on this host
 * @param localSize     ranks on this host
 * @param storeHost     host of the rendezvous store (rank 0 serves it there unless a launcher does)
 * @param storePort     port of the store
 * @param jobId         job id, unique among jobs that share a host (names shm files, store keys)
 * @param token         job token every store and transport connection must prove; null for none
 * @param timeout       deadline of every wait
 * @param backend       backend name ("host", "nccl", "mpi"), or null to choose from the device
 * @param device        the device a GPU communicator is bound to, or null for host memory
 * @param store         an already connected store to use instead of storeHost/storePort, or null
 * @param heartbeat     interval of this rank's heartbeats through the store ({@code JCCL_HEARTBEAT});
 *                      {@link Duration#ZERO} turns them off (see {@link org.jccl.spi.Liveness})
 * @param settings      per-communicator {@code JCCL_*} settings ({@link #withSetting}), which win over
 *                      system properties and the environment for this communicator and the ones
 *                      split or shrunk from it
 */
public record Options(int rank, int size, int localRank, int localSize, String storeHost, int storePort,
                      String jobId, String token, Duration timeout, String backend, Device device, Store store,
                      Duration heartbeat, Map<String, String> settings) {

    /** Default deadline: 10 minutes, as PyTorch's for NCCL. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(10);

    /** Default heartbeat interval: 1 second. */
    public static final Duration DEFAULT_HEARTBEAT = Duration.ofSeconds(1);

    /** Shortest heartbeat interval accepted (shorter ones only load the store). */
    public static final Duration MIN_HEARTBEAT = Duration.ofMillis(10);

    /** The options without a heartbeat setting: heartbeats every {@link #DEFAULT_HEARTBEAT}. */
    public Options(int rank, int size, int localRank, int localSize, String storeHost, int storePort,
                   String jobId, String token, Duration timeout, String backend, Device device, Store store) {
        this(rank, size, localRank, localSize, storeHost, storePort, jobId, token, timeout, backend, device, store,
                DEFAULT_HEARTBEAT);
    }

    /** The options without communicator settings (system properties and the environment apply). */
    public Options(int rank, int size, int localRank, int localSize, String storeHost, int storePort,
                   String jobId, String token, Duration timeout, String backend, Device device, Store store,
                   Duration heartbeat) {
        this(rank, size, localRank, localSize, storeHost, storePort, jobId, token, timeout, backend, device, store,
                heartbeat, Map.of());
    }

    /** Validates the values. */
    public Options {
        if (size < 1) {
            throw new IllegalArgumentException("size is " + size + ": a communicator needs at least one rank");
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank is " + rank + " but size is " + size + ": rank must be in [0, size)");
        }
        if (localSize < 1 || localRank < 0 || localRank >= localSize) {
            throw new IllegalArgumentException("localRank " + localRank + " / localSize " + localSize
                    + " are inconsistent: need 0 <= localRank < localSize");
        }
        if (storePort < 0 || storePort > 65535) {
            throw new IllegalArgumentException("storePort is " + storePort + ": use a TCP port 0..65535");
        }
        Objects.requireNonNull(jobId, "jobId");
        if (!jobId.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new IllegalArgumentException("jobId '" + jobId + "' must be 1..64 of [A-Za-z0-9._-] (it names files)");
        }
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout is " + timeout + ": give a positive duration");
        }
        Objects.requireNonNull(heartbeat, "heartbeat (Duration.ZERO turns heartbeats off)");
        if (heartbeat.isNegative() || !heartbeat.isZero() && heartbeat.compareTo(MIN_HEARTBEAT) < 0) {
            throw new IllegalArgumentException("heartbeat is " + heartbeat + ": give an interval of at least "
                    + MIN_HEARTBEAT.toMillis() + " ms (e.g. Duration.ofSeconds(1)), or Duration.ZERO to turn heartbeats off");
        }
        Objects.requireNonNull(settings, "settings (Map.of() for none)");
        Map<String, String> sorted = new TreeMap<>();
        for (Map.Entry<String, String> e : settings.entrySet()) {
            org.jccl.internal.Settings.checkCommunicatorSetting(e.getKey());
            if (e.getValue() == null) {
                throw new IllegalArgumentException("setting " + e.getKey() + " has a null value: give a value, or leave it out");
            }
            sorted.put(e.getKey(), e.getValue());
        }
        settings = Collections.unmodifiableMap(sorted);
    }

    /** A single-rank job on loopback with defaults; change fields with the {@code with} methods. */
    public static Options of(int rank, int size) {
        return new Options(rank, size, rank, size, "127.0.0.1", 29500, "jccl", null, DEFAULT_TIMEOUT, null, null, null,
                DEFAULT_HEARTBEAT, Map.of());
    }

    /** Options from the environment: JCCL_*, then torchrun, Slurm, Open MPI variables. */
    public static Options fromEnv() {
        return org.jccl.bootstrap.EnvDiscovery.discover(org.jccl.internal.Settings.environment());
    }

    /** Copy with another rank and size (local rank/size follow when they were the global ones). */
    public Options withRank(int newRank, int newSize) {
        return new Options(newRank, newSize, localSize == size ? newRank : localRank,
                localSize == size ? newSize : localSize, storeHost, storePort, jobId, token, timeout, backend, device, store, heartbeat, settings);
    }

    /** Copy with another local rank and local size. */
    public Options withLocal(int newLocalRank, int newLocalSize) {
        return new Options(rank, size, newLocalRank, newLocalSize, storeHost, storePort, jobId, token, timeout, backend, device, store, heartbeat, settings);
    }

    /** Copy with another store address. */
    public Options withStore(String host, int port) {
        return new Options(rank, size, localRank, localSize, host, port, jobId, token, timeout, backend, device, store, heartbeat, settings);
    }

    /** Copy that uses an already connected store (e.g. shared by threads-as-ranks). */
    public Options withStore(Store connected) {
        return new Options(rank, size, localRank, localSize, storeHost, storePort, jobId, token, timeout, backend, device, connected, heartbeat, settings);
    }

    /** Copy with another job id. */
    public Options withJobId(String id) {
        return new Options(rank, size, localRank, localSize, storeHost, storePort, id, token, timeout, backend, device, store, heartbeat, settings);
    }

    /** Copy with another job token (null for none). */
    public Options withToken(String t) {
        return new Options(rank, size, localRank, localSize, storeHost, storePort, jobId, t, timeout, backend, device, store, heartbeat, settings);
    }

    /** Copy with another deadline. */
    public Options withTimeout(Duration t) {
        return new Options(rank, size, localRank, localSize, storeHost, storePort, jobId, token, t, backend, device, store, heartbeat, settings);
    }

    /** Copy with another backend name (null: choose automatically). */
    public Options withBackend(String name) {
        return new Options(rank, size, localRank, localSize, storeHost, storePort, jobId, token, timeout, name, device, store, heartbeat, settings);
    }

    /** Copy bound to a device (GPU communicators). */
    public Options withDevice(Device d) {
        return new Options(rank, size, localRank, localSize, storeHost, storePort, jobId, token, timeout, backend, d, store, heartbeat, settings);
    }

    /**
     * Copy with another heartbeat interval ({@link Duration#ZERO}: no heartbeats). A rank that
     * sends heartbeats is declared dead by the store as soon as its process is gone, and every
     * survivor's collectives then fail naming it (see {@link org.jccl.spi.Liveness}).
     */
    public Options withHeartbeat(Duration interval) {
        return new Options(rank, size, localRank, localSize, storeHost, storePort, jobId, token, timeout, backend, device,
                store, interval, settings);
    }

    /**
     * Copy with a per-communicator setting: {@code variable} is a {@code JCCL_*} name that applies
     * to one communicator (docs/ENVIRONMENT.md lists them: JCCL_ALGO, JCCL_TRANSPORT,
     * JCCL_TRACE_DIR, JCCL_SOCKET_IFNAME, ...) and {@code value} what the environment variable would
     * hold. It wins over the system property and the environment, for this communicator and the
     * ones split or shrunk from it; a bad value is reported when the communicator is created, as
     * for the environment variable. The job's variables have their own methods ({@code
     * JCCL_TIMEOUT}: {@link #withTimeout}, ...) and the per-process ones ({@code JCCL_DEBUG}, the
     * native library paths) stay in the environment: naming one here is an error saying so.
     * {@code null} removes the setting.
     */
    public Options withSetting(String variable, String value) {
        org.jccl.Checks.notNull(variable, "variable");
        org.jccl.internal.Settings.checkCommunicatorSetting(variable);
        Map<String, String> m = new TreeMap<>(settings);
        if (value == null) {
            m.remove(variable);
        } else {
            m.put(variable, value);
        }
        return new Options(rank, size, localRank, localSize, storeHost, storePort, jobId, token, timeout, backend, device,
                store, heartbeat, m);
    }

    /** True when heartbeats are on (a positive {@link #heartbeat()} interval). */
    public boolean heartbeatsOn() {
        return !heartbeat.isZero();
    }

    @Override
    public String toString() {
        return "Options[rank=" + rank + ", size=" + size + ", localRank=" + localRank + ", localSize=" + localSize
                + ", store=" + (store != null ? store : storeHost + ":" + storePort) + ", jobId=" + jobId
                + ", token=" + (token == null ? "none" : "***") + ", timeout=" + timeout + ", backend="
                + (backend == null ? "auto" : backend) + ", device=" + device + ", heartbeat="
                + (heartbeat.isZero() ? "off" : heartbeat) + (settings.isEmpty() ? "" : ", settings=" + settings) + "]";
    }
}
