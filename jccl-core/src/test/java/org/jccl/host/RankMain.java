package org.jccl.host;

import static org.jccl.kit.Failures.same;
import static org.jccl.kit.Failures.wrong;

import org.jccl.kit.Reference;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.ReduceOp;

/**
 * One rank of a multi-process test, configured by the JCCL_* environment. Mode "check" runs every
 * collective on seeded data and exits 0 when all match {@link Reference}, 1 otherwise; mode
 * "loop" prints "ready" and all-reduces until it fails, then prints the exception and exits 3.
 * A failure (of a collective, or of {@code Jccl.init}) first prints {@code TIME_TO_ERROR at=T
 * callStart=S blames=B class=C}: T the System.nanoTime of the failure and S that of the start of
 * the failing call (the same clock as every process of this machine, so the test can measure
 * from the fault), B the rank a {@link org.jccl.PeerFailureException} names or the missing ranks
 * of a {@link org.jccl.CollectiveTimeoutException}.
 */
public final class RankMain {
    private RankMain() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "check";
        long initStart = System.nanoTime();
        Communicator c;
        try {
            c = Jccl.init();
        } catch (RuntimeException e) {
            timeToError(initStart, e);
            throw e;
        }
        try (Communicator comm = c) {
            if (mode.equals("loop")) {
                loop(comm);
                return;
            }
            if (mode.equals("shrink")) {
                shrinkAfterFailure(comm);
                return;
            }
            if (mode.equals("bigsendrecv")) {
                bigSendRecv(comm);
                return;
            }
            if (mode.startsWith("latereader")) {
                lateReader(comm, mode.endsWith("-rs"));
                return;
            }
            List<String> failures = check(comm);
            comm.barrier();
            if (!failures.isEmpty()) {
                System.out.println("FAILURES rank " + comm.rank() + ": " + failures);
                System.exit(1);
            }
            System.out.println("OK rank " + comm.rank());
        }
    }

    static void loop(Communicator comm) {
        float[] a = new float[1 << 16];
        untilFailure(() -> comm.allReduce(HostBuffer.of(a), ReduceOp.MAX));
    }

    /** Prints "ready", then repeats {@code call} until it fails: prints the failure and halts with status 3. */
    static void untilFailure(Runnable call) {
        System.out.println("ready");
        System.out.flush();
        long start = 0;
        try {
            while (true) {
                start = System.nanoTime();
                call.run();
            }
        } catch (RuntimeException e) {
            timeToError(start, e);
            System.out.println("FAILED " + e.getClass().getSimpleName() + ": " + e.getMessage());
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }
    }

    /**
     * Ring sendRecv of 8 MB from native memory (the single-copy path where the kernel allows it) until
     * a peer fails: one checked exchange, then "SINGLE_COPY n" (its messages received by one copy) and
     * "ready", then the loop.
     */
    static void bigSendRecv(Communicator comm) {
        int n = comm.size();
        int r = comm.rank();
        int next = (r + 1) % n, prev = (r + n - 1) % n;
        long count = 2_000_003;
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
            HostBuffer out = HostBuffer.allocate(DataType.FLOAT32, count, arena);
            HostBuffer in = HostBuffer.allocate(DataType.FLOAT32, count, arena);
            for (long i = 0; i < count; i++) {
                out.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, r * 1000f + (i % 997));
            }
            long before = comm instanceof HostCommunicator h ? h.singleCopyReceives() : 0; // the JIT warm-up's too
            comm.sendRecv(out, next, in, prev);
            for (long i = 0; i < count; i += 4099) {
                float v = in.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i);
                if (v != prev * 1000f + (i % 997)) {
                    System.out.println("WRONG at " + i + ": " + v);
                    System.exit(1);
                }
            }
            System.out.println("SINGLE_COPY " + (comm instanceof HostCommunicator h ? h.singleCopyReceives() - before : -1));
            untilFailure(() -> comm.sendRecv(out, next, in, prev));
        }
    }

    /**
     * Two ranks, an all-gather of 1 MiB a rank from native memory, which each rank reads from the
     * other's buffer in place (process_vm_readv), or with {@code registered} a reduce-scatter of
     * registered buffers (comm.allocate: each rank reduces its block from both send buffers in place,
     * mapped). Rank 1 prints "calling" and calls at once (the test
     * stops it while it waits for rank 0); rank 0 calls 2 s later, reads, and waits for rank 1 until
     * its deadline, then writes over its send buffer and prints "POISONED", and stays 3 s (its memory
     * readable). Rank 1, let go on, either fails in the call (prints "FAILED ...") or returns and
     * prints "RETURNED intact" or "RETURNED corrupt". Both close the communicator and exit 0.
     */
    static void lateReader(Communicator comm, boolean registered) throws InterruptedException {
        int r = comm.rank();
        long count = 1 << 18;
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
            HostBuffer send = registered ? comm.allocate(DataType.FLOAT32, 2 * count)
                    : HostBuffer.allocate(DataType.FLOAT32, count, arena);
            HostBuffer all = registered ? comm.allocate(DataType.FLOAT32, count)
                    : HostBuffer.allocate(DataType.FLOAT32, 2 * count, arena);
            for (long i = 0; i < send.count(); i++) {
                send.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, r * 1000f + (i % 997));
            }
            comm.barrier();
            System.out.println("ready");
            if (r == 0) {
                Thread.sleep(2000);
            } else {
                System.out.println("calling");
            }
            System.out.flush();
            long start = System.nanoTime();
            try {
                if (registered) {
                    comm.reduceScatter(send, all, ReduceOp.SUM);
                } else {
                    comm.allGather(send, all);
                }
            } catch (RuntimeException e) {
                timeToError(start, e);
                System.out.println("FAILED " + e.getClass().getSimpleName() + ": " + e.getMessage());
                System.out.flush();
                if (r == 0) {
                    send.segment().fill((byte) 0xff); // the caller reuses its buffer after the failure
                    System.out.println("POISONED");
                    System.out.flush();
                    Thread.sleep(3_000);
                }
                return; // closes the communicator (and frees its registered buffers)
            }
            boolean intact = true;
            for (long i = 0; i < count; i++) {
                // all-gather: rank 0's block; reduce-scatter: this rank's block of the two sends' sum
                float want = registered ? 1000f + 2 * ((r * count + i) % 997) : i % 997;
                intact &= all.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i) == want;
            }
            System.out.println("RETURNED " + (intact ? "intact" : "corrupt"));
            System.out.flush();
        }
    }

    /** Prints the TIME_TO_ERROR line of a failure now of a call that started at {@code callStart}. */
    static void timeToError(long callStart, RuntimeException e) {
        long at = System.nanoTime();
        String blames = e instanceof org.jccl.PeerFailureException pf ? Integer.toString(pf.rank())
                : e instanceof org.jccl.CollectiveTimeoutException te ? te.missingRanks().toString().replace(" ", "")
                : "-";
        System.out.println("TIME_TO_ERROR at=" + at + " callStart=" + callStart + " blames=" + blames + " class="
                + e.getClass().getSimpleName());
        System.out.flush();
    }

    /** All-reduces until a peer fails, shrinks to the survivors and checks that they go on correctly. */
    static void shrinkAfterFailure(Communicator comm) {
        float[] one = new float[1000];
        System.out.println("ready");
        System.out.flush();
        long t0;
        try {
            while (true) {
                java.util.Arrays.fill(one, 1f);
                comm.allReduce(HostBuffer.of(one), ReduceOp.SUM);
                if (one[0] != comm.size()) {
                    System.out.println("WRONG before failure: " + one[0]);
                    System.exit(1);
                }
            }
        } catch (org.jccl.PeerFailureException e) {
            t0 = System.nanoTime();
            System.out.println("peer failure: " + e.getMessage());
        }
        try (Communicator small = comm.shrinkExcludingFailed()) {
            for (int i = 0; i < 20; i++) {
                float[] x = new float[4097];
                java.util.Arrays.fill(x, small.rank() + 1);
                small.allReduce(HostBuffer.of(x), ReduceOp.SUM);
                float expect = small.size() * (small.size() + 1) / 2f;
                for (float v : x) {
                    if (v != expect) {
                        System.out.println("WRONG after shrink: " + v + " != " + expect);
                        System.exit(1);
                    }
                }
            }
            // one println, one write: printf writes in pieces, and a log line on stderr (the same pipe) can land between them
            System.out.println(String.format("SHRUNK ok %d/%d in %.3f s", small.rank(), small.size(), (System.nanoTime() - t0) / 1e9));
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    static List<String> check(Communicator comm) {
        List<String> failures = new ArrayList<>();
        int n = comm.size();
        int r = comm.rank();
        long seed = 42;
        try (Arena arena = Arena.ofShared()) {
            for (DataType t : new DataType[] {DataType.FLOAT32, DataType.INT64, DataType.BFLOAT16, DataType.UINT8,
                DataType.FLOAT8_E4M3}) {
                // The large count takes every type past the small-message paths (at least 20 KiB a
                // rank); FLOAT32 also runs a large one (600 KB a rank) through the pipelined rings.
                // Every type at every size runs in the conformance kit's thread worlds.
                long[] counts = t == DataType.FLOAT32 ? new long[] {0, 1, 997, 150_001} : new long[] {0, 1, 997, 20_011};
                for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX, ReduceOp.AVG, ReduceOp.preMulSum(2)}) {
                    for (long count : counts) {
                        seed++;
                        HostBuffer send = HostBuffer.allocate(t, count * n, arena);
                        HostBuffer recv = HostBuffer.allocate(t, count * n, arena);
                        HostBuffer s1 = send.slice(0, count);
                        HostBuffer r1 = recv.slice(0, count);
                        Reference.fill(s1.segment(), t, op, seed, r, count, n);
                        comm.allReduce(s1, r1, op);
                        wrong(failures, "allReduce " + t + " " + op + " " + count,
                                Reference.countWrong(r1.segment(), 0, t, op, seed, n, 0, count));
                        int root = (int) (seed % n);
                        comm.reduce(s1, r == root ? r1 : null, op, root);
                        if (r == root) {
                            wrong(failures, "reduce " + t + " " + op + " " + count,
                                    Reference.countWrong(r1.segment(), 0, t, op, seed, n, 0, count));
                        }
                        Reference.fill(send.segment(), t, op, seed, r, count * n, n);
                        comm.reduceScatter(send, r1, op);
                        wrong(failures, "reduceScatter " + t + " " + op + " " + count,
                                Reference.countWrong(r1.segment(), 0, t, op, seed, n, r * count, count));
                    }
                }
                for (long count : counts) {
                    seed++;
                    int root = (int) (seed % n);
                    HostBuffer a = HostBuffer.allocate(t, count * n, arena);
                    HostBuffer b = HostBuffer.allocate(t, count * n, arena);
                    HostBuffer e = HostBuffer.allocate(t, count * n, arena);
                    HostBuffer a1 = a.slice(0, count);
                    Reference.fill(a1.segment(), t, ReduceOp.SUM, seed, r, count, n);
                    comm.broadcast(a1, root);
                    Reference.fill(e.segment(), t, ReduceOp.SUM, seed, root, count, n);
                    same(failures, "broadcast " + t + " " + count, a1, e.slice(0, count));
                    Reference.fill(a1.segment(), t, ReduceOp.SUM, seed, r, count, n);
                    for (int p = 0; p < n; p++) {
                        Reference.fill(e.segment().asSlice(p * count * t.byteSize()), t, ReduceOp.SUM, seed, p, count, n);
                    }
                    comm.allGather(a1, b);
                    same(failures, "allGather " + t + " " + count, b, e);
                    b.segment().fill((byte) 0);
                    comm.gather(a1, r == root ? b : null, root);
                    if (r == root) {
                        same(failures, "gather " + t + " " + count, b, e);
                    }
                    // every rank sends its data to the next and receives from the previous (async pair)
                    HostBuffer in = HostBuffer.allocate(t, count, arena);
                    var w1 = comm.sendAsync(a1, (r + 1) % n);
                    var w2 = comm.recvAsync(in, (r + n - 1) % n);
                    w1.await();
                    w2.await();
                    same(failures, "send/recv " + t + " " + count, in, e.slice(((r + n - 1) % n) * count, count));
                    // all-to-all of the gathered vector: block p of the result is block r of rank p's input
                    Reference.fill(a.segment(), t, ReduceOp.SUM, seed + 7, r, count * n, n);
                    comm.allToAll(a, b);
                    for (int p = 0; p < n; p++) {
                        HostBuffer src = HostBuffer.allocate(t, count * n, arena);
                        // block r of rank p's input (the other blocks are not compared)
                        Reference.fill(src.segment(), t, ReduceOp.SUM, seed + 7, p, r * count, (r + 1) * count, n);
                        same(failures, "allToAll " + t + " " + count + " from " + p, b.slice(p * count, count),
                                src.slice(r * count, count));
                    }
                    // scatter of the root's vector, from this root and the next (whose settings may differ)
                    for (int sr : new int[] {root, (root + 1) % n}) {
                        Reference.fill(a.segment(), t, ReduceOp.SUM, seed + 9 + sr, sr, count * n, n);
                        comm.scatter(r == sr ? a : null, b.slice(0, count), sr);
                        same(failures, "scatter from " + sr + " " + t + " " + count, b.slice(0, count), a.slice(r * count, count));
                    }
                }
            }
        }
        return failures;
    }
}
