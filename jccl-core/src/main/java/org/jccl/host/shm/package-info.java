/**
 * The shared-memory transport: segment layout, mapping, control words and waits. The collective
 * algorithms over it, one file each, are in {@link org.jccl.host.shm.algo}.
 */
package org.jccl.host.shm;
