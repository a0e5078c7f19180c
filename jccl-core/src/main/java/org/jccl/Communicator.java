package org.jccl;

/**
 * A group of ranks that run collectives together. Every rank calls the same collectives in the
 * same order; each call has a blocking form and an {@code Async} form that returns a {@link Work}.
 *
 * <p>Out-of-place forms take a send and a receive buffer; in-place forms take one buffer and
 * follow NCCL's conventions (all-gather: this rank's input is slice {@code rank} of the output;
 * reduce-scatter: the result lands in slice {@code rank} of the input). Every blocking call and
 * every {@link Work} has a deadline: the communicator's timeout ({@code JCCL_TIMEOUT}), or the one
 * of a {@link #withTimeout(java.time.Duration)} view for the calls made through it.
 *
 * <p>Bad arguments are rejected with an {@link IllegalArgumentException} naming the argument
 * before any byte moves. Closed communicators throw {@link InvalidUsageException}.
 *
 * <p>Calls of one communicator (and of its {@link #withTimeout} views) must come from one thread
 * at a time, as with NCCL and MPI: a thread that calls while another is inside a call gets an
 * {@link InvalidUsageException} naming both threads, and nothing is sent. {@link #abort()} may be
 * called from any thread. Give each thread its own communicator ({@link #split}) to run
 * collectives from several threads.
 */
public interface Communicator extends AutoCloseable {

    /** Color for {@link #split(int, int)} meaning "this rank joins no new communicator". */
    int NO_COLOR = -1;

    /** This rank, in {@code [0, size)}. */
    int rank();

    /** Number of ranks. */
    int size();

    /** Name of the backend that runs this communicator ("host", "nccl", "mpi"). */
    String backend();

    /** The deadline applied to every wait of this communicator (of this view, for a {@link #withTimeout} view). */
    java.time.Duration timeout();

    /**
     * A view of this communicator whose calls have deadline {@code timeout} instead of {@link
     * #timeout()}: its blocking calls fail with a {@link CollectiveTimeoutException} naming the
     * ranks that did not arrive once {@code timeout} passes, and so does {@link Work#await()} of its
     * async calls. The view is cheap (make one per call if you like) and is the same communicator:
     * it shares the ranks, the order of calls (sequence numbers) and the state (a failure through
     * the view breaks the communicator, {@link #abort()} aborts it). {@link #close()} on the view
     * does nothing: close the communicator itself. {@link #split} and {@link #shrink} through the
     * view are this communicator's: they run under its own deadline, and their communicators get it.
     *
     * <pre>{@code
     * comm.withTimeout(Duration.ofMillis(300)).allReduce(buf, ReduceOp.SUM); // this call: 300 ms
     * }</pre>
     *
     * @throws IllegalArgumentException when {@code timeout} is null, zero or negative
     * @throws InvalidUsageException    for a backend without per-call deadlines
     */
    default Communicator withTimeout(java.time.Duration timeout) {
        Checks.timeout(timeout, "timeout");
        throw new InvalidUsageException("the " + backend() + " backend has no per-call deadline (withTimeout): use the "
                + "async form and Work.await(Duration), or give the communicator another deadline (JCCL_TIMEOUT, "
                + "Options.withTimeout)");
    }

    // ---- registered memory ----

    /**
     * Host memory for collectives of this communicator, like {@code MPI_Alloc_mem} and {@code
     * ncclMemAlloc}: {@code count} zeroed elements of {@code type}. On the host engine's shared
     * memory (every rank of the communicator on one host, and the ranks of each host of a
     * hierarchical one) the memory is <em>registered</em>: it lives in a shared-memory file the
     * other ranks map, so a collective whose buffers are all registered on every rank reads the
     * peers' data in place (one copy instead of copy-in and copy-out; see the user guide's
     * "Registered buffers"). Slices of it ({@link HostBuffer#slice}, or {@link HostBuffer#of} over
     * part of its segment) are registered too. Other backends (TCP, MPI, NCCL) return ordinary
     * host memory, which works the same, only without the shortcut; so does memory from anywhere
     * else ({@link HostBuffer#of}), on every backend.
     *
     * <p>Local, not collective: each rank allocates what it likes, when it likes, from any thread.
     * The memory belongs to this communicator (not to its splits or to other communicators: a
     * buffer allocated here is ordinary memory for them) and stays valid until the communicator is
     * closed; there is no way to free it sooner, so allocate what you reuse (a gradient buffer,
     * a pool) rather than per call. After {@link #close()} its segment can no longer be accessed
     * (an {@link IllegalStateException}, never a crash).
     *
     * @param type  element type
     * @param count number of elements, {@code >= 0}
     * @return a buffer of {@code count} zeroed elements, 64-byte aligned (page aligned when registered)
     * @throws IllegalArgumentException when {@code type} is null or {@code count} negative or too large
     * @throws InvalidUsageException    when the communicator is closed
     * @throws JcclException            when the shared memory cannot be created (out of space in /dev/shm)
     */
    HostBuffer allocate(DataType type, long count);

    /**
     * True when {@code buffer} lies entirely in memory {@link #allocate} registered with this
     * communicator, so that collectives whose buffers are registered on every rank can take the
     * zero-copy path. False for a null buffer, a device buffer, ordinary memory, and on backends
     * without registration.
     */
    default boolean isRegistered(Buffer buffer) {
        return false;
    }

    // ---- all-reduce ----

    /** recv[i] = op over ranks of send[i]. send and recv have the same type and count. */
    void allReduce(Buffer send, Buffer recv, ReduceOp op);

    /** In-place all-reduce. */
    default void allReduce(Buffer buffer, ReduceOp op) {
        allReduce(buffer, buffer, op);
    }

    /** Asynchronous all-reduce. */
    Work allReduceAsync(Buffer send, Buffer recv, ReduceOp op);

    /** Asynchronous in-place all-reduce. */
    default Work allReduceAsync(Buffer buffer, ReduceOp op) {
        return allReduceAsync(buffer, buffer, op);
    }

    // ---- broadcast ----

    /** recv = root's send on every rank (send is read on the root only). */
    void broadcast(Buffer send, Buffer recv, int root);

    /** In-place broadcast of the root's buffer. */
    default void broadcast(Buffer buffer, int root) {
        broadcast(buffer, buffer, root);
    }

    /** Asynchronous broadcast. */
    Work broadcastAsync(Buffer send, Buffer recv, int root);

    /** Asynchronous in-place broadcast. */
    default Work broadcastAsync(Buffer buffer, int root) {
        return broadcastAsync(buffer, buffer, root);
    }

    // ---- reduce ----

    /** The root's recv = op over ranks of send; recv is ignored (may be null) on other ranks. */
    void reduce(Buffer send, Buffer recv, ReduceOp op, int root);

    /** In-place reduce into the root's buffer. */
    default void reduce(Buffer buffer, ReduceOp op, int root) {
        reduce(buffer, buffer, op, root);
    }

    /** Asynchronous reduce. */
    Work reduceAsync(Buffer send, Buffer recv, ReduceOp op, int root);

    /** Asynchronous in-place reduce. */
    default Work reduceAsync(Buffer buffer, ReduceOp op, int root) {
        return reduceAsync(buffer, buffer, op, root);
    }

    // ---- all-gather ----

    /** recv (size x send.count elements) = every rank's send, in rank order. */
    void allGather(Buffer send, Buffer recv);

    /** In-place all-gather: this rank's input is slice {@code rank()} of {@code buffer}. */
    default void allGather(Buffer buffer) {
        long c = Checks.perRankCount(buffer, size(), "buffer");
        allGather(buffer.slice(rank() * c, c), buffer);
    }

    /** Asynchronous all-gather. */
    Work allGatherAsync(Buffer send, Buffer recv);

    /** Asynchronous in-place all-gather. */
    default Work allGatherAsync(Buffer buffer) {
        long c = Checks.perRankCount(buffer, size(), "buffer");
        return allGatherAsync(buffer.slice(rank() * c, c), buffer);
    }

    // ---- reduce-scatter ----

    /** recv = slice {@code rank} (recv.count elements) of op over ranks of send (size x recv.count). */
    void reduceScatter(Buffer send, Buffer recv, ReduceOp op);

    /** In-place reduce-scatter: the result lands in slice {@code rank()} of {@code buffer}. */
    default void reduceScatter(Buffer buffer, ReduceOp op) {
        long c = Checks.perRankCount(buffer, size(), "buffer");
        reduceScatter(buffer, buffer.slice(rank() * c, c), op);
    }

    /** Asynchronous reduce-scatter. */
    Work reduceScatterAsync(Buffer send, Buffer recv, ReduceOp op);

    /** Asynchronous in-place reduce-scatter. */
    default Work reduceScatterAsync(Buffer buffer, ReduceOp op) {
        long c = Checks.perRankCount(buffer, size(), "buffer");
        return reduceScatterAsync(buffer, buffer.slice(rank() * c, c), op);
    }

    // ---- all-to-all ----

    /** Block j of send goes to rank j; block i of recv comes from rank i (equal block sizes). */
    void allToAll(Buffer send, Buffer recv);

    /** In-place all-to-all. */
    default void allToAll(Buffer buffer) {
        allToAll(buffer, buffer);
    }

    /** Asynchronous all-to-all. */
    Work allToAllAsync(Buffer send, Buffer recv);

    /** Asynchronous in-place all-to-all. */
    default Work allToAllAsync(Buffer buffer) {
        return allToAllAsync(buffer, buffer);
    }

    // ---- gather / scatter ----

    /** The root's recv (size x send.count) = every rank's send in rank order; recv ignored elsewhere. */
    void gather(Buffer send, Buffer recv, int root);

    /** Asynchronous gather. */
    Work gatherAsync(Buffer send, Buffer recv, int root);

    /** recv on rank i = block i of the root's send (size x recv.count); send ignored elsewhere. */
    void scatter(Buffer send, Buffer recv, int root);

    /** Asynchronous scatter. */
    Work scatterAsync(Buffer send, Buffer recv, int root);

    // ---- variable-size collectives (MPI's *v) ----
    //
    // Counts and displacements are in elements of the buffers' type, one per rank; a null
    // displacement array means the blocks are packed in rank order (displacement of rank r = the
    // sum of the counts before it). Every rank passes the same counts where MPI requires it. Each
    // runs as a sequence of the fixed-size collectives and sends/receives (one NCCL group on the
    // nccl backend), so its parts show in the flight recorder one by one.

    /**
     * Variable-size all-gather (MPI_Allgatherv): block r of {@code recv} ({@code recvCounts[r]}
     * elements at {@code displs[r]}) receives rank r's {@code send}, whose count is
     * {@code recvCounts[rank()]}. The counts are the same on every rank; the blocks do not overlap.
     * {@code send} may be this rank's own block of {@code recv} (in place).
     */
    void allGatherV(Buffer send, Buffer recv, long[] recvCounts, long[] displs);

    /** Asynchronous {@link #allGatherV(Buffer, Buffer, long[], long[])}. */
    Work allGatherVAsync(Buffer send, Buffer recv, long[] recvCounts, long[] displs);

    /** In-place variable-size all-gather: this rank's block of {@code buffer} is its input. */
    default void allGatherV(Buffer buffer, long[] counts, long[] displs) {
        allGatherV(org.jccl.spi.VarSize.ownBlock(this, buffer, counts, displs), buffer, counts, displs);
    }

    /**
     * Variable-size reduce-scatter (MPI_Reduce_scatter): {@code send} holds the sum of
     * {@code recvCounts} elements, the blocks packed in rank order; {@code recv} on rank r
     * ({@code recvCounts[r]} elements) = the reduction of block r over every rank. The counts are
     * the same on every rank.
     */
    void reduceScatterV(Buffer send, Buffer recv, long[] recvCounts, ReduceOp op);

    /** Asynchronous {@link #reduceScatterV(Buffer, Buffer, long[], ReduceOp)}. */
    Work reduceScatterVAsync(Buffer send, Buffer recv, long[] recvCounts, ReduceOp op);

    /** In-place variable-size reduce-scatter: the result lands in this rank's block of {@code buffer}. */
    default void reduceScatterV(Buffer buffer, long[] counts, ReduceOp op) {
        reduceScatterV(buffer, org.jccl.spi.VarSize.ownBlock(this, buffer, counts, null), counts, op);
    }

    /**
     * Variable-size all-to-all (MPI_Alltoallv): {@code sendCounts[j]} elements at
     * {@code sendDispls[j]} of {@code send} go to rank j; {@code recvCounts[i]} elements at
     * {@code recvDispls[i]} of {@code recv} come from rank i. {@code sendCounts[j]} on rank i equals
     * {@code recvCounts[i]} on rank j. {@code send} and {@code recv} do not overlap.
     */
    void allToAllV(Buffer send, long[] sendCounts, long[] sendDispls, Buffer recv, long[] recvCounts,
                   long[] recvDispls);

    /** Asynchronous {@link #allToAllV}. */
    Work allToAllVAsync(Buffer send, long[] sendCounts, long[] sendDispls, Buffer recv, long[] recvCounts,
                        long[] recvDispls);

    /**
     * Variable-size gather (MPI_Gatherv): on the root, block r of {@code recv}
     * ({@code recvCounts[r]} elements at {@code displs[r]}) receives rank r's {@code send}. The
     * counts, displacements and {@code recv} are read on the root only (pass null elsewhere).
     */
    void gatherV(Buffer send, Buffer recv, long[] recvCounts, long[] displs, int root);

    /** Asynchronous {@link #gatherV}. */
    Work gatherVAsync(Buffer send, Buffer recv, long[] recvCounts, long[] displs, int root);

    /**
     * Variable-size scatter (MPI_Scatterv): {@code recv} on rank r receives {@code sendCounts[r]}
     * elements at {@code displs[r]} of the root's {@code send}. The counts, displacements and
     * {@code send} are read on the root only (pass null elsewhere).
     */
    void scatterV(Buffer send, long[] sendCounts, long[] displs, Buffer recv, int root);

    /** Asynchronous {@link #scatterV}. */
    Work scatterVAsync(Buffer send, long[] sendCounts, long[] displs, Buffer recv, int root);

    // ---- point to point ----

    /** Sends {@code buffer} to {@code peer}; matched in order with the peer's {@link #recv}. */
    void send(Buffer buffer, int peer);

    /** Asynchronous send. */
    Work sendAsync(Buffer buffer, int peer);

    /** Receives from {@code peer} into {@code buffer}; type and count must match the send. */
    void recv(Buffer buffer, int peer);

    /** Asynchronous receive. */
    Work recvAsync(Buffer buffer, int peer);

    /**
     * Sends {@code send} to {@code dst} and receives from {@code src} into {@code recv}, both at
     * once (MPI_Sendrecv): ranks that each send to one neighbour and receive from another cannot
     * wait for each other, whatever the message sizes. Returns when both are complete. Either peer
     * may be this rank; the receive's type and count must match what {@code src} sends. {@code send}
     * and {@code recv} must not overlap (an {@code IllegalArgumentException} says so). On the host
     * engine, with no async operation pending, both move on the calling thread.
     */
    void sendRecv(Buffer send, int dst, Buffer recv, int src);

    /** Asynchronous {@link #sendRecv}: one work for both halves. */
    Work sendRecvAsync(Buffer send, int dst, Buffer recv, int src);

    // ---- synchronisation ----

    /** Returns once every rank has entered the barrier. */
    void barrier();

    /** Asynchronous barrier. */
    Work barrierAsync();

    // ---- diagnosis and recovery ----

    /**
     * Writes this rank's flight recorder (the last {@code JCCL_TRACE_BUFFER} operations with
     * their state and times) as {@code dir/jccl-trace-<comm>-rank<r>.json}; {@code jccl doctor dir}
     * reads every rank's file. Dumps also happen by themselves on timeout, failure and abort when
     * {@code JCCL_TRACE_DIR} is set.
     *
     * @return the file written
     * @throws InvalidUsageException for a backend without a flight recorder
     */
    default java.nio.file.Path dumpFlightRecord(java.nio.file.Path dir) {
        throw new InvalidUsageException("the " + backend() + " backend keeps no flight recorder");
    }

    /**
     * Collective over the surviving ranks: a new communicator of every rank except {@code
     * excluded}, renumbered in the old order. Every survivor must pass the same set. This
     * communicator stays as it is (close it).
     *
     * @throws InvalidUsageException for a backend that cannot shrink
     */
    default Communicator shrink(java.util.Set<Integer> excluded) {
        throw new InvalidUsageException("the " + backend() + " backend cannot shrink a communicator: create a new one "
                + "over the surviving ranks with Jccl.init");
    }

    /**
     * Collective over the surviving ranks: {@link #shrink(java.util.Set)} excluding the ranks this
     * communicator has seen fail or time out, agreed with the other survivors through the store.
     *
     * @throws InvalidUsageException for a backend that cannot shrink
     */
    default Communicator shrinkExcludingFailed() {
        throw new InvalidUsageException("the " + backend() + " backend cannot shrink a communicator: create a new one "
                + "over the surviving ranks with Jccl.init");
    }

    // ---- lifecycle ----

    /**
     * Collective: ranks with the same {@code color} form a new communicator, ordered by {@code
     * key} then by old rank. A rank passing {@link #NO_COLOR} gets null.
     */
    Communicator split(int color, int key);

    /**
     * Fails every pending and future operation of this communicator on this rank and tells the
     * other ranks, whose pending operations then fail too. Callable from any thread; returns
     * promptly.
     */
    void abort();

    /** Releases the communicator's resources. Pending operations fail. Idempotent. */
    @Override
    void close();
}
