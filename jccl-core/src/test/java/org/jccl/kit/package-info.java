/**
 * The conformance kit: one set of cases that defines what "works" means for every backend. A case
 * runs on every rank of a communicator, against an independent reference ({@link
 * org.jccl.kit.Reference}); a {@link org.jccl.kit.Mem} says where its buffers live (host memory,
 * a GPU), and {@link org.jccl.kit.Traits} is the one table of what differs between backends.
 * Worlds (threads, processes, hosts, mpirun, GPUs) form the communicator; {@link
 * org.jccl.kit.Kit#run} runs every case on it, on every rank, in the same order.
 */
package org.jccl.kit;
