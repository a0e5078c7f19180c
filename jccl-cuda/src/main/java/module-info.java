/** jccl-cuda: the CUDA driver and NCCL bound through the Foreign Function and Memory API. */
module org.jccl.cuda {
    requires org.jccl;

    exports org.jccl.cuda;

    provides org.jccl.spi.Backend with org.jccl.cuda.NcclBackend;
}
