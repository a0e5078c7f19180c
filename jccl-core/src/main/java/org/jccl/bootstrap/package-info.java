/**
 * Bootstrap: the rendezvous {@link org.jccl.bootstrap.Store} (TCP, file, prefix) and the discovery
 * of rank, size and store address from the environment (JCCL_*, torchrun, Slurm, Open MPI).
 */
package org.jccl.bootstrap;
