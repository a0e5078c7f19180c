/**
 * The "mpi" backend: jccl's {@link org.jccl.Communicator} on Open MPI (4.1, 5.x), bound through
 * the Foreign Function and Memory API (no JNI, no C shim). Select it with
 * {@code JCCL_BACKEND=mpi} or {@code Options.withBackend("mpi")} and start the program with
 * {@code mpirun}; {@link org.jccl.mpi.MpiBackend} documents the mapping and its limits.
 */
package org.jccl.mpi;
