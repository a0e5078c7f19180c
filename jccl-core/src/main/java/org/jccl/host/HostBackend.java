package org.jccl.host;

import org.jccl.host.tune.Tuner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.jccl.Communicator;
import org.jccl.JcclException;
import org.jccl.Options;
import org.jccl.bootstrap.Store;
import org.jccl.host.shm.ShmTransport;
import org.jccl.host.hier.HierarchicalCommunicator;
import org.jccl.host.hier.Placement;
import org.jccl.host.tcp.TcpCommunicator;
import org.jccl.host.tcp.TcpConfig;
import org.jccl.spi.Backend;
import org.jccl.spi.Liveness;

/**
 * The built-in host engine ("host"): host memory over shared memory between the ranks of a host
 * and TCP between hosts (see {@link #create(Options, Store, String, String, TcpConfig.Transport)}).
 * Always available.
 */
public final class HostBackend implements Backend {
    private static final org.jccl.internal.Log LOG = org.jccl.internal.Log.get(HostBackend.class);

    /** For ServiceLoader. */
    public HostBackend() {
    }

    @Override
    public String name() {
        return "host";
    }

    @Override
    public boolean isAvailable() {
        return true;
    }

    @Override
    public String unavailabilityCause() {
        return null;
    }

    @Override
    public boolean prefers(Options options) {
        return options.device() == null;
    }

    /**
     * Forms the communicator; its waits also end with a {@link org.jccl.PeerFailureException} as
     * soon as {@code liveness} reports a member dead (job rank = rank of this communicator).
     */
    @Override
    public Communicator create(Options options, Store store, Liveness liveness) {
        try {
            // A fresh id per communicator keeps two jobs with the same job id apart on one host.
            byte[] idBytes;
            if (options.rank() == 0) {
                idBytes = String.format("%08x", ThreadLocalRandom.current().nextInt()).getBytes(StandardCharsets.UTF_8);
                store.set("host/id", idBytes);
            } else {
                idBytes = store.get("host/id", options.timeout());
            }
            String id = options.jobId() + "-" + new String(idBytes, StandardCharsets.UTF_8);
            double warmup = org.jccl.internal.WarmupSetting.seconds();
            boolean pin = pinning();
            Communicator comm = create(options, store, id, hostId(), TcpConfig.Transport.fromEnv(),
                    (liveness == null ? Liveness.NONE : liveness).watch(options.size()));
            try {
                if (pin) {
                    pin(options.rank(), options.localRank(), options.localSize());
                }
                JitWarmup.run(comm, warmup);
            } catch (RuntimeException e) {
                comm.close();
                throw e;
            }
            return comm;
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    /** JCCL_AFFINITY: {@code auto} (the default) pins, {@code off} does not; anything else is an error. */
    static boolean pinning() {
        String v = org.jccl.internal.Settings.get("JCCL_AFFINITY");
        if (v == null || v.isBlank() || v.trim().equalsIgnoreCase("auto")) {
            return true;
        }
        if (v.trim().equalsIgnoreCase("off")) {
            return false;
        }
        throw new IllegalArgumentException("JCCL_AFFINITY=" + v + " is not a choice: use auto (each local rank's "
                + "thread on its own share of the CPUs) or off (leave the thread where it is)");
    }

    /**
     * Restricts the calling thread (the rank's) to local rank {@code localRank}'s share of the CPUs
     * it may use now, so that no two spinning ranks of this host ever share a core (see {@link
     * org.jccl.internal.Affinity}). Nothing happens with one local rank, with more local ranks than
     * CPUs, or where affinity cannot be set (logged).
     */
    static void pin(int rank, int localRank, int localSize) {
        if (localSize < 2 || localRank < 0 || localRank >= localSize) {
            return;
        }
        if (!org.jccl.internal.Affinity.isAvailable()) {
            LOG.info(rank, () -> "ranks not pinned to CPUs: " + org.jccl.internal.Affinity.unavailabilityCause());
            return;
        }
        int[] allowed = org.jccl.internal.Affinity.unpinned();
        int[] share = org.jccl.internal.Affinity.shareOf(allowed, localRank, localSize);
        if (share == null) {
            LOG.info(rank, () -> "ranks not pinned to CPUs: " + localSize + " local ranks share " + allowed.length + " CPUs");
            return;
        }
        org.jccl.internal.Affinity.set(share);
        LOG.info(rank, () -> "local rank " + localRank + " of " + localSize + ": this thread runs on CPUs "
                + org.jccl.internal.Affinity.format(share) + " (JCCL_AFFINITY=off leaves it where it was)");
    }

    /**
     * Chooses the transports from where the ranks run: every rank on one host, shared memory
     * ({@link HostCommunicator}); several hosts, shared memory inside each and TCP between them
     * ({@link HierarchicalCommunicator}, a {@link TcpCommunicator} when each host has one rank);
     * {@code transport} TCP (JCCL_TRANSPORT=tcp), TCP between every pair ({@link TcpCommunicator}).
     */
    static Communicator create(Options o, Store store, String id, String hostId, TcpConfig.Transport transport) {
        return create(o, store, id, hostId, transport, Liveness.NONE.watch(o.size()));
    }

    /** As above, the waits also ending when {@code watch} reports a member dead. */
    static Communicator create(Options o, Store store, String id, String hostId, TcpConfig.Transport transport,
                               Liveness.Watch watch) {
        Placement p = Placement.exchange(store, o.rank(), o.size(), hostId, o.timeout());
        // The route to the store picks the interface; a loopback store address (a store handed in
        // with Options' defaults) says nothing about it when the ranks span hosts.
        String route = o.storeHost();
        if (p.hosts() > 1 && route != null && (route.startsWith("127.") || route.equals("localhost") || route.equals("::1"))) {
            route = null;
        }
        if (transport == TcpConfig.Transport.TCP) {
            return TcpCommunicator.create(id, o.rank(), o.size(), store, o.timeout(), o.token(), TcpConfig.fromEnv(),
                    route, p.hostIds(), 0, watch);
        }
        if (p.hosts() == 1) {
            return create(id, o.rank(), o.size(), o.localSize(), store, o.timeout(), watch);
        }
        if (transport == TcpConfig.Transport.SHM) {
            throw new JcclException("JCCL_TRANSPORT=shm but the " + o.size() + " ranks run on " + p.hosts()
                    + " hosts (host of rank 0: " + p.hostIds()[0] + ", of rank " + p.members()[1][0] + ": "
                    + p.hostIds()[p.members()[1][0]] + "): unset JCCL_TRANSPORT to connect hosts over TCP, "
                    + "or start all ranks on one host");
        }
        if (p.maxLocal() == 1) {
            return TcpCommunicator.create(id, o.rank(), o.size(), store, o.timeout(), o.token(), TcpConfig.fromEnv(),
                    route, p.hostIds(), 0, watch);
        }
        return HierarchicalCommunicator.create(id, o.rank(), o.size(), store, o.timeout(), o.token(), TcpConfig.fromEnv(),
                route, p, (subId, rank, size, sub, timeout, w) -> create(subId, rank, size, size, sub, timeout, w), watch);
    }

    /**
     * Identifies this host: {@code JCCL_HOST_ID} when set (network namespaces and containers that
     * share a hostname and boot id but not memory, or tests), else the hostname plus the kernel
     * boot id (containers share /dev/shm only within a boot). Ranks with equal ids use shared
     * memory between them.
     */
    static String hostId() {
        String forced = org.jccl.internal.Settings.get("JCCL_HOST_ID");
        if (forced != null && !forced.isBlank()) {
            return forced.trim();
        }
        String name;
        try {
            name = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            name = "localhost";
        }
        try {
            return name + "/" + java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (java.io.IOException | RuntimeException e) {
            return name;
        }
    }

    static HostCommunicator create(String id, int rank, int size, int localSize, Store store, Duration timeout,
                                   Liveness.Watch watch) {
        ShmTransport t = ShmTransport.open(id, rank, size, HostCommunicator.geometry(size), store, timeout, localSize,
                HostCommunicator.singleCopyBytes());
        return new HostCommunicator(id, rank, size, store, t, Tuner.fromEnv(), timeout, watch);
    }
}
