/** Benchmarks of the GPU backend: {@link org.jccl.cuda.bench.NcclBench}, an nccl-tests style sweep. */
package org.jccl.cuda.bench;
