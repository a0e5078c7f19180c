/**
 * The host engine's reduction kernels: {@link org.jccl.host.kernel.Reductions} (n-input reduce,
 * two-input accumulate, scale, divide over {@link java.lang.foreign.MemorySegment}s, Vector API
 * with a scalar fallback) and {@link org.jccl.host.kernel.LowPrecision} (exact float conversions
 * for FLOAT16, BFLOAT16 and the FP8 types).
 */
package org.jccl.host.kernel;
