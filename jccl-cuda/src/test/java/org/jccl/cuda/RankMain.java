package org.jccl.cuda;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.jccl.Communicator;
import org.jccl.CollectiveTimeoutException;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.JcclException;
import org.jccl.Options;
import org.jccl.ReduceOp;

/**
 * One rank of a multi-process GPU test, started by {@link NcclProcessTest} with the same java and
 * class path: {@code RankMain MODE RANK SIZE DIR}. Forms its communicator through
 * {@link Jccl#init} (ServiceLoader picks the nccl backend because the options carry a
 * CudaDevice; the ncclUniqueId travels through a {@link DirStore} in DIR). Prints its findings
 * and exits 0 on success.
 */
public final class RankMain {
    private RankMain() {
    }

    /** Entry point. */
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int rank = Integer.parseInt(args[1]);
        int size = Integer.parseInt(args[2]);
        Path dir = Path.of(args[3]);
        runAndExit(rank, () -> switch (mode) {
            case "matrix" -> matrix(rank, size, dir);
            case "fault" -> fault(rank, size, dir);
            case "check" -> check(rank, size, dir);
            case "abort" -> abortPropagates(rank, size, dir);
            case "shrink" -> shrink(rank, size, dir, false);
            case "shrink-hb" -> shrink(rank, size, dir, true);
            default -> throw new IllegalArgumentException("mode " + mode);
        });
    }

    /** What a rank's process does; returns its exit code. */
    interface Body {
        int run() throws Throwable;
    }

    /**
     * Runs {@code body} and exits with its code; with 3 when it throws, after printing "[rank]
     * ERROR" and the stack trace.
     */
    static void runAndExit(int rank, Body body) {
        int code;
        try {
            code = body.run();
        } catch (Throwable t) {
            System.out.println("[" + rank + "] ERROR " + t);
            t.printStackTrace(System.out);
            code = 3;
        }
        System.out.flush();
        System.exit(code);
    }

    private static NcclCommunicator init(int rank, int size, Path dir, CudaDevice dev, Duration timeout) {
        Options o = Options.of(rank, size).withDevice(dev).withStore(new DirStore(dir.resolve("store")))
                .withTimeout(timeout).withJobId("gputest");
        Communicator c = Jccl.init(o);
        if (!(c instanceof NcclCommunicator nc)) {
            throw new AssertionError("Jccl.init chose " + c.backend() + ", expected nccl");
        }
        return nc;
    }

    private static int matrix(int rank, int size, Path dir) throws Exception {
        try (CudaDevice dev = CudaDevice.open(rank); NcclCommunicator comm = init(rank, size, dir, dev,
                Duration.ofSeconds(120))) {
            List<Matrix.Case> cases = Matrix.cases(size, dev.supportsFp8(), Matrix.SIZES);
            int failures = 0;
            long t0 = System.nanoTime();
            for (Matrix.Case c : cases) {
                String e = Matrix.run(c, List.of(comm));
                if (e != null) {
                    failures++;
                    System.out.println("[" + rank + "] FAIL " + c.name() + ": " + e);
                }
            }
            System.out.println(String.format("[%d] CASES %d FAILURES %d in %.1f s", rank, cases.size(), failures,
                    (System.nanoTime() - t0) / 1e9)); // one write: a log line on stderr cannot split it
            failures += ipc(comm, rank, size, dir);
            return failures == 0 ? 0 : 1;
        }
    }

    /** Rank 0 exports a buffer through a CUDA IPC handle; every other rank maps and reads it. */
    private static int ipc(NcclCommunicator comm, int rank, int size, Path dir) {
        DirStore store = new DirStore(dir.resolve("ipc"));
        CudaDevice dev = comm.device();
        int[] pattern = new int[4096];
        for (int i = 0; i < pattern.length; i++) {
            pattern[i] = i * 7 + 1;
        }
        if (rank == 0) {
            try (DeviceBuffer b = dev.allocate(DataType.INT32, pattern.length)) {
                b.copyFrom(HostBuffer.of(pattern));
                dev.makeCurrent();
                store.set("handle", CudaDriver.ipcGetMemHandle(b.pointer()));
                comm.barrier(); // the others map and read
                comm.barrier(); // the others are done
            }
            System.out.println("[0] IPC exported");
            return 0;
        }
        byte[] h = store.get("handle", Duration.ofSeconds(60));
        comm.barrier();
        dev.makeCurrent();
        long p = CudaDriver.ipcOpenMemHandle(h);
        int[] back = new int[pattern.length];
        CudaDriver.memcpyDtoH(java.lang.foreign.MemorySegment.ofArray(back), p, 4L * pattern.length);
        CudaDriver.ipcCloseMemHandle(p);
        comm.barrier();
        boolean ok = java.util.Arrays.equals(pattern, back);
        System.out.println("[" + rank + "] IPC " + (ok ? "ok" : "MISMATCH"));
        return ok ? 0 : 1;
    }

    /**
     * Both ranks all-reduce once; then the parent SIGKILLs rank 1. Rank 0's next all-reduce must
     * fail by its deadline (the watchdog aborts the communicator), after which rank 0 forms a new
     * communicator and uses it.
     */
    private static int fault(int rank, int size, Path dir) throws Exception {
        Duration timeout = Duration.ofSeconds(8);
        try (CudaDevice dev = CudaDevice.open(rank); DeviceBuffer b = dev.allocate(DataType.FLOAT32, 1 << 20)) {
            NcclCommunicator comm = init(rank, size, dir, dev, timeout);
            b.copyFrom(HostBuffer.of(filled(1 << 20, 1)));
            comm.allReduce(b, ReduceOp.SUM);
            float[] out = new float[1 << 20];
            b.copyTo(HostBuffer.of(out));
            if (out[0] != size) {
                System.out.println("[" + rank + "] first all-reduce wrong: " + out[0]);
                return 1;
            }
            Files.writeString(dir.resolve("ready-" + rank), "ok");
            if (rank != 0) {
                Thread.sleep(600_000); // waits to be killed
                return 1;
            }
            while (!Files.exists(dir.resolve("killed"))) {
                Thread.sleep(10);
            }
            long t0 = System.nanoTime();
            NcclWork w = comm.allReduceAsync(b, ReduceOp.SUM);
            // isDone() never enforces the deadline itself: only the watchdog can fail the work.
            while (!w.isDone() && System.nanoTime() - t0 < 120_000_000_000L) {
                Thread.sleep(5);
            }
            long now = System.nanoTime();
            long ms = (now - t0) / 1_000_000;
            JcclException e = w.exception();
            System.out.println("[0] PENDING_FAILED after " + ms + " ms, " + (now - killedAt(dir)) / 1_000_000
                    + " ms after the kill: " + (e == null ? "NO EXCEPTION" : e));
            if (e == null) {
                return 1;
            }
            try {
                comm.allReduce(b, ReduceOp.SUM);
                System.out.println("[0] a call after the abort did not fail");
                return 1;
            } catch (JcclException expected) {
                System.out.println("[0] LATER_CALL_REFUSED " + expected.getClass().getSimpleName());
            }
            comm.close();
            // The process can still form a new communicator and use it.
            try (NcclCommunicator fresh = NcclCommunicator.create(dev, 0, 1, Nccl.newUniqueId(), Duration.ofSeconds(30))) {
                b.copyFrom(HostBuffer.of(filled(1 << 20, 5)));
                fresh.allReduce(b, ReduceOp.SUM);
                b.copyTo(HostBuffer.of(out));
                System.out.println("[0] RECOVERED new communicator, all-reduce gave " + out[123]);
                return out[123] == 5f ? 0 : 1;
            }
        }
    }

    /**
     * Under JCCL_CHECK=1: a correct all-reduce; a count mismatch and an op mismatch that fail on
     * every rank before anything is launched (the communicator stays usable); then the last rank
     * skips a collective and the others' timeout names it.
     */
    private static int check(int rank, int size, Path dir) throws Exception {
        try (CudaDevice dev = CudaDevice.open(rank); DeviceBuffer b = dev.allocate(DataType.FLOAT32, 1024)) {
            NcclCommunicator comm = init(rank, size, dir, dev, Duration.ofSeconds(6));
            b.copyFrom(HostBuffer.of(filled(1024, rank + 1)));
            comm.allReduce(b, ReduceOp.SUM);
            float[] out = new float[1024];
            b.copyTo(HostBuffer.of(out));
            float want = size * (size + 1) / 2f;
            if (out[1023] != want) {
                System.out.println("[" + rank + "] first all-reduce gave " + out[1023] + ", want " + want);
                return 1;
            }
            long m0 = System.nanoTime();
            try {
                comm.allReduce(rank == 0 ? b : b.slice(0, 1000), ReduceOp.SUM);
                System.out.println("[" + rank + "] a count mismatch went through");
                return 1;
            } catch (org.jccl.CollectiveMismatchException e) {
                System.out.println("[" + rank + "] MISMATCH_COUNT " + e.getMessage());
                System.out.println("[" + rank + "] MISMATCH_COUNT_FAILED after " + (System.nanoTime() - m0) / 1_000_000 + " ms");
            }
            m0 = System.nanoTime();
            try {
                if (rank == 0) {
                    comm.broadcast(b, 0);
                } else {
                    comm.allReduce(b, ReduceOp.MAX);
                }
                System.out.println("[" + rank + "] an op mismatch went through");
                return 1;
            } catch (org.jccl.CollectiveMismatchException e) {
                System.out.println("[" + rank + "] MISMATCH_OP " + e.getMessage());
                System.out.println("[" + rank + "] MISMATCH_OP_FAILED after " + (System.nanoTime() - m0) / 1_000_000 + " ms");
            }
            b.copyFrom(HostBuffer.of(filled(1024, 2)));
            comm.allReduce(b, ReduceOp.SUM);
            b.copyTo(HostBuffer.of(out));
            System.out.println("[" + rank + "] AFTER_MISMATCH " + (out[7] == 2f * size ? "ok" : "WRONG " + out[7]));
            if (out[7] != 2f * size) {
                return 1;
            }
            if (rank == size - 1) {
                Thread.sleep(9_000); // skips the next collective until the others gave up
                return 0;
            }
            try {
                Failed f = mustFail(comm, b, rank, "the skipped collective");
                if (f == null) {
                    return 1;
                }
                if (!(f.error() instanceof CollectiveTimeoutException e)) {
                    throw f.error();
                }
                System.out.println("[" + rank + "] MISSING " + e.missingRanks() + " after " + f.ms() + " ms: "
                        + e.getMessage());
                return e.missingRanks().equals(List.of(size - 1)) ? 0 : 1;
            } finally {
                comm.abort();
                comm.close();
            }
        }
    }

    /**
     * Every rank all-reduces; the parent SIGKILLs the last rank; the survivors' next all-reduce
     * fails by the deadline, they shrinkExcludingFailed and all-reduce correctly on the rest.
     */
    private static int shrink(int rank, int size, Path dir, boolean heartbeats) throws Exception {
        Duration timeout = Duration.ofSeconds(8);
        try (CudaDevice dev = CudaDevice.open(rank); DeviceBuffer b = dev.allocate(DataType.FLOAT32, 4096)) {
            NcclCommunicator comm;
            if (heartbeats) {
                // A TCP store hosted by rank 0: the store's heartbeat monitor sees a killed rank's connection close.
                int port = Integer.parseInt(System.getenv("JCCL_TEST_STORE_PORT"));
                Communicator c = Jccl.init(Options.of(rank, size).withDevice(dev).withStore("127.0.0.1", port)
                        .withTimeout(timeout).withJobId("gpuhb").withHeartbeat(Duration.ofSeconds(1)));
                comm = (NcclCommunicator) c;
            } else {
                comm = init(rank, size, dir, dev, timeout);
            }
            b.copyFrom(HostBuffer.of(filled(4096, 1)));
            comm.allReduce(b, ReduceOp.SUM);
            Files.writeString(dir.resolve("ready-" + rank), "ok");
            if (rank == size - 1) {
                Thread.sleep(600_000); // waits to be killed
                return 1;
            }
            while (!Files.exists(dir.resolve("killed"))) {
                Thread.sleep(10);
            }
            Failed f = mustFail(comm, b, rank, "the all-reduce with a dead rank");
            if (f == null) {
                return 1;
            }
            System.out.println("[" + rank + "] FAILED after " + f.ms() + " ms, " + (f.at() - killedAt(dir)) / 1_000_000
                    + " ms after the kill: " + f.error().getClass().getSimpleName() + ": " + f.error().getMessage());
            long t1 = System.nanoTime();
            try (NcclCommunicator small = comm.shrinkExcludingFailed()) {
                System.out.println("[" + rank + "] SHRUNK to rank " + small.rank() + " of " + small.size() + " in "
                        + (System.nanoTime() - t1) / 1_000_000 + " ms, failed " + comm.failedRanks());
                comm.close();
                b.copyFrom(HostBuffer.of(filled(4096, small.rank() + 1)));
                small.allReduce(b, ReduceOp.SUM);
                float[] out = new float[4096];
                b.copyTo(HostBuffer.of(out));
                int n = small.size();
                float want = n * (n + 1) / 2f;
                System.out.println("[" + rank + "] AFTER_SHRINK sum " + out[4095] + " want " + want);
                return small.size() == size - 1 && out[4095] == want && out[0] == want ? 0 : 1;
            }
        }
    }

    /**
     * Rank 1 calls abort() while the others wait in an all-reduce it never joins: they must fail
     * with the abort's reason, learned through the store, within about a second (never "complete").
     */
    private static int abortPropagates(int rank, int size, Path dir) throws Exception {
        try (CudaDevice dev = CudaDevice.open(rank); DeviceBuffer b = dev.allocate(DataType.FLOAT32, 4096)) {
            NcclCommunicator comm = init(rank, size, dir, dev, Duration.ofSeconds(60));
            b.copyFrom(HostBuffer.of(filled(4096, 1)));
            comm.allReduce(b, ReduceOp.SUM);
            Files.writeString(dir.resolve("ready-" + rank), "ok");
            if (rank == 1) {
                for (int r = 0; r < size; r++) {
                    while (!Files.exists(dir.resolve("ready-" + r))) {
                        Thread.sleep(5);
                    }
                }
                Thread.sleep(1000);
                long t0 = System.nanoTime();
                Files.writeString(dir.resolve("abort-called.tmp"), Long.toString(t0));
                Files.move(dir.resolve("abort-called.tmp"), dir.resolve("abort-called"),
                        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                comm.abort();
                System.out.println("[1] ABORT returned after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
                comm.close();
                return 0;
            }
            try {
                Failed f = mustFail(comm, b, rank, "the all-reduce without rank 1");
                if (f == null) {
                    return 1;
                }
                JcclException e = f.error();
                // rank 1 wrote the time just before it called abort(): the file is there by now
                long abortCalled = Long.parseLong(Files.readString(dir.resolve("abort-called")).trim());
                System.out.println("[" + rank + "] ABORT_SEEN after " + f.ms() + " ms, "
                        + (f.at() - abortCalled) / 1_000_000 + " ms after abort() was called: "
                        + e.getClass().getSimpleName() + ": " + e.getMessage());
                return e instanceof org.jccl.AbortedException && e.getMessage().contains("rank 1 aborted") ? 0 : 1;
            } finally {
                comm.close();
            }
        }
    }

    /**
     * The System.nanoTime at which the parent SIGKILLed a rank, from the "killed" file it writes
     * afterwards (the same clock in every process of this machine): times to error are measured
     * from the fault.
     */
    private static long killedAt(Path dir) throws java.io.IOException {
        return Long.parseLong(Files.readString(dir.resolve("killed")).trim());
    }

    /** How an all-reduce that had to fail failed: the exception, when (System.nanoTime) and after how many ms. */
    private record Failed(JcclException error, long at, long ms) {
    }

    /** An all-reduce of {@code b} that must fail; null, after saying "{@code what} completed", when it did not. */
    private static Failed mustFail(NcclCommunicator comm, DeviceBuffer b, int rank, String what) {
        long t0 = System.nanoTime();
        try {
            comm.allReduce(b, ReduceOp.SUM);
        } catch (JcclException e) {
            long now = System.nanoTime();
            return new Failed(e, now, (now - t0) / 1_000_000);
        }
        System.out.println("[" + rank + "] " + what + " completed");
        return null;
    }

    private static float[] filled(int n, float v) {
        float[] a = new float[n];
        java.util.Arrays.fill(a, v);
        return a;
    }
}
