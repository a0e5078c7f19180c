package org.jccl;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import org.jccl.bootstrap.EnvDiscovery;
import org.jccl.bootstrap.GuardedStore;
import org.jccl.bootstrap.Heartbeat;
import org.jccl.bootstrap.PrefixStore;
import org.jccl.bootstrap.Store;
import org.jccl.bootstrap.TcpStore;
import org.jccl.bootstrap.TorchStore;
import org.jccl.bootstrap.TorchStoreProtocol;
import org.jccl.internal.Log;
import org.jccl.spi.Backend;
import org.jccl.spi.Liveness;

/**
 * Entry point: forms a communicator over every rank of the job.
 *
 * <pre>{@code
 * try (Communicator comm = Jccl.init()) {
 *     comm.allReduce(HostBuffer.of(grads), ReduceOp.SUM);
 * }
 * }</pre>
 */
public final class Jccl {
    private static final Log LOG = Log.get(Jccl.class);

    /** jccl's version. */
    public static final String VERSION = "0.1.0";

    private Jccl() {
    }

    /** Forms a communicator from the environment ({@link Options#fromEnv()}). */
    public static Communicator init() {
        return init(Options.fromEnv());
    }

    /**
     * Forms a communicator. Collective: every rank of the job calls it. Rank 0 serves the
     * rendezvous store at the store address, unless a launcher serves it there ({@code
     * JCCL_STORE_SERVED=1}); when the address is taken otherwise, rank 0 fails at once naming it
     * rather than join a store it did not start (see {@link TcpStore#open}). The first wait over
     * all ranks names the ranks that never joined when it times out.
     *
     * <p>With a TCP store and {@link Options#heartbeat()} on ({@code JCCL_HEARTBEAT}, every second
     * by default), this rank sends heartbeats through the store until the communicator closes: a
     * rank whose process dies is declared dead by the store within an interval, the waits of this
     * call end with a {@link PeerFailureException} naming it, and so do the pending and next
     * collectives of the communicator (see {@link Liveness}).
     */
    public static Communicator init(Options options) {
        Checks.notNull(options, "options");
        Backend backend = chooseBackend(options);
        if (options.store() == null && !backend.needsStore()) {
            LOG.info(options.rank(), () -> "init " + options + " backend=" + backend.name() + " (no store: its launcher connects the ranks)");
            return org.jccl.internal.Settings.with(options.settings(), () -> backend.create(options, null));
        }
        if (options.store() == null && options.storePort() == 0 && options.size() > 1) {
            throw new IllegalArgumentException("no rendezvous store address for a job of " + options.size() + " ranks "
                    + "(the launcher's variables do not give one): set JCCL_STORE=host:port (rank 0's host and a free "
                    + "port, the same for every rank; under mpirun: mpirun -x JCCL_STORE=node1:29500 ...) or MASTER_ADDR "
                    + "and MASTER_PORT; or, under mpirun, use the mpi backend (JCCL_BACKEND=mpi), which needs no store");
        }
        Store root;
        boolean ownStore;
        if (options.store() != null) {
            root = options.store();
            ownStore = false;
        } else {
            // Rank 0 serves the store, unless the launcher says it serves it (JCCL_STORE_SERVED).
            boolean served = org.jccl.internal.Settings.with(options.settings(), Jccl::storeServed);
            String protocol = org.jccl.internal.Settings.with(options.settings(), Jccl::storeProtocol);
            if (protocol.equals("jccl")) {
                root = TcpStore.open(options.storeHost(), options.storePort(), options.rank() == 0 && !served,
                        options.token(), options.timeout());
            } else {
                // torch's store protocol: torchrun's agent serves one at MASTER_ADDR:MASTER_PORT
                boolean agent = "true".equalsIgnoreCase(System.getenv("TORCHELASTIC_USE_AGENT_STORE"));
                if (options.token() != null && !options.token().isEmpty()) {
                    LOG.warn(options.rank(), "JCCL_TOKEN is set but JCCL_STORE_PROTOCOL=" + protocol + ": torch's store "
                            + "protocol has no authentication, so the token is not checked (keep the store port private)");
                }
                root = TorchStore.open(options.storeHost(), options.storePort(), options.rank() == 0 && !served && !agent,
                        protocol.equals("torch1") ? TorchStoreProtocol.Generation.TORCH_1
                                : protocol.equals("torch2") ? TorchStoreProtocol.Generation.TORCH_2 : null,
                        options.timeout());
            }
            ownStore = true;
        }
        Heartbeat heartbeat = null;
        try {
            // Every init of this job gets its own namespace: the n-th init of each rank meets the
            // n-th init of the others.
            long n = root.add("jccl/" + options.jobId() + "/inits/" + options.rank(), 1);
            String prefix = "jccl/" + options.jobId() + "/c" + n + "/";
            // The backend closes the store it is given when the communicator closes; a store
            // this call opened closes with it, a caller's store stays open.
            Store store = ownStore ? PrefixStore.owning(prefix, root) : new PrefixStore(prefix, root);
            heartbeat = startHeartbeat(options, root, prefix);
            Liveness liveness = Liveness.NONE;
            GuardedStore guarded = null;
            if (heartbeat != null) {
                // The rendezvous ends as soon as a rank dies; closing the store stops the heartbeats.
                guarded = heartbeat.guard(store);
                store = guarded;
                liveness = heartbeat;
            }
            join(options, store, ownStore ? options.storeHost() + ":" + options.storePort() : String.valueOf(root));
            LOG.info(options.rank(), () -> "init " + options + " backend=" + backend.name());
            Store st = store;
            Liveness lv = liveness;
            Communicator comm = org.jccl.internal.Settings.with(options.settings(), () -> backend.create(options, st, lv));
            if (guarded != null) {
                guarded.disarm();
            }
            return comm;
        } catch (RuntimeException | Error e) {
            if (heartbeat != null) {
                heartbeat.close();
            }
            if (ownStore) {
                root.close();
            }
            throw e;
        }
    }

    /**
     * JCCL_STORE_PROTOCOL: {@code jccl} (the default: jccl's own store, {@link TcpStore}), {@code
     * torch} (PyTorch's TCPStore protocol, {@link TorchStore}: the generation found by the
     * handshake), {@code torch1} or {@code torch2} (that generation).
     */
    private static String storeProtocol() {
        return EnvDiscovery.storeProtocol(org.jccl.internal.Settings.get("JCCL_STORE_PROTOCOL"));
    }

    /** JCCL_STORE_SERVED: whether a launcher serves the store at the store address (1/true/yes/on). */
    private static boolean storeServed() {
        return org.jccl.internal.Settings.flag("JCCL_STORE_SERVED", org.jccl.internal.Settings.get("JCCL_STORE_SERVED"),
                "1 (a launcher serves the store at JCCL_STORE, rank 0 connects to it) or 0 (rank 0 serves it)");
    }

    /**
     * The first wait of an init over all ranks: each rank announces itself; rank 0 waits for every
     * rank, the others for rank 0's word that all came. A timeout names the ranks that never came
     * instead of an internal store key.
     */
    private static void join(Options options, Store store, String where) {
        int size = options.size();
        if (size == 1) {
            return;
        }
        int rank = options.rank();
        store.set("join/" + rank, new byte[0]);
        try {
            if (rank == 0) {
                List<String> keys = new ArrayList<>(size);
                for (int r = 0; r < size; r++) {
                    keys.add("join/" + r);
                }
                store.wait(keys, options.timeout());
                store.set("join/all", new byte[0]);
            } else {
                store.wait(List.of("join/all"), options.timeout());
            }
        } catch (CollectiveTimeoutException e) {
            List<Integer> missing = new ArrayList<>();
            try {
                for (int r = 0; r < size; r++) {
                    if (store.tryGet("join/" + r) == null) {
                        missing.add(r);
                    }
                }
            } catch (JcclException again) {
                e.addSuppressed(again);
            }
            String who;
            if (missing.isEmpty()) {
                who = "not every rank joined";
            } else {
                String list = missing.subList(0, Math.min(20, missing.size())).toString();
                who = missing.size() == 1 ? "rank " + missing.getFirst() + " never joined"
                        : missing.size() + " ranks never joined (" + list.substring(1, list.length() - 1)
                        + (missing.size() > 20 ? ", ..." : "") + ")";
            }
            CollectiveTimeoutException named = new CollectiveTimeoutException(who + " within " + seconds(options.timeout())
                    + " (job '" + options.jobId() + "' at " + where + ", " + size + " ranks; this is rank " + rank
                    + "): start " + (missing.size() == 1 ? "it" : "them") + ", or check that every rank uses the same "
                    + "JCCL_JOB_ID and store address (JCCL_STORE, or MASTER_ADDR/MASTER_PORT) and the same world size",
                    missing);
            named.initCause(e);
            throw named;
        }
    }

    private static String seconds(java.time.Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms";
    }

    /**
     * Starts this rank's heartbeats for the init whose namespace is {@code prefix} in {@code root};
     * null when they are off, the job has one rank, or the store has no server to watch them.
     */
    private static Heartbeat startHeartbeat(Options options, Store root, String prefix) {
        int rank = options.rank();
        if (!options.heartbeatsOn()) {
            LOG.info(rank, () -> "heartbeats off (JCCL_HEARTBEAT=off): dead ranks are found by the transports and deadlines");
            return null;
        }
        if (options.size() == 1) {
            return null;
        }
        StringBuilder scope = new StringBuilder();
        Store s = root;
        while (s instanceof PrefixStore ps) {
            scope.append(ps.prefix());
            s = ps.inner();
        }
        if (!(s instanceof TcpStore tcp)) {
            Store what = s;
            LOG.info(rank, () -> "heartbeats off: the store (" + what + ") has no server that could watch this rank's "
                    + "connection (heartbeats need a TCP store); dead ranks are found by the transports and deadlines");
            return null;
        }
        scope.append(prefix);
        try {
            return Heartbeat.start(tcp, scope.toString(), rank, options.heartbeat(), tcp.server() != null);
        } catch (InvalidUsageException e) {
            throw e; // the store refused this rank (another process claims it): a real error
        } catch (JcclException e) {
            LOG.warn(rank, "heartbeats off: cannot start them through the store at " + tcp.address() + ": "
                    + e.getMessage());
            return null;
        }
    }

    /** The backends on the module/class path, available or not. */
    public static List<Backend> backends() {
        List<Backend> out = new ArrayList<>();
        for (Backend b : ServiceLoader.load(Backend.class, Jccl.class.getClassLoader())) {
            out.add(b);
        }
        return out;
    }

    static Backend chooseBackend(Options options) {
        String wanted = options.backend();
        if (wanted == null) {
            String env = org.jccl.internal.Settings.get("JCCL_BACKEND");
            wanted = env == null || env.isBlank() ? null : env.trim().toLowerCase(Locale.ROOT);
        }
        List<Backend> all = backends();
        if (wanted != null) {
            for (Backend b : all) {
                if (b.name().equals(wanted)) {
                    if (!b.isAvailable()) {
                        throw new JcclException("backend '" + wanted + "' is not available here: "
                                + b.unavailabilityCause());
                    }
                    return b;
                }
            }
            List<String> names = all.stream().map(Backend::name).toList();
            throw new IllegalArgumentException("backend '" + wanted + "' (JCCL_BACKEND or Options.backend) is unknown: "
                    + "available here are " + names + "; add its module (e.g. jccl-cuda for nccl) to the class path");
        }
        for (Backend b : all) {
            if (b.prefers(options) && b.isAvailable()) {
                return b;
            }
        }
        for (Backend b : all) {
            if (b.name().equals("host")) {
                return b;
            }
        }
        throw new JcclException("no jccl backend found: jccl-core's host engine should always be present; "
                + "check that jccl-core is on the class path");
    }
}
