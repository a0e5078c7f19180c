package org.jccl.cuda;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jccl.CollectiveTimeoutException;
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
 * ranks wait for the key and read it. Torch 2.11 keys the default process group's first NCCL
 * communicator {@value #DEFAULT_GROUP_KEY} (after the {@code /} every torch client puts before
 * keys, which {@link TorchStore} adds too; earlier 2.x releases put {@code default_pg/} before
 * it, and both are tried); torch writes it during {@code init_process_group} when
 * given {@code device_id}, else at the group's first collective. Every rank must then issue the same
 * collectives in the same order, as in any NCCL job: the Python side's {@code dist.all_reduce},
 * {@code dist.broadcast}, {@code dist.barrier} (an all-reduce of one element) each need their Java
 * counterpart. Both sides must load compatible NCCL libraries: point {@code JCCL_NCCL_LIBRARY} at
 * the {@code libnccl.so.2} of torch's environment ({@code nvidia/nccl/lib} in its site-packages).
 *
 * <p>This rank makes no NCCL call the torch ranks would not make: the communicator is one NCCL
 * communicator (collectives on it as under {@code JCCL_NCCL_NONBLOCKING=1}), without jccl's own
 * all-reduce kernels or JIT warm-up collectives. It has no jccl store behind it (the Python ranks would not answer jccl's keys):
 * a collective that times out says so but cannot name the rank that never called, and
 * {@code JCCL_CHECK} is not available. See docs/TORCH.md.
 */
public final class TorchNccl {
    /**
     * The store key (before the torch client's {@code /}) of the ncclUniqueId of torch 2.x's
     * default process group's first NCCL communicator, when {@code init_process_group} was given
     * the store ({@code store=}): the group name {@code 0}, the {@code cuda} backend prefix, and
     * the communicator counter {@code 0} (torch 2.11).
     */
    public static final String DEFAULT_GROUP_KEY = "0//cuda//0";

    /**
     * The same key behind the {@code default_pg} prefix, which earlier torch 2.x releases put
     * before every key of the default group.
     */
    public static final String DEFAULT_GROUP_KEY_PREFIXED = "default_pg/" + DEFAULT_GROUP_KEY;

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
        return join(device, store, List.of(DEFAULT_GROUP_KEY, DEFAULT_GROUP_KEY_PREFIXED), rank, size, timeout);
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
        return join(device, store, List.of(key), rank, size, timeout);
    }

    /**
     * {@link #join(CudaDevice, Store, String, int, int, Duration)} with several candidate keys
     * (torch releases differ): rank 0 sets the id under each, the others take the first that
     * appears.
     */
    private static NcclCommunicator join(CudaDevice device, Store store, List<String> keys, int rank, int size,
                                         Duration timeout) {
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
        String key = keys.getFirst();
        if (rank == 0) {
            uid = Nccl.newUniqueId();
            for (String k : keys) {
                store.set(k, uid);
            }
        } else {
            uid = null;
            long end = System.nanoTime() + timeout.toNanos();
            while (uid == null) {
                for (String k : keys) {
                    uid = store.tryGet(k);
                    if (uid != null) {
                        key = k;
                        break;
                    }
                }
                if (uid == null) {
                    if (System.nanoTime() > end) {
                        String held = "";
                        if (store instanceof TorchStore ts && ts.generation() == TorchStoreProtocol.Generation.TORCH_2) {
                            List<String> all = ts.listKeys();
                            held = "; the store holds " + (all.size() > 20 ? all.subList(0, 20) + " ..." : all);
                        }
                        throw new CollectiveTimeoutException("no ncclUniqueId under " + keys + " in " + store + " within "
                                + timeout + held + ": process-group rank 0 has not created its NCCL communicator (torch "
                                + "does at init_process_group with device_id=, else at the first collective), or it "
                                + "uses another key (give it to TorchNccl.join)", List.of(0));
                    }
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new JcclException("interrupted while waiting for the ncclUniqueId under " + keys);
                    }
                }
            }
            if (uid.length != NcclLibrary.UNIQUE_ID_BYTES) {
                throw new JcclException("the value under '" + key + "' in " + store + " has " + uid.length
                        + " bytes, not an ncclUniqueId's " + NcclLibrary.UNIQUE_ID_BYTES + ": the key belongs to something "
                        + "else (check the process group's key in docs/TORCH.md)");
            }
        }
        // foreign: the other ranks are torch's, so no NCCL call of jccl's own (data split, kernel set-up, warm-up)
        return NcclInit.create(device, false, rank, size, uid, timeout, null, null, "nccl", null, true);
    }
}
