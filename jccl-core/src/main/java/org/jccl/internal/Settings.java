package org.jccl.internal;

import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Every {@code JCCL_*} setting the library reads, in one list, and the one way to read them. The
 * sources, strongest first: the settings of the {@link org.jccl.Options} the communicator is being
 * created with ({@link org.jccl.Options#withSetting}, bound to the creating thread by {@link #with}
 * and inherited by the communicators it splits or shrinks into), a system property (so that a JVM
 * can configure jccl for itself: {@code -Djccl.trace.dir=/tmp/t}; the property of {@code
 * JCCL_TRACE_DIR} is {@code jccl.trace.dir}: lower case, dots for underscores), then the
 * environment variable. docs/ENVIRONMENT.md documents each, with the way to set it from code;
 * {@code SettingsDocTest} keeps the two equal.
 */
public final class Settings {

    /** Where a setting applies, which says how code sets it. */
    public enum Scope {
        /** Who the rank is and how it meets the others: a typed {@link org.jccl.Options} field. */
        JOB,
        /** How one communicator works: {@link org.jccl.Options#withSetting}, per communicator. */
        COMMUNICATOR,
        /** Read once per process (logging, native libraries): the environment or a system property. */
        PROCESS
    }

    private static final Map<String, Scope> SCOPES = scopes();

    /** Every variable the library reads (launchers also set the job's variables for the ranks). */
    public static final List<String> ALL = List.copyOf(SCOPES.keySet());

    /** The {@link org.jccl.Options} method that sets each {@link Scope#JOB} variable. */
    public static final Map<String, String> JOB_METHODS = Map.of("JCCL_RANK", "withRank", "JCCL_WORLD_SIZE", "withRank",
            "JCCL_LOCAL_RANK", "withLocal", "JCCL_LOCAL_WORLD_SIZE", "withLocal", "JCCL_STORE", "withStore",
            "JCCL_JOB_ID", "withJobId", "JCCL_TOKEN", "withToken", "JCCL_TIMEOUT", "withTimeout",
            "JCCL_HEARTBEAT", "withHeartbeat", "JCCL_BACKEND", "withBackend");

    private static final ScopedValue<Map<String, String>> BOUND = ScopedValue.newInstance();

    private Settings() {
    }

    private static Map<String, Scope> scopes() {
        Map<String, Scope> m = new LinkedHashMap<>();
        // the job: rank, size, store (launchers and EnvDiscovery)
        for (String v : List.of("JCCL_RANK", "JCCL_WORLD_SIZE", "JCCL_LOCAL_RANK", "JCCL_LOCAL_WORLD_SIZE", "JCCL_STORE",
                "JCCL_JOB_ID", "JCCL_TOKEN", "JCCL_TIMEOUT", "JCCL_HEARTBEAT", "JCCL_BACKEND")) {
            m.put(v, Scope.JOB);
        }
        // diagnostics, and the host engine
        for (String v : List.of("JCCL_TRACE_DIR", "JCCL_TRACE_BUFFER", "JCCL_CHECK", "JCCL_TRANSPORT", "JCCL_HOST_ID",
                "JCCL_ALGO", "JCCL_ONESHOT_MAX_BYTES", "JCCL_SHM_SLOT_BYTES", "JCCL_SHM_SLOTS", "JCCL_SHM_ZERO_COPY_BYTES", "JCCL_SHM_SINGLE_COPY_BYTES", "JCCL_SOCKET_IFNAME",
                "JCCL_SOCKETS_PER_PEER", "JCCL_TCP_CHUNK_BYTES", "JCCL_TCP_SPIN_US", "JCCL_STORE_SERVED", "JCCL_STORE_PROTOCOL", "JCCL_WARMUP", "JCCL_AFFINITY")) {
            m.put(v, Scope.COMMUNICATOR);
        }
        // logging and native libraries
        for (String v : List.of("JCCL_DEBUG", "JCCL_NCCL_LIBRARY", "JCCL_NCCL_NONBLOCKING", "JCCL_CUDA_LIBRARY",
                "JCCL_MPI_LIBRARY", "JCCL_MPI_BLOCKING", "JCCL_JAVA", "JCCL_AOT")) {
            m.put(v, Scope.PROCESS);
        }
        return Collections.unmodifiableMap(m);
    }

    /** The scope of {@code variable}; null when jccl does not read it. */
    public static Scope scope(String variable) {
        return SCOPES.get(variable);
    }

    /**
     * Checks that {@code variable} can be set per communicator, with an error that says how to set
     * it otherwise.
     */
    public static void checkCommunicatorSetting(String variable) {
        Scope s = SCOPES.get(variable);
        if (s == Scope.COMMUNICATOR) {
            return;
        }
        if (s == Scope.JOB) {
            throw new IllegalArgumentException(variable + " is a field of Options: use Options." + JOB_METHODS.get(variable)
                    + "(...) instead of withSetting");
        }
        if (s == Scope.PROCESS) {
            throw new IllegalArgumentException(variable + " is read once per process: set it in the environment or as the "
                    + "system property " + property(variable) + " before jccl is first used, not per communicator");
        }
        List<String> per = SCOPES.entrySet().stream().filter(e -> e.getValue() == Scope.COMMUNICATOR).map(Map.Entry::getKey)
                .toList();
        throw new IllegalArgumentException("unknown setting '" + variable + "': the settings of a communicator are " + per);
    }

    /** The system property that overrides {@code variable}: JCCL_TRACE_DIR -> jccl.trace.dir. */
    public static String property(String variable) {
        return variable.toLowerCase(Locale.ROOT).replace('_', '.');
    }

    /**
     * The value of {@code variable}: the bound communicator setting, else its system property, else
     * the environment; null when none is set.
     */
    public static String get(String variable) {
        if (BOUND.isBound()) {
            String v = BOUND.get().get(variable);
            if (v != null) {
                return v;
            }
        }
        String p = System.getProperty(property(variable));
        return p != null ? p : System.getenv(variable);
    }

    /**
     * An on/off setting's {@code value} read from {@code source}: {@code 1/true/yes/on} or {@code
     * 0/false/no/off}; null or blank is off; any other value is an error naming {@code source} and
     * what to give ({@code usage}, e.g. "1 (check) or 0 (don't)").
     */
    public static boolean flag(String source, String value, String usage) {
        if (value == null || value.isBlank()) {
            return false;
        }
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "1", "true", "yes", "on" -> true;
            case "0", "false", "no", "off" -> false;
            default -> throw new IllegalArgumentException(source + "=" + value + " is invalid: use " + usage);
        };
    }

    /** The communicator settings bound to this thread ({@link #with}); empty when none are. */
    public static Map<String, String> bound() {
        return BOUND.isBound() ? BOUND.get() : Map.of();
    }

    /**
     * Runs {@code body} with {@code settings} winning over system properties and the environment for
     * every read on this thread inside it (a communicator's creation, its splits and shrinks), on
     * top of the settings bound already.
     */
    public static <R, X extends Throwable> R with(Map<String, String> settings, ScopedValue.CallableOp<R, X> body) throws X {
        if (settings.isEmpty()) {
            return body.call();
        }
        Map<String, String> merged = new TreeMap<>(bound());
        merged.putAll(settings);
        return ScopedValue.where(BOUND, Collections.unmodifiableMap(merged)).call(body);
    }

    /**
     * The process environment with every setting given as a system property or bound to this
     * thread in its place: what readers that take a map of variables (EnvDiscovery, TcpConfig) are
     * given.
     */
    public static Map<String, String> environment() {
        Map<String, String> env = System.getenv();
        Map<String, String> out = null;
        for (String v : ALL) {
            String p = System.getProperty(property(v));
            if (BOUND.isBound() && BOUND.get().containsKey(v)) {
                p = BOUND.get().get(v);
            }
            if (p != null) {
                if (out == null) {
                    out = new HashMap<>(env);
                }
                out.put(v, p);
            }
        }
        return out != null ? Collections.unmodifiableMap(out) : env;
    }
}
