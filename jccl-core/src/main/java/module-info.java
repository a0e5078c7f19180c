/**
 * jccl-core: the API ({@code org.jccl}), the bootstrap store and environment discovery, and the
 * built-in host engine. No run-time dependencies; the Vector API is used when the
 * {@code jdk.incubator.vector} module is present, else scalar kernels.
 */
module org.jccl {
    requires static jdk.incubator.vector;
    requires java.management;
    requires jdk.management;

    exports org.jccl;
    exports org.jccl.bootstrap;
    exports org.jccl.spi;
    exports org.jccl.host;
    exports org.jccl.host.engine;
    exports org.jccl.host.tune;
    exports org.jccl.diag;
    exports org.jccl.internal to org.jccl.cuda, org.jccl.mpi, org.jccl.cli, org.jccl.spark;
    // Reduction kernels and low-precision conversions: CUDA result checks, jccl perf, and the MPI
    // backend (it reduces the types MPI lacks with them) use them.
    exports org.jccl.host.kernel to org.jccl.cuda, org.jccl.mpi, org.jccl.cli;

    uses org.jccl.spi.Backend;
    provides org.jccl.spi.Backend with org.jccl.host.HostBackend;
}
