package org.jccl.spi;

import org.jccl.Communicator;
import org.jccl.Options;
import org.jccl.bootstrap.Store;

/**
 * A communicator implementation found by {@link java.util.ServiceLoader}. The host engine is
 * built in; jccl-cuda and jccl-mpi register theirs.
 */
public interface Backend {

    /** Short name used by {@code JCCL_BACKEND} and {@link Options#backend()}: "host", "nccl", "mpi". */
    String name();

    /** Whether this backend can run here (native libraries found, ...). */
    boolean isAvailable();

    /** Why {@link #isAvailable()} is false, or null. */
    String unavailabilityCause();

    /** Whether this backend is the automatic choice for these options (e.g. a device is set). */
    boolean prefers(Options options);

    /**
     * Whether {@link #create} needs a rendezvous store. A backend whose own launcher already
     * connects the ranks (MPI's mpirun) returns false; {@link org.jccl.Jccl#init(Options)} then
     * opens no store unless the options carry one, and passes null.
     */
    default boolean needsStore() {
        return true;
    }

    /**
     * Forms this rank's communicator. {@code store} is connected and namespaced for this job
     * (null only when {@link #needsStore()} is false and the options carry no store); the call is
     * collective over all ranks of the job. The communicator owns {@code store} and closes it
     * when it closes (on failure of this call too).
     *
     * <p>{@code liveness} is the job's: which ranks the store's heartbeats declared dead ({@link
     * Liveness#NONE} without heartbeats). A backend that watches it makes its pending and next
     * operations fail with a {@link org.jccl.PeerFailureException} naming a rank soon after {@link
     * Liveness#deadRanks()} shows it (poll {@link Liveness.Watch#firstDead()} from its waits or
     * watchdog, or register a {@link Liveness.Listener}); one whose launcher watches the ranks
     * itself may ignore it. {@link org.jccl.Jccl#init(Options)} calls this one.
     */
    Communicator create(Options options, Store store, Liveness liveness);

    /** {@link #create(Options, Store, Liveness)} without heartbeats ({@link Liveness#NONE}). */
    default Communicator create(Options options, Store store) {
        return create(options, store, Liveness.NONE);
    }
}
