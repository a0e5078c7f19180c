package org.jccl.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/** Test helpers for GPU tests: skipping without GPUs, and running one task per rank in parallel. */
final class Gpu {
    private Gpu() {
    }

    /** Skips the test (with a one-line reason) unless CUDA, NCCL and {@code n} GPUs are there. */
    static void assume(int n) {
        assumeTrue(Cuda.isAvailable(), () -> "no CUDA driver: " + Cuda.unavailabilityCause());
        assumeTrue(Nccl.isAvailable(), () -> "no NCCL: " + Nccl.unavailabilityCause());
        assumeTrue(CudaDevice.count() >= n, () -> "needs " + n + " GPUs, this machine has " + CudaDevice.count());
    }

    /** Opens every visible GPU. */
    static List<CudaDevice> openAll() {
        List<CudaDevice> d = new ArrayList<>();
        for (int i = 0; i < CudaDevice.count(); i++) {
            d.add(CudaDevice.open(i));
        }
        return d;
    }

    /** Runs {@code task} once per communicator, each on its own thread, and returns the results in rank order. */
    static <T> List<T> onEach(List<NcclCommunicator> comms, Duration limit, Function<NcclCommunicator, T> task)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(comms.size());
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (NcclCommunicator c : comms) {
                fs.add(pool.submit(() -> task.apply(c)));
            }
            List<T> out = new ArrayList<>();
            for (Future<T> f : fs) {
                out.add(f.get(limit.toMillis(), TimeUnit.MILLISECONDS));
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }
}
