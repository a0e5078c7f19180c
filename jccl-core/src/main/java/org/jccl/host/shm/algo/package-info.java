/**
 * Collective algorithms of the host engine over the shared-memory chunk protocol of
 * {@link org.jccl.host.shm.ShmTransport}: one file per algorithm, and {@code Chunks}, the chunk
 * arithmetic and steps they share. They live apart from the transport so that the transport's
 * package holds only the segment layout and its waits: an algorithm depends on the transport's
 * public chunk protocol, never the reverse ({@link org.jccl.host.HostCommunicator} picks them).
 * Every reduction reduces all ranks' inputs in rank order with one rounding, so every algorithm
 * gives bitwise identical results on every rank.
 */
package org.jccl.host.shm.algo;
