/**
 * jccl-mpi: the "mpi" backend, host collectives on Open MPI (4.1, 5.x) bound through the Foreign
 * Function and Memory API. Selected with {@code JCCL_BACKEND=mpi} or {@code Options.withBackend("mpi")}.
 */
module org.jccl.mpi {
    // MpiBackend's signatures name org.jccl's types.
    requires transitive org.jccl;

    exports org.jccl.mpi;

    provides org.jccl.spi.Backend with org.jccl.mpi.MpiBackend;
}
