package org.jccl.internal;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Every {@code JCCL_*} setting the library reads, in one list, and the one way to read them: a
 * system property wins over the environment variable, so that a JVM can configure jccl for itself
 * ({@code -Djccl.trace.dir=/tmp/t} or {@code System.setProperty("jccl.algo", "ring")} before the
 * communicator is created) where it cannot change its environment. The property of {@code
 * JCCL_TRACE_DIR} is {@code jccl.trace.dir}: lower case, dots for underscores.
 * docs/ENVIRONMENT.md documents each; {@code SettingsDocTest} keeps the two lists equal.
 */
public final class Settings {
    /** Every variable the library reads (launchers also set the job's variables for the ranks). */
    public static final List<String> ALL = List.of(
            // the job: rank, size, store (launchers and EnvDiscovery)
            "JCCL_RANK", "JCCL_WORLD_SIZE", "JCCL_LOCAL_RANK", "JCCL_LOCAL_WORLD_SIZE", "JCCL_STORE", "JCCL_JOB_ID",
            "JCCL_TOKEN", "JCCL_TIMEOUT", "JCCL_HEARTBEAT", "JCCL_BACKEND",
            // diagnostics
            "JCCL_DEBUG", "JCCL_TRACE_DIR", "JCCL_TRACE_BUFFER", "JCCL_CHECK",
            // the host engine
            "JCCL_TRANSPORT", "JCCL_HOST_ID", "JCCL_ALGO", "JCCL_ONESHOT_MAX_BYTES", "JCCL_SHM_SLOT_BYTES",
            "JCCL_SHM_SLOTS", "JCCL_SOCKET_IFNAME", "JCCL_SOCKETS_PER_PEER", "JCCL_TCP_CHUNK_BYTES",
            "JCCL_TCP_SPIN_US",
            // native libraries and backends
            "JCCL_NCCL_LIBRARY", "JCCL_NCCL_NONBLOCKING", "JCCL_CUDA_LIBRARY", "JCCL_MPI_LIBRARY",
            "JCCL_MPI_BLOCKING");

    private Settings() {
    }

    /** The system property that overrides {@code variable}: JCCL_TRACE_DIR -> jccl.trace.dir. */
    public static String property(String variable) {
        return variable.toLowerCase(Locale.ROOT).replace('_', '.');
    }

    /** The value of {@code variable}: its system property, else the environment; null when neither is set. */
    public static String get(String variable) {
        String p = System.getProperty(property(variable));
        return p != null ? p : System.getenv(variable);
    }

    /**
     * The process environment with every setting given as a system property in its place: what
     * readers that take a map of variables (EnvDiscovery, TcpConfig) are given.
     */
    public static Map<String, String> environment() {
        Map<String, String> env = System.getenv();
        Map<String, String> out = null;
        for (String v : ALL) {
            String p = System.getProperty(property(v));
            if (p != null) {
                if (out == null) {
                    out = new HashMap<>(env);
                }
                out.put(v, p);
            }
        }
        return out != null ? java.util.Collections.unmodifiableMap(out) : env;
    }
}
