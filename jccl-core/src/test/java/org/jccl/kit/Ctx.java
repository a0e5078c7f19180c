package org.jccl.kit;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * What a case runs with: the communicator, where buffers live, the backend's traits, the seed, and
 * the checks. Checks collect failures instead of throwing, so every rank keeps calling the same
 * collectives after a wrong result.
 */
public final class Ctx {
    private final Communicator comm;
    private final Communicator world;
    private final Mem mem;
    private final Traits traits;
    private final long seed;
    private final boolean full;
    private final String caseName;
    private final List<String> failures;
    private final Arena arena = Arena.ofShared();

    Ctx(Communicator comm, Communicator world, Mem mem, Traits traits, long seed, boolean full, String caseName, List<String> failures) {
        this.comm = comm;
        this.world = world;
        this.mem = mem;
        this.traits = traits;
        this.seed = seed;
        this.full = full;
        this.caseName = caseName;
        this.failures = failures;
    }

    /** The communicator of the case. */
    public Communicator comm() {
        return comm;
    }

    /** Where buffers live. */
    public Mem mem() {
        return mem;
    }

    /**
     * A new communicator of every rank (split from the world's, which stays healthy), for a case
     * that breaks or closes communicators; close it.
     */
    public Communicator fresh() {
        return world.split(0, world.rank());
    }

    /** The world's communicator (healthy whatever the case's communicator went through). */
    public Communicator world() {
        return world;
    }

    /** The backend's traits. */
    public Traits traits() {
        return traits;
    }

    /** The case's seed (the same on every rank). */
    public long seed() {
        return seed;
    }

    /** True for the full matrix (every type x op x count), false for the quick subset. */
    public boolean full() {
        return full;
    }

    /** This rank. */
    public int rank() {
        return comm.rank();
    }

    /** Ranks. */
    public int size() {
        return comm.size();
    }

    /** Types the case runs: every type of the backend (full), else a subset of each kind and width. */
    public List<DataType> types() {
        List<DataType> out = new ArrayList<>();
        for (DataType t : DataType.values()) {
            if (traits.types().contains(t) && (full || QUICK_TYPES.contains(t))) {
                out.add(t);
            }
        }
        return out;
    }

    private static final java.util.Set<DataType> QUICK_TYPES = java.util.EnumSet.of(DataType.INT8, DataType.UINT32,
            DataType.INT64, DataType.FLOAT32, DataType.BFLOAT16, DataType.FLOAT8_E4M3);

    /** Operators the case runs on {@code t}: every one the backend has (full), else SUM, MAX and one more. */
    public List<ReduceOp> ops(DataType t) {
        List<ReduceOp> all = traits.ops(t);
        if (full) {
            return all;
        }
        List<ReduceOp> out = new ArrayList<>();
        for (ReduceOp op : all) {
            ReduceOp.Kind k = op.kind();
            if (k == ReduceOp.Kind.SUM || k == ReduceOp.Kind.MAX || k == (t.isInteger() && traits.bitwiseOps()
                    ? ReduceOp.Kind.BXOR : ReduceOp.Kind.AVG)) {
                out.add(op);
            }
        }
        return out;
    }

    /** A host segment of {@code count} elements of {@code t} for this case (freed at its end). */
    public MemorySegment host(DataType t, long count) {
        return arena.allocate(Math.max(1, count * t.byteSize()), 8).asSlice(0, count * t.byteSize());
    }

    /**
     * Rank {@code r}'s reference input (count elements) for {@code op}, as host bytes (read-only:
     * shared by the ranks of this JVM, see {@link Reference#input}).
     */
    public MemorySegment input(DataType t, ReduceOp op, long sd, int r, long count) {
        return Reference.input(t, op, sd, r, count, size());
    }

    /** A buffer holding rank {@code r}'s reference input. */
    public Buffer buffer(DataType t, ReduceOp op, long sd, int r, long count) {
        Buffer b = mem.allocate(t, count);
        mem.write(b, input(t, op, sd, r, count));
        return b;
    }

    /** A buffer of {@code count} elements filled with a marker that no reference value has. */
    public Buffer poisoned(DataType t, long count) {
        Buffer b = mem.allocate(t, count);
        MemorySegment s = host(t, count);
        s.fill((byte) 0x5a);
        mem.write(b, s);
        return b;
    }

    /**
     * Checks that elements {@code [at, at + count)} of {@code got} equal the reduction over every
     * rank of the reference inputs' elements {@code [first, first + count)}.
     */
    public void checkReduced(Supplier<String> what, Buffer got, long at, DataType t, ReduceOp op, long sd, long first,
                             long count) {
        MemorySegment g = mem.read(got);
        long wrong = Reference.countWrong(g, at, t, op, sd, size(), first, count);
        if (wrong > 0) {
            fail(what.get() + ": " + wrong + " of " + count + " elements differ from the reference"
                    + firstWrong(g, at, t, op, sd, first, count));
        }
    }

    private String firstWrong(MemorySegment g, long at, DataType t, ReduceOp op, long sd, long first, long count) {
        for (long k = 0; k < count; k++) {
            if (Reference.countWrong(g, at + k, t, op, sd, size(), first + k, 1) > 0) {
                String gotV = t.isInteger() ? Long.toString(Reference.norm(t, Reference.readInt(g, t, at + k)))
                        : Double.toString(Reference.readFloat(g, t, at + k));
                String want = t.isInteger() ? Long.toString(Reference.expectedInt(t, op, sd, size(), first + k))
                        : Double.toString(Reference.expectedFloat(t, op, sd, size(), first + k));
                return " (first at element " + k + ": got " + gotV + ", want " + want + ")";
            }
        }
        return "";
    }

    /** Checks that {@code got}'s bytes from element {@code at} equal {@code want} (all of it). */
    public void checkBytes(Supplier<String> what, Buffer got, long at, MemorySegment want) {
        MemorySegment g = mem.read(got).asSlice(at * got.type().byteSize(), want.byteSize());
        long m = g.mismatch(want);
        if (m >= 0) {
            fail(what.get() + ": bytes differ from the reference from byte " + m + " of " + want.byteSize());
        }
    }

    /** Records a failure of this case on this rank. */
    public void fail(String message) {
        failures.add(caseName + " on rank " + rank() + " of " + size() + " [" + traits.name() + ", seed " + seed + "]: "
                + message);
    }

    /** Records a failure unless {@code ok}. */
    public void check(boolean ok, Supplier<String> message) {
        if (!ok) {
            fail(message.get());
        }
    }

    /** Runs {@code call}, which must throw a {@code type}; returns it, or null after recording a failure. */
    public <T extends Throwable> T expectThrows(Class<T> type, String what, ThrowingRunnable call) {
        try {
            call.run();
        } catch (Throwable e) {
            if (type.isInstance(e)) {
                return type.cast(e);
            }
            fail(what + ": expected " + type.getSimpleName() + " but got " + e);
            return null;
        }
        fail(what + ": expected " + type.getSimpleName() + " but the call returned normally");
        return null;
    }

    /** A call that may throw. */
    @FunctionalInterface
    public interface ThrowingRunnable {
        /** Runs. */
        void run() throws Exception;
    }

    void close() {
        arena.close();
    }
}
