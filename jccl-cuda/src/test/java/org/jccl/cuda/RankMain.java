package org.jccl.cuda;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.jccl.Communicator;
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
        int code;
        try {
            code = switch (mode) {
                case "matrix" -> matrix(rank, size, dir);
                case "fault" -> fault(rank, size, dir);
                default -> throw new IllegalArgumentException("mode " + mode);
            };
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
            System.out.printf("[%d] CASES %d FAILURES %d in %.1f s%n", rank, cases.size(), failures,
                    (System.nanoTime() - t0) / 1e9);
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
            long ms = (System.nanoTime() - t0) / 1_000_000;
            JcclException e = w.exception();
            System.out.println("[0] PENDING_FAILED after " + ms + " ms: " + (e == null ? "NO EXCEPTION" : e));
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

    private static float[] filled(int n, float v) {
        float[] a = new float[n];
        java.util.Arrays.fill(a, v);
        return a;
    }
}
