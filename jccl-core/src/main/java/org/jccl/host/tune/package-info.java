/**
 * The host engine's algorithm choices and their thresholds in one place: {@link
 * org.jccl.host.tune.Tuner} picks the all-reduce algorithm by size, ranks and hosts
 * ({@code JCCL_ALGO} forces one, {@code JCCL_ONESHOT_MAX_BYTES} moves the one-shot limit).
 */
package org.jccl.host.tune;
