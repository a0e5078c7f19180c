package org.jccl.mpi;

import org.jccl.Communicator;
import org.jccl.JcclException;
import org.jccl.Options;
import org.jccl.bootstrap.Store;
import org.jccl.spi.Backend;
import org.jccl.spi.Liveness;

/**
 * The "mpi" backend: host-memory collectives on Open MPI (4.1, 5.x) through FFM. Never chosen
 * automatically: select it with {@code JCCL_BACKEND=mpi} or {@code Options.withBackend("mpi")}
 * and start every rank with {@code mpirun} (or srun with PMIx).
 *
 * <h2>The world</h2>
 * MPI's launcher defines the job, so a communicator from {@code Jccl.init} spans
 * MPI_COMM_WORLD: its rank and size are MPI's. No rendezvous store is needed
 * ({@link #needsStore()} is false: under mpirun, Open MPI's variables are enough). When the
 * options carry a rank and size (JCCL_RANK / JCCL_WORLD_SIZE, or Open MPI's own variables) they
 * must agree with MPI's, otherwise {@link #create} fails and says so.
 *
 * <h2>What maps to what</h2>
 * <ul>
 *   <li>Types: INT8..UINT64 to MPI_INT8_T..MPI_UINT64_T, FLOAT32 to MPI_FLOAT, FLOAT64 to
 *       MPI_DOUBLE; FLOAT16, BFLOAT16 and the FP8 types to contiguous byte types of their size.</li>
 *   <li>Operators: SUM, PROD, MIN, MAX, BAND, BOR, BXOR to MPI's own for the types MPI knows
 *       (MIN/MAX on floats then follow C comparisons for NaN and signed zeros, as in MPI); for
 *       FLOAT16/BFLOAT16/FP8, and for sums of INT8/UINT8 (which Open MPI 4.1's AVX component
 *       saturates), a user-defined op calls the host engine's kernel ({@link MpiRuntime}
 *       documents its cost). PREMUL_SUM scales each rank's input first, AVG
 *       divides the sum once ({@code org.jccl.host.kernel.Reductions}), so results equal the host
 *       engine's whenever the sums are exact.</li>
 *   <li>Collectives: MPI_Iallreduce, MPI_Ibcast, MPI_Ireduce, MPI_Iallgather,
 *       MPI_Ireduce_scatter_block, MPI_Ialltoall, MPI_Igather, MPI_Iscatter, MPI_Ibarrier,
 *       MPI_Isend/MPI_Irecv; in place with MPI_IN_PLACE. Blocking calls are these plus MPI_Test
 *       polling until the communicator's deadline, or, with {@code JCCL_MPI_BLOCKING=native},
 *       MPI's blocking forms watched by a thread that calls MPI_Abort past the deadline.</li>
 *   <li>split: MPI_Comm_split; abort: MPI_Abort (Open MPI ends the whole job); errors:
 *       MPI_ERRORS_RETURN on every communicator, each code reported with MPI_Error_string.</li>
 *   <li>Counts are C ints: at most 2^31-1 elements per rank and call.</li>
 * </ul>
 * MPI is initialised by the first communicator and finalised at JVM exit ({@link MpiRuntime}).
 */
public final class MpiBackend implements Backend {

    /** For ServiceLoader. */
    public MpiBackend() {
    }

    @Override
    public String name() {
        return "mpi";
    }

    @Override
    public boolean isAvailable() {
        return Mpi.isAvailable();
    }

    @Override
    public String unavailabilityCause() {
        return Mpi.unavailabilityCause();
    }

    /** Never the automatic choice: MPI is asked for by name. */
    @Override
    public boolean prefers(Options options) {
        return false;
    }

    /** False: MPI's launcher provides the world. */
    @Override
    public boolean needsStore() {
        return false;
    }

    /** {@code liveness} is not watched: a rank that dies is MPI's to handle (mpirun ends the job). */
    @Override
    public Communicator create(Options options, Store store, Liveness liveness) {
        try {
            if (options.device() != null) {
                throw new IllegalArgumentException("options name device " + options.device() + " but the mpi backend "
                        + "moves host memory: drop the device, or use the nccl backend for GPU buffers");
            }
            MpiRuntime rt = MpiRuntime.get(options.timeout());
            if (rt.worldRank != options.rank() || rt.worldSize != options.size()) {
                throw new JcclException("the options say rank " + options.rank() + " of " + options.size()
                        + " but MPI_COMM_WORLD has this process as rank " + rt.worldRank + " of " + rt.worldSize
                        + ": a jccl MPI communicator spans MPI_COMM_WORLD; start every rank with mpirun and leave "
                        + "JCCL_RANK / JCCL_WORLD_SIZE unset (Open MPI's variables are read), or make them agree");
            }
            return MpiCommunicator.world(rt, options.timeout(), store);
        } catch (RuntimeException | Error e) {
            if (store != null) {
                store.close();
            }
            throw e;
        }
    }
}
