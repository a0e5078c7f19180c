package org.jccl.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.Work;

/**
 * The GPU collective test matrix: every collective x every NCCL data type x every reduction
 * operator x sizes, in place and out of place, each result compared element by element with a
 * reference computed on the host from the same generated inputs.
 *
 * <p>Inputs are small integers chosen per type and operator so that every partial result is
 * exactly representable (e.g. at most 16 for FP8 E4M3 sums, products of +-1/+-2): the
 * comparison is exact equality, for FP8/FP16/BF16 too, whatever order NCCL reduces in. Any
 * process can compute any rank's input, so one process per GPU and one process for all GPUs
 * check the same thing.
 */
final class Matrix {
    enum Coll {
        ALL_REDUCE, REDUCE, REDUCE_SCATTER, BROADCAST, ALL_GATHER, ALL_TO_ALL, GATHER, SCATTER, SEND_RECV;

        boolean reducing() {
            return this == ALL_REDUCE || this == REDUCE || this == REDUCE_SCATTER;
        }

        boolean rooted() {
            return this == REDUCE || this == BROADCAST || this == GATHER || this == SCATTER;
        }
    }

    /** One check: a collective on a type with an operator, a per-rank count, a placement and a root. */
    record Case(int index, Coll coll, DataType type, ReduceOp op, long count, boolean inPlace, int root) {
        String name() {
            return coll.name().toLowerCase(java.util.Locale.ROOT) + " " + type.shortName()
                    + (op == null ? "" : " " + op) + " n=" + count + (inPlace ? " in-place" : " out-of-place")
                    + (coll.rooted() ? " root=" + root : "");
        }
    }

    /** 0, 1, a prime, 1 Mi + 1 (odd) elements. */
    static final long[] SIZES = {0, 1, 1009, (1 << 20) + 1};
    private static final byte SENTINEL = (byte) 0xA5;

    private Matrix() {
    }

    static List<ReduceOp> ops(DataType t) {
        List<ReduceOp> ops = new ArrayList<>(List.of(ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG,
                ReduceOp.preMulSum(2)));
        if (t.isFloatingPoint()) {
            ops.add(ReduceOp.preMulSum(0.5));
        }
        return ops;
    }

    static List<DataType> types(boolean fp8) {
        List<DataType> ts = new ArrayList<>();
        for (DataType t : DataType.values()) {
            if (fp8 || (t != DataType.FLOAT8_E4M3 && t != DataType.FLOAT8_E5M2)) {
                ts.add(t);
            }
        }
        return ts;
    }

    /** The full matrix for {@code size} ranks. */
    static List<Case> cases(int size, boolean fp8, long[] sizes) {
        List<Case> out = new ArrayList<>();
        int idx = 0;
        for (Coll c : Coll.values()) {
            for (DataType t : types(fp8)) {
                List<ReduceOp> ops = c.reducing() ? ops(t) : java.util.Collections.singletonList(null);
                for (ReduceOp op : ops) {
                    for (long n : sizes) {
                        for (boolean inPlace : new boolean[] {false, true}) {
                            if (c == Coll.SEND_RECV && inPlace) {
                                continue;
                            }
                            int root = c.rooted() ? (idx % 2 == 0 ? 0 : size - 1) : 0;
                            out.add(new Case(idx++, c, t, op, n, inPlace, root));
                        }
                    }
                }
            }
        }
        return out;
    }

    /** The 256 MiB subset: large buffers of the bandwidth-bound collectives. */
    static List<Case> largeCases(int size) {
        long f32 = (256L << 20) / 4;
        List<Case> out = new ArrayList<>();
        int idx = 100_000;
        out.add(new Case(idx++, Coll.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, f32, true, 0));
        out.add(new Case(idx++, Coll.ALL_REDUCE, DataType.BFLOAT16, ReduceOp.SUM, f32 * 2, false, 0));
        out.add(new Case(idx++, Coll.ALL_GATHER, DataType.FLOAT32, null, f32 / size, false, 0));
        out.add(new Case(idx++, Coll.REDUCE_SCATTER, DataType.FLOAT32, ReduceOp.SUM, f32 / size, true, 0));
        out.add(new Case(idx++, Coll.BROADCAST, DataType.FLOAT32, null, f32, false, size - 1));
        out.add(new Case(idx++, Coll.ALL_TO_ALL, DataType.FLOAT32, null, f32 / size, false, 0));
        return out;
    }

    // ---------------------------------------------------------------- data

    /** Largest magnitude up to which every integer is exact in the type (capped for wide types). */
    static double limit(DataType t) {
        return switch (t) {
            case INT8 -> 127;
            case UINT8 -> 255;
            case FLOAT16 -> 2048;
            case BFLOAT16 -> 256;
            case FLOAT8_E4M3 -> 16;
            case FLOAT8_E5M2 -> 8;
            default -> 1 << 20;
        };
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The input of rank {@code r} at element {@code i} for case {@code c} on {@code n} ranks. */
    static double value(Case c, int n, int r, long i) {
        long h = mix(c.index * 0x9E3779B97F4A7C15L + r * 0x632BE59BD9B4E019L + i) >>> 1;
        boolean unsigned = c.type.kind() == DataType.Kind.UNSIGNED;
        long m = (long) Math.floor(limit(c.type) / n);
        ReduceOp op = c.op;
        if (op != null && op.kind() == ReduceOp.Kind.PROD) {
            long[] choices = n > 6 ? new long[] {1, -1} : new long[] {1, 2, -1, -2};
            int len = unsigned ? (n > 6 ? 1 : 2) : choices.length;
            return choices[(int) (h % len)];
        }
        if (op != null && op.kind() == ReduceOp.Kind.AVG) {
            long km = m / n;
            return n * (h % (km + 1));
        }
        if (op != null && op.kind() == ReduceOp.Kind.PREMUL_SUM) {
            long mm = m / 2;
            long j = unsigned ? h % (mm + 1) : h % (2 * mm + 1) - mm;
            return op.scalar() == 0.5 ? 2 * j : j;
        }
        return unsigned ? h % (m + 1) : h % (2 * m + 1) - m;
    }

    /** The reduction over ranks at element {@code i}, exactly as NCCL must produce it. */
    static double reduced(Case c, int n, long i) {
        ReduceOp.Kind k = c.op.kind();
        double acc = switch (k) {
            case PROD -> 1;
            case MIN -> Double.POSITIVE_INFINITY;
            case MAX -> Double.NEGATIVE_INFINITY;
            default -> 0;
        };
        for (int r = 0; r < n; r++) {
            double v = value(c, n, r, i);
            acc = switch (k) {
                case SUM, AVG -> acc + v;
                case PROD -> acc * v;
                case MIN -> Math.min(acc, v);
                case MAX -> Math.max(acc, v);
                case PREMUL_SUM -> acc + v * c.op.scalar();
                default -> throw new IllegalStateException(k.toString());
            };
        }
        return k == ReduceOp.Kind.AVG ? acc / n : acc;
    }

    // ---------------------------------------------------------------- running

    /** Buffers of one local rank for one case. */
    private record RankBuffers(NcclCommunicator comm, DeviceBuffer send, DeviceBuffer recv, List<DeviceBuffer> owned) {
    }

    /**
     * Runs one case on the local communicators (one per GPU of this process), issued together in
     * an NcclGroup, and compares every output element. Returns null on success, else a message
     * naming the rank, the first wrong element and the number of wrong elements.
     */
    static String run(Case c, List<NcclCommunicator> locals) {
        int n = locals.get(0).size();
        DataType t = c.type;
        long cnt = c.count;
        List<RankBuffers> bufs = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            for (NcclCommunicator comm : locals) {
                bufs.add(prepare(c, comm, n, arena));
            }
            List<Work> works = new ArrayList<>();
            try (NcclGroup g = NcclGroup.start()) {
                for (RankBuffers b : bufs) {
                    issue(c, b, n, works);
                }
            }
            for (Work w : works) {
                w.await();
            }
            StringBuilder errors = new StringBuilder();
            for (RankBuffers b : bufs) {
                String e = check(c, b, n, arena);
                if (e != null) {
                    errors.append(e).append("; ");
                }
            }
            return errors.isEmpty() ? null : errors.toString();
        } finally {
            for (RankBuffers b : bufs) {
                for (DeviceBuffer d : b.owned) {
                    d.close();
                }
            }
        }
    }

    private static long sendCount(Coll coll, long cnt, int n) {
        return switch (coll) {
            case REDUCE_SCATTER, ALL_TO_ALL, SCATTER -> n * cnt;
            default -> cnt;
        };
    }

    private static long recvCount(Coll coll, long cnt, int n) {
        return switch (coll) {
            case ALL_GATHER, ALL_TO_ALL, GATHER -> n * cnt;
            default -> cnt;
        };
    }

    private static HostBuffer input(Case c, int n, int r, long count, Arena arena) {
        HostBuffer h = HostBuffer.allocate(c.type, count, arena);
        MemorySegment s = h.segment();
        for (long i = 0; i < count; i++) {
            NumberFormats.put(s, c.type, i, value(c, n, r, i));
        }
        return h;
    }

    private static RankBuffers prepare(Case c, NcclCommunicator comm, int n, Arena arena) {
        int r = comm.rank();
        CudaDevice dev = comm.device();
        DataType t = c.type;
        long cnt = c.count;
        List<DeviceBuffer> owned = new ArrayList<>();
        DeviceBuffer send;
        DeviceBuffer recv;
        long sc = sendCount(c.coll, cnt, n);
        long rc = recvCount(c.coll, cnt, n);
        boolean isRoot = r == c.root;
        // Which input this rank provides (the root's data for broadcast/scatter).
        boolean providesInput = switch (c.coll) {
            case BROADCAST, SCATTER -> isRoot;
            default -> true;
        };
        if (c.inPlace) {
            switch (c.coll) {
                case ALL_REDUCE, REDUCE, BROADCAST, ALL_TO_ALL -> {
                    DeviceBuffer b = dev.allocate(t, sc);
                    owned.add(b);
                    send = b;
                    recv = b;
                }
                case REDUCE_SCATTER -> {
                    DeviceBuffer b = dev.allocate(t, sc);
                    owned.add(b);
                    send = b;
                    recv = b.slice(r * cnt, cnt);
                }
                case ALL_GATHER -> {
                    DeviceBuffer b = dev.allocate(t, rc);
                    owned.add(b);
                    fill(b);
                    recv = b;
                    send = b.slice(r * cnt, cnt);
                }
                case GATHER -> {
                    if (isRoot) {
                        DeviceBuffer b = dev.allocate(t, rc);
                        owned.add(b);
                        fill(b);
                        recv = b;
                        send = b.slice(r * cnt, cnt);
                    } else {
                        send = dev.allocate(t, sc);
                        owned.add(send);
                        recv = null;
                    }
                }
                case SCATTER -> {
                    if (isRoot) {
                        DeviceBuffer b = dev.allocate(t, sc);
                        owned.add(b);
                        send = b;
                        recv = b.slice(r * cnt, cnt);
                    } else {
                        recv = dev.allocate(t, rc);
                        owned.add(recv);
                        fill(recv);
                        send = null;
                    }
                }
                default -> throw new IllegalStateException("no in-place " + c.coll);
            }
        } else {
            boolean needSend = switch (c.coll) {
                case BROADCAST, SCATTER -> isRoot;
                default -> true;
            };
            boolean needRecv = switch (c.coll) {
                case REDUCE, GATHER -> isRoot;
                default -> true;
            };
            send = needSend ? dev.allocate(t, sc) : null;
            recv = needRecv ? dev.allocate(t, rc) : null;
            if (send != null) {
                owned.add(send);
            }
            if (recv != null) {
                owned.add(recv);
                fill(recv);
            }
        }
        if (providesInput && send != null) {
            send.copyFrom(input(c, n, r, send.count(), arena));
        } else if (c.coll == Coll.BROADCAST && c.inPlace) {
            fill(recv); // non-root in-place broadcast: the buffer starts as garbage
        }
        return new RankBuffers(comm, send, recv, owned);
    }

    private static void fill(DeviceBuffer b) {
        b.fill(SENTINEL);
    }

    private static void issue(Case c, RankBuffers b, int n, List<Work> works) {
        NcclCommunicator comm = b.comm;
        int r = comm.rank();
        switch (c.coll) {
            case ALL_REDUCE -> works.add(comm.allReduceAsync(b.send, b.recv, c.op));
            case REDUCE -> works.add(comm.reduceAsync(b.send, b.recv, c.op, c.root));
            case REDUCE_SCATTER -> works.add(comm.reduceScatterAsync(b.send, b.recv, c.op));
            case BROADCAST -> works.add(comm.broadcastAsync(b.send, b.recv, c.root));
            case ALL_GATHER -> works.add(comm.allGatherAsync(b.send, b.recv));
            case ALL_TO_ALL -> works.add(comm.allToAllAsync(b.send, b.recv));
            case GATHER -> works.add(comm.gatherAsync(b.send, b.recv, c.root));
            case SCATTER -> works.add(comm.scatterAsync(b.send, b.recv, c.root));
            case SEND_RECV -> {
                works.add(comm.sendAsync(b.send, (r + 1) % n));
                works.add(comm.recvAsync(b.recv, (r - 1 + n) % n));
            }
        }
    }

    private static String check(Case c, RankBuffers b, int n, Arena arena) {
        int r = b.comm.rank();
        long cnt = c.count;
        if (b.recv == null || (c.coll == Coll.REDUCE && r != c.root)) {
            return null;
        }
        HostBuffer out = HostBuffer.allocate(c.type, b.recv.count(), arena);
        b.recv.copyTo(out);
        MemorySegment s = out.segment();
        long wrong = 0;
        String first = null;
        for (long i = 0; i < b.recv.count(); i++) {
            double expected = switch (c.coll) {
                case ALL_REDUCE, REDUCE -> reduced(c, n, i);
                case REDUCE_SCATTER -> reduced(c, n, r * cnt + i);
                case BROADCAST -> value(c, n, c.root, i);
                case ALL_GATHER, GATHER -> value(c, n, (int) (i / Math.max(cnt, 1)), i % Math.max(cnt, 1));
                case ALL_TO_ALL -> value(c, n, (int) (i / Math.max(cnt, 1)), r * cnt + i % Math.max(cnt, 1));
                case SCATTER -> value(c, n, c.root, r * cnt + i);
                case SEND_RECV -> value(c, n, (r - 1 + n) % n, i);
            };
            double got = NumberFormats.get(s, c.type, i);
            if (got != expected) {
                wrong++;
                if (first == null) {
                    first = "element " + i + " = " + got + ", expected " + expected;
                }
            }
        }
        return wrong == 0 ? null : "rank " + r + ": " + wrong + " wrong of " + b.recv.count() + ", first " + first;
    }
}
