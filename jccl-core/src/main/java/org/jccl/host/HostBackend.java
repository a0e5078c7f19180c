package org.jccl.host;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.jccl.Communicator;
import org.jccl.JcclException;
import org.jccl.Options;
import org.jccl.bootstrap.Store;
import org.jccl.host.shm.ShmTransport;
import org.jccl.spi.Backend;

/** The built-in host engine ("host"): host memory over shared memory. Always available. */
public final class HostBackend implements Backend {

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

    @Override
    public Communicator create(Options options, Store store) {
        try {
            checkSameHost(options, store);
            // A fresh id per communicator keeps two jobs with the same job id apart on one host.
            byte[] idBytes;
            if (options.rank() == 0) {
                idBytes = String.format("%08x", ThreadLocalRandom.current().nextInt()).getBytes(StandardCharsets.UTF_8);
                store.set("host/id", idBytes);
            } else {
                idBytes = store.get("host/id", options.timeout());
            }
            String id = options.jobId() + "-" + new String(idBytes, StandardCharsets.UTF_8);
            return create(id, options.rank(), options.size(), options.localSize(), store, options.timeout());
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    private static void checkSameHost(Options options, Store store) {
        String host = hostId();
        store.set("host/host-of/" + options.rank(), host.getBytes(StandardCharsets.UTF_8));
        if (options.rank() != 0) {
            String root = new String(store.get("host/host-of/0", options.timeout()), StandardCharsets.UTF_8);
            if (!root.equals(host)) {
                throw new JcclException("rank " + options.rank() + " runs on " + host + " but rank 0 on " + root
                        + ": the host engine in this version connects ranks of one host only (shared memory); "
                        + "start all ranks on one host");
            }
        }
    }

    /** Identifies this host: the hostname plus the kernel boot id (containers share /dev/shm only within a boot). */
    static String hostId() {
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

    static HostCommunicator create(String id, int rank, int size, int localSize, Store store, Duration timeout) {
        ShmTransport t = ShmTransport.open(id, rank, size, HostCommunicator.geometry(size), store, timeout, localSize);
        return new HostCommunicator(id, rank, size, store, t, Tuner.fromEnv(), timeout);
    }
}
