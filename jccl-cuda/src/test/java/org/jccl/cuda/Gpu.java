package org.jccl.cuda;

import org.jccl.testing.Require;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/** Test helpers for GPU tests: skipping without GPUs, running one task per rank in parallel, the ranks' logs. */
final class Gpu {
    private Gpu() {
    }

    /**
     * Skips the test (with a one-line reason) unless CUDA, NCCL and {@code n} GPUs are there; fails it
     * instead when JCCL_REQUIRE names gpu ({@link Require}).
     */
    static void assume(int n) {
        String why = null;
        if (!Cuda.isAvailable()) {
            why = "no CUDA driver: " + Cuda.unavailabilityCause();
        } else if (!Nccl.isAvailable()) {
            why = "no NCCL: " + Nccl.unavailabilityCause();
        } else if (CudaDevice.count() < n) {
            why = "needs " + n + " GPUs, this machine has " + CudaDevice.count();
        }
        Require.require("gpu", why);
    }

    /**
     * The options of rank {@code rank} of {@code size} thread ranks of one process on {@code dev},
     * meeting through the store a test serves on {@code port} (the conformance kit's thread worlds).
     */
    static org.jccl.Options threadRank(int rank, int size, CudaDevice dev, int port, String job, Duration timeout) {
        return org.jccl.Options.of(rank, size).withDevice(dev).withStore("127.0.0.1", port).withJobId(job)
                .withTimeout(timeout).withSetting("JCCL_STORE_SERVED", "1");
    }

    /** Opens every visible GPU. */
    static List<CudaDevice> openAll() {
        List<CudaDevice> d = new ArrayList<>();
        for (int i = 0; i < CudaDevice.count(); i++) {
            d.add(CudaDevice.open(i));
        }
        return d;
    }

    /** The floats of a FLOAT32 device buffer, copied to the host. */
    static float[] download(DeviceBuffer d) {
        float[] out = new float[(int) d.count()];
        d.copyTo(org.jccl.HostBuffer.of(out));
        return out;
    }

    /** Closes {@code comms}, then {@code devs}; either may be null (nothing opened). */
    static void closeAll(List<NcclCommunicator> comms, List<CudaDevice> devs) {
        if (comms != null) {
            comms.forEach(NcclCommunicator::close);
        }
        if (devs != null) {
            devs.forEach(CudaDevice::close);
        }
    }

    /** {@link #onEach}, asserting that every rank's task returned "ok" (else what it returned names the problem). */
    static void assertEachOk(List<NcclCommunicator> comms, Duration limit, Function<NcclCommunicator, String> task)
            throws Exception {
        onEach(comms, limit, task).forEach(s -> org.junit.jupiter.api.Assertions.assertEquals("ok", s));
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

    /**
     * A thread dump's threads that are in jccl, their jccl frames and the one on top; the rest of
     * the log (before the dump) as {@link #rankLogs} keeps it.
     */
    private static String compactDump(String log) {
        int at = log.indexOf("Full thread dump");
        if (at < 0) {
            return log;
        }
        StringBuilder b = new StringBuilder(log.substring(0, at)).append("thread dump, threads in jccl:\n");
        for (String thread : log.substring(at).split("\n\n")) {
            if (!thread.contains("org.jccl")) {
                continue;
            }
            String[] lines = thread.split("\n");
            boolean top = true;
            for (String line : lines) {
                String t = line.trim();
                if (t.startsWith("\"")) {
                    b.append("  ").append(t, 0, Math.min(t.length(), 120)).append('\n');
                } else if (t.startsWith("at ") && (top || t.contains("org.jccl.cuda") || t.contains("org.jccl.kit"))) {
                    b.append("      ").append(t).append('\n');
                    top = false;
                }
            }
        }
        return b.toString();
    }

    /**
     * Every rank's log ({@code dir/rank<r>.log}, as the process tests write them), thread dumps
     * compacted, the last 12000 characters of each but every KIT-FAIL line kept.
     */
    static String rankLogs(Path dir, int size) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int r = 0; r < size; r++) {
            Path p = dir.resolve("rank" + r + ".log");
            if (Files.exists(p)) {
                String s = compactDump(Files.readString(p));
                sb.append("---- rank ").append(r).append('\n');
                if (s.length() > 12000) {
                    for (String line : s.substring(0, s.length() - 12000).split("\n")) {
                        if (line.startsWith("KIT-")) {
                            sb.append(line).append('\n');
                        }
                    }
                    sb.append("...\n").append(s.substring(s.length() - 12000));
                } else {
                    sb.append(s);
                }
            }
        }
        return sb.toString();
    }
}
