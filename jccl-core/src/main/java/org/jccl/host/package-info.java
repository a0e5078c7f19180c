/**
 * The built-in host engine: collectives on host memory. {@link org.jccl.host.HostBackend} picks
 * the transport from where the ranks are: shared memory inside one host ({@link
 * org.jccl.host.HostCommunicator} over {@code org.jccl.host.shm}, algorithms in {@code
 * org.jccl.host.shm.algo}), TCP between hosts ({@code org.jccl.host.tcp}, algorithms in {@code
 * org.jccl.host.tcp.algo}), or both ({@code org.jccl.host.hier}). All of them run on the one
 * runtime of {@link org.jccl.host.engine}, with fixed-order reduction kernels ({@code
 * org.jccl.host.kernel}) and thresholds in {@link org.jccl.host.tune}.
 */
package org.jccl.host;
