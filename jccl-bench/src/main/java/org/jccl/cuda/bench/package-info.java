/**
 * Benchmarks of the GPU backend: {@link org.jccl.cuda.bench.NcclBench}, an nccl-tests style sweep
 * and jccl's host cost per call. Module jccl-bench, outside the published jars; bench/gpu/run-gpu.sh
 * runs it.
 */
package org.jccl.cuda.bench;
