package org.jccl.cuda;

import org.jccl.Communicator;
import org.jccl.Device;
import org.jccl.Options;
import org.jccl.bootstrap.Store;
import org.jccl.spi.Backend;
import org.jccl.spi.Liveness;

/**
 * The "nccl" backend: GPU communicators through NCCL. Chosen automatically when
 * {@link Options#device()} is a {@link CudaDevice}, or by {@code JCCL_BACKEND=nccl} (then GPU
 * {@code localRank % deviceCount} is opened for the rank and closed with the communicator).
 *
 * <p>Rendezvous: rank 0 makes the ncclUniqueId and sets it under {@code nccl/uid} in the job's
 * store; every other rank reads it from there (with the options' deadline).
 */
public final class NcclBackend implements Backend {
    /** Store key of the ncclUniqueId, inside the job's namespace. */
    public static final String UID_KEY = "nccl/uid";

    /** For ServiceLoader. */
    public NcclBackend() {
    }

    @Override
    public String name() {
        return "nccl";
    }

    @Override
    public boolean isAvailable() {
        return unavailabilityCause() == null;
    }

    @Override
    public String unavailabilityCause() {
        String why = Nccl.unavailabilityCause();
        if (why != null) {
            return why;
        }
        return CudaDevice.count() == 0 ? "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)" : null;
    }

    @Override
    public boolean prefers(Options options) {
        return options != null && options.device() instanceof CudaDevice;
    }

    /**
     * As {@link #create(Options, Store)}; with heartbeats, pending and later operations fail with a
     * {@link org.jccl.PeerFailureException} naming a rank the store declared dead (checked by the
     * watchdog, by blocking waits every millisecond, and before each launch).
     */
    @Override
    public Communicator create(Options options, Store store, Liveness liveness) {
        try {
            Nccl.requireAvailable();
            Device d = options.device();
            CudaDevice device;
            boolean owns;
            if (d == null) {
                int n = CudaDevice.count();
                if (n == 0) {
                    throw new IllegalArgumentException("the nccl backend needs a GPU but none is visible to this process");
                }
                device = CudaDevice.open(options.localRank() % n);
                owns = true;
            } else if (d instanceof CudaDevice cd) {
                device = cd;
                owns = false;
            } else {
                throw new IllegalArgumentException("options.device() is a " + d.getClass().getName()
                        + ": the nccl backend needs a CudaDevice (CudaDevice.open(localRank))");
            }
            try {
                byte[] uid;
                if (options.rank() == 0) {
                    uid = Nccl.newUniqueId();
                    store.set(UID_KEY, uid);
                } else {
                    uid = store.get(UID_KEY, options.timeout());
                }
                return NcclCommunicator.create(device, owns, options.rank(), options.size(), uid, options.timeout(),
                        store, store, "nccl", NcclCommunicator.watchOf(liveness, options.size()));
            } catch (RuntimeException | Error e) {
                if (owns) {
                    device.close();
                }
                throw e;
            }
        } catch (RuntimeException | Error e) {
            store.close();
            throw e;
        }
    }
}
