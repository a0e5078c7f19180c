/**
 * Collective algorithms of the host engine over the shared-memory chunk protocol of
 * {@link org.jccl.host.shm.ShmTransport}: one file per algorithm. Every reduction reduces all
 * ranks' inputs in rank order with one rounding, so every algorithm gives bitwise identical
 * results on every rank.
 */
package org.jccl.host.algo;
