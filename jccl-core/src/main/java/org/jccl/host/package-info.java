/**
 * The built-in host engine: collectives on host memory between the ranks of one host over
 * shared memory ({@link org.jccl.host.shm}), with one file per algorithm ({@link
 * org.jccl.host.shm.algo}) and fixed-order reduction kernels ({@link org.jccl.host.kernel}).
 */
package org.jccl.host;
