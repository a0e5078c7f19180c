package org.jccl.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.jccl.CollectiveMismatchException;
import org.jccl.PeerFailureException;
import org.jccl.bootstrap.Store;

/**
 * How the survivors of a communicator agree, through the job's store, on which ranks to leave out
 * of a shrink: the one protocol of every backend that shrinks (the host engine, NCCL).
 *
 * <p>{@link #decideFailed}: each survivor posts the ranks it knows failed and reads the others';
 * the first survivor that has heard from every rank not known failed, or whose deadline passed
 * (then the silent ranks count as failed), proposes the union with an atomic compare-and-set of
 * one decision key, and every survivor adopts whatever decision stands. One decision, so two
 * survivors can never shrink to different sets; a rank the decision leaves out learns it.
 * {@link #checkSameExclusion}: before an explicit {@code shrink(Set)}, every survivor checks that
 * all pass the same set.
 */
public final class ShrinkAgreement {
    private ShrinkAgreement() {
    }

    /**
     * The ranks a {@code shrink(excluded)} call on rank {@code rank} of {@code size} leaves out,
     * sorted, once checked the same way on every backend: no null, each in range, not this rank.
     */
    public static TreeSet<Integer> checkExcluded(Set<Integer> excluded, int rank, int size) {
        org.jccl.Checks.notNull(excluded, "excluded");
        TreeSet<Integer> ex = new TreeSet<>();
        for (Integer r : excluded) {
            if (r == null) {
                throw new IllegalArgumentException("excluded contains null: pass rank numbers");
            }
            org.jccl.Checks.rank(r, size, "excluded rank");
            ex.add(r);
        }
        if (ex.contains(rank)) {
            throw new IllegalArgumentException("excluded contains this rank (" + rank + "): a rank that leaves does not "
                    + "call shrink");
        }
        return ex;
    }

    /**
     * The ranks of the communicator the survivors agree failed (never {@code rank}). Keys go under
     * {@code base} in {@code store}, which must be the same for every survivor of this shrink.
     *
     * @param known the ranks this rank knows failed now (read again while waiting)
     * @throws PeerFailureException naming {@code rank} when the decision leaves it out (it was
     *                              reported failed, or came after the others' deadline)
     */
    public static SortedSet<Integer> decideFailed(Store store, String base, int rank, int size,
                                                  Supplier<Set<Integer>> known, Duration timeout) {
        TreeSet<Integer> mine = new TreeSet<>(known.get());
        mine.remove(rank);
        store.set(base + "known/" + rank, encode(mine));
        TreeSet<Integer> union = new TreeSet<>(mine);
        TreeSet<Integer> heard = new TreeSet<>(Set.of(rank));
        long deadline = System.nanoTime() + timeout.toNanos();
        byte[] decision;
        while (true) {
            decision = store.tryGet(base + "decision");
            if (decision != null) {
                break;
            }
            for (int r = 0; r < size; r++) {
                if (!heard.contains(r)) {
                    byte[] v = store.tryGet(base + "known/" + r);
                    if (v != null) {
                        heard.add(r);
                        union.addAll(decode(v));
                    }
                }
            }
            union.addAll(known.get());
            union.remove(rank);
            boolean complete = true;
            for (int r = 0; r < size; r++) {
                complete &= heard.contains(r) || union.contains(r);
            }
            boolean late = System.nanoTime() - deadline > 0;
            if (complete || late) {
                TreeSet<Integer> proposal = new TreeSet<>(union);
                if (late) {
                    for (int r = 0; r < size; r++) {
                        if (!heard.contains(r)) {
                            proposal.add(r); // silent until the deadline: treated as failed
                        }
                    }
                }
                decision = store.compareSet(base + "decision", null, encode(proposal));
                break;
            }
            LockSupport.parkNanos(2_000_000);
        }
        TreeSet<Integer> agreed = decode(decision);
        if (agreed.contains(rank)) {
            throw new PeerFailureException(rank, "shrinkExcludingFailed on rank " + rank + ": the other survivors decided "
                    + "without this rank (it was reported failed or joined after their deadline); excluded " + agreed);
        }
        return agreed;
    }

    /**
     * Checks that every survivor excludes the same ranks: a {@link CollectiveMismatchException}
     * naming both sets otherwise.
     */
    public static void checkSameExclusion(Store store, String base, int rank, SortedSet<Integer> excluded,
                                          List<Integer> survivors, Duration timeout) {
        byte[] mine = encode(excluded);
        store.set(base + "set/" + rank, mine);
        for (int r : survivors) {
            if (r != rank) {
                byte[] theirs = store.get(base + "set/" + r, timeout);
                if (!java.util.Arrays.equals(mine, theirs)) {
                    throw new CollectiveMismatchException("shrink: rank " + rank + " excludes " + excluded + " but rank " + r
                            + " excludes " + decode(theirs) + ": every survivor must exclude the same ranks");
                }
            }
        }
    }

    /** "1,3," for {1, 3}. */
    public static byte[] encode(Set<Integer> ranks) {
        StringBuilder b = new StringBuilder();
        for (int r : new TreeSet<>(ranks)) {
            b.append(r).append(',');
        }
        return b.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** The ranks of {@link #encode}. */
    public static TreeSet<Integer> decode(byte[] v) {
        TreeSet<Integer> out = new TreeSet<>();
        for (String p : new String(v, StandardCharsets.US_ASCII).split(",")) {
            if (!p.isEmpty()) {
                out.add(Integer.parseInt(p));
            }
        }
        return out;
    }
}
