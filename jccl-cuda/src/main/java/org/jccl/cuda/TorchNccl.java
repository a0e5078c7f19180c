package org.jccl.cuda;

import java.time.Duration;
import java.util.Objects;
import org.jccl.JcclException;
import org.jccl.bootstrap.Store;
import org.jccl.bootstrap.TorchStore;
import org.jccl.bootstrap.TorchStoreProtocol;

/**
 * NCCL communicators shared with PyTorch: Java ranks join the NCCL communicator of a
 * {@code torch.distributed} NCCL process group, so that Python and Java ranks run the same
 * collectives on GPU memory (a PyTorch trainer broadcasting weights to Java inference workers).
 *
 * <pre>{@code
 * // Python ranks: dist.init_process_group("nccl", store=TCPStore(host, port, world, rank == 0),
 * //                                        rank=r, world_size=world, device_id=torch.device("cuda", r))
 * try (TorchStore store = TorchStore.connect(host, port, null, timeout);
 *      CudaDevice gpu = CudaDevice.open(localGpu)) {
 *     store.countAsWorker();                       // as a torch client made with a world size does
 *     try (NcclCommunicator comm = TorchNccl.joinDefaultGroup(gpu, store, rank, world, timeout)) {
 *         comm.broadcast(weights, 0);               // from the Python trainer, rank 0
 *     }
 * }
 * }</pre>
 *
 * <p>The rendezvous is torch's own: process-group rank 0 (Python or Java) makes the
 * {@code ncclUniqueId} and sets its 128 raw bytes under the process group's store key; the other
 * ranks wait for the key and read it. Torch 2.x keys the default process group's first NCCL
 * communicator {@value #DEFAULT_GROUP_KEY} (after the {@code /} every torch client puts before
 * keys, which {@link TorchStore} adds too); torch writes it during {@code init_process_group} when
 * given {@code device_id}, else at the group's first collective. Every rank must then issue the same
 * collectives in the same order, as in any NCCL job: the Python side's {@code dist.all_reduce},
 * {@code dist.broadcast}, {@code dist.barrier} (an all-reduce of one element) each need their Java
 * counterpart. Both sides must load compatible NCCL libraries: point {@code JCCL_NCCL_LIBRARY} at
 * the {@code libnccl.so.2} of torch's environment ({@code nvidia/nccl/lib} in its site-packages).
 *
 * <p>The communicator has no jccl store behind it (the Python ranks would not answer jccl's keys):
 * a collective that times out says so but cannot name the rank that never called, and
 * {@code JCCL_CHECK} is not available. See docs/TORCH.md.
 */
public final class TorchNccl {
    /**
     * The store key (before the torch client's {@code /}) of the ncclUniqueId of torch 2.x's
     * default process group's first NCCL communicator: the {@code default_pg} store prefix, the
     * group name {@code 0}, the {@code cuda} backend prefix, and the communicator counter {@code 0}.
     */
    public static final String DEFAULT_GROUP_KEY = "default_pg/0//cuda//0";

    private TorchNccl() {
    }

    /**
     * Joins the NCCL communicator of torch 2.x's default process group ({@link #DEFAULT_GROUP_KEY})
     * as rank {@code rank} of {@code size}. Collective over every rank of the group, Python and Java.
     *
     * @param device  this rank's GPU (one GPU per rank, as NCCL requires)
     * @param store   a client of the job's torch store (a torch 2.x server, or jccl's
     *                {@code TorchStoreServer})
     * @param rank    this rank in the process group
     * @param size    the group's world size, Python and Java ranks together
     * @param timeout how long to wait for the unique id and for NCCL's initialisation
     * @return this rank's communicator; NCCL's rank order is the process group's
     * @throws IllegalArgumentException when an argument is wrong or the store speaks torch 1.x,
     *                                  before any store traffic
     */
    public static NcclCommunicator joinDefaultGroup(CudaDevice device, TorchStore store, int rank, int size,
                                                    Duration timeout) {
        Objects.requireNonNull(store, "store: a TorchStore connected to the job's torch store");
        if (store.generation() == TorchStoreProtocol.Generation.TORCH_1) {
            throw new IllegalArgumentException("the store at " + store + " speaks torch 1.x's protocol: joining a torch 1.x "
                    + "NCCL process group is not supported (its store barrier and keys differ); use torch 2.x, or pass "
                    + "the key with TorchNccl.join");
        }
        return join(device, store, DEFAULT_GROUP_KEY, rank, size, timeout);
    }

    /**
     * Joins an NCCL communicator whose ncclUniqueId travels under {@code key} of {@code store}, as
     * torch's process groups do: rank 0 makes the id and sets it (raw 128 bytes), the others wait
     * for it. Use it for a process group other than the default one (its key per docs/TORCH.md).
     *
     * @param device  this rank's GPU
     * @param store   the job's store
     * @param key     the store key of the unique id
     * @param rank    this rank
     * @param size    number of ranks
     * @param timeout how long to wait for the unique id and for NCCL's initialisation
     * @return this rank's communicator
     */
    public static NcclCommunicator join(CudaDevice device, Store store, String key, int rank, int size,
                                        Duration timeout) {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("key is " + (key == null ? "null" : "empty")
                    + ": give the store key of the unique id (TorchNccl.DEFAULT_GROUP_KEY for torch's default group)");
        }
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " of size " + size + ": need 0 <= rank < size (size: the "
                    + "process group's world size, Python and Java ranks together)");
        }
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout is " + timeout + ": give a positive duration");
        }
        Objects.requireNonNull(store, "store: the job's store (a TorchStore for a torch job)");
        Objects.requireNonNull(device, "device: the CudaDevice of this rank's GPU");
        byte[] uid;
        if (rank == 0) {
            uid = Nccl.newUniqueId();
            store.set(key, uid);
        } else {
            uid = store.get(key, timeout);
            if (uid.length != NcclLibrary.UNIQUE_ID_BYTES) {
                throw new JcclException("the value under '" + key + "' in " + store + " has " + uid.length
                        + " bytes, not an ncclUniqueId's " + NcclLibrary.UNIQUE_ID_BYTES + ": the key belongs to something "
                        + "else (check the process group's key in docs/TORCH.md)");
            }
        }
        return NcclCommunicator.create(device, rank, size, uid, timeout);
    }
}
