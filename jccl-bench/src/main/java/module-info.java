/**
 * jccl-bench: the GPU benchmark {@link org.jccl.cuda.bench.NcclBench} that bench/gpu/run-gpu.sh
 * runs. Built with the reactor, never published; it uses jccl-cuda's public API only.
 */
module org.jccl.cuda.bench {
    requires org.jccl;
    requires org.jccl.cuda;

    exports org.jccl.cuda.bench;
}
