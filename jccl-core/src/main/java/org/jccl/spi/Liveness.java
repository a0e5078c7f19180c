package org.jccl.spi;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.jccl.PeerFailureException;

/**
 * Which ranks of a job are known to be dead, learned from heartbeats through the rendezvous store
 * ({@code JCCL_HEARTBEAT}). {@link org.jccl.Jccl#init(org.jccl.Options)} starts one heartbeat per
 * rank and hands its {@code Liveness} to the backend ({@link Backend#create(org.jccl.Options,
 * org.jccl.bootstrap.Store, Liveness)}).
 *
 * <p><b>How a death is learned.</b> Every rank keeps one dedicated connection to the store server
 * and sends a heartbeat on it every interval. The server ties that connection to the rank; when it
 * closes without a goodbye (the kernel closes the sockets of a killed process) the server declares
 * the rank dead, and every other rank learns it with its next heartbeat's answer: within one
 * interval. A rank that is stopped (SIGSTOP, a debugger, a long GC pause) keeps its connection and
 * is never declared dead; it only shows in {@link #silentRanks()}, and the deadline of the waits
 * names it.
 *
 * <p><b>Ranks</b> are job ranks: the ranks of the communicator {@code Jccl.init} formed ({@link
 * org.jccl.Options#rank()}). A communicator made by split or shrink maps its own ranks to job
 * ranks: {@link #watch(int[])} does that for it.
 *
 * <p><b>Cost.</b> Every query is a read of volatile fields: no I/O, no lock, no allocation.
 * {@link #epoch()} changes whenever {@link #deadRanks()} grows, so a poller compares one number
 * ({@link Watch#firstDead()} does exactly that).
 *
 * <p>For a watchdog (the NCCL backend's, for instance):
 * <pre>{@code
 * Liveness.Watch watch = liveness.watch(jobRankOfEachCommRank);
 * ...
 * int dead = watch.firstDead();              // one volatile read while nothing changed
 * if (dead >= 0) {
 *     abortCommunicatorAndFailPendingWork(watch.failure(dead, "allReduce #12 on rank 3"));
 * }
 * }</pre>
 * or register a {@link Listener}, called on the heartbeat thread as soon as a death is learned.
 */
public interface Liveness {

    /** Liveness of a job without heartbeats (off, or a store without a server): never reports a death. */
    Liveness NONE = new Liveness() {
        @Override
        public boolean isMonitoring() {
            return false;
        }

        @Override
        public Duration interval() {
            return Duration.ZERO;
        }

        @Override
        public long epoch() {
            return 0;
        }

        @Override
        public Set<Integer> deadRanks() {
            return Set.of();
        }

        @Override
        public String deathReason(int rank) {
            return null;
        }

        @Override
        public Map<Integer, Duration> silentRanks() {
            return Map.of();
        }

        @Override
        public void addListener(Listener listener) {
            // nothing will ever be reported
        }

        @Override
        public void removeListener(Listener listener) {
            // nothing registered
        }

        @Override
        public String toString() {
            return "Liveness[no heartbeats]";
        }
    };

    /** Told of each death once, on the heartbeat thread: must return quickly and must not block. */
    @FunctionalInterface
    interface Listener {
        /**
         * Job rank {@code rank} was declared dead.
         *
         * @param reason what the store saw (e.g. its heartbeat connection closed without a goodbye)
         */
        void rankDied(int rank, String reason);
    }

    /**
     * True while heartbeats run and answers come back; false when they are off, when the store has
     * no server to watch connections (a {@code FileStore}), after the store was lost, and after
     * close. While false, no new death is learned (the transports and deadlines still find them).
     */
    boolean isMonitoring();

    /** The heartbeat interval; {@link Duration#ZERO} when heartbeats are off. */
    Duration interval();

    /** A number that changes whenever {@link #deadRanks()} grows (a volatile read). */
    long epoch();

    /** Job ranks declared dead so far (an immutable snapshot, sorted; a volatile read). Only grows. */
    Set<Integer> deadRanks();

    /** Why job rank {@code rank} was declared dead, or null while it is not. */
    String deathReason(int rank);

    /**
     * Job ranks whose heartbeat the store has not seen for more than two intervals, with how long
     * (at the last answer): stopped processes (SIGSTOP, a debugger), long pauses, or an unreachable
     * host. Diagnosis only: such ranks are not dead.
     */
    Map<Integer, Duration> silentRanks();

    /**
     * Registers a listener. Deaths learned before the call are reported to it at once (on the
     * calling thread), so none is missed.
     */
    void addListener(Listener listener);

    /** Removes a listener registered with {@link #addListener}. */
    void removeListener(Listener listener);

    /**
     * A watch over the members of one communicator: {@code jobRanks[i]} is the job rank of its rank
     * {@code i}.
     */
    default Watch watch(int[] jobRanks) {
        return new Watch(this, jobRanks);
    }

    /** A watch over a communicator whose rank {@code i} is job rank {@code i}, for {@code size} ranks. */
    default Watch watch(int size) {
        int[] ids = new int[size];
        for (int i = 0; i < size; i++) {
            ids[i] = i;
        }
        return new Watch(this, ids);
    }

    /**
     * The deaths among one communicator's members, in that communicator's ranks. {@link
     * #firstDead()} costs one volatile read while nothing changed; use it from the thread that
     * runs the communicator's waits (it caches what it saw in a plain field).
     */
    final class Watch {
        private final Liveness liveness;
        private final int[] jobRanks;
        private long seen = Long.MIN_VALUE;

        /**
         * A watch of {@code liveness} over a communicator whose rank {@code i} is job rank {@code
         * jobRanks[i]}.
         */
        public Watch(Liveness liveness, int[] jobRanks) {
            if (liveness == null) {
                throw new IllegalArgumentException("liveness is null: pass Liveness.NONE when there are no heartbeats");
            }
            if (jobRanks == null) {
                throw new IllegalArgumentException("jobRanks is null: pass the job rank of every rank of the communicator");
            }
            this.liveness = liveness;
            this.jobRanks = jobRanks.clone();
        }

        /** The liveness this watch reads. */
        public Liveness liveness() {
            return liveness;
        }

        /** The job rank of every rank of the watched communicator (a copy). */
        public int[] jobRanks() {
            return jobRanks.clone();
        }

        /** The job rank of communicator rank {@code rank}. */
        public int jobRank(int rank) {
            return jobRanks[rank];
        }

        /**
         * The watch of a communicator made of some of these ranks (split, shrink): its rank {@code
         * i} is rank {@code members[i]} here.
         */
        public Watch sub(int[] members) {
            int[] ids = new int[members.length];
            for (int i = 0; i < members.length; i++) {
                ids[i] = jobRanks[members[i]];
            }
            return new Watch(liveness, ids);
        }

        /** The watch of a communicator made of some of these ranks, in this order. */
        public Watch sub(List<Integer> members) {
            int[] m = new int[members.size()];
            for (int i = 0; i < m.length; i++) {
                m[i] = members.get(i);
            }
            return sub(m);
        }

        /**
         * The lowest communicator rank declared dead, or -1. While nothing changed since the last
         * call that found none, this is one volatile read.
         */
        public int firstDead() {
            long e = liveness.epoch();
            if (e == seen) {
                return -1;
            }
            Set<Integer> dead = liveness.deadRanks();
            for (int i = 0; i < jobRanks.length; i++) {
                if (dead.contains(jobRanks[i])) {
                    return i; // seen stays stale: the next call finds it again
                }
            }
            seen = e;
            return -1;
        }

        /** Every communicator rank declared dead (sorted). */
        public Set<Integer> deadMembers() {
            Set<Integer> dead = liveness.deadRanks();
            TreeSet<Integer> out = new TreeSet<>();
            if (dead.isEmpty()) {
                return out;
            }
            for (int i = 0; i < jobRanks.length; i++) {
                if (dead.contains(jobRanks[i])) {
                    out.add(i);
                }
            }
            return out;
        }

        /** "rank 3", or "rank 3 (job rank 7)" when the communicator renumbered it. */
        public String name(int rank) {
            return rank >= 0 && rank < jobRanks.length && jobRanks[rank] != rank
                    ? "rank " + rank + " (job rank " + jobRanks[rank] + ")" : "rank " + rank;
        }

        /**
         * The message of a death learned from the heartbeats: {@code "rank 1 died during <during>:
         * the store declared it dead: <reason>"}.
         */
        public String message(int rank, String during) {
            String reason = liveness.deathReason(jobRanks[rank]);
            return name(rank) + " died" + (during == null ? "" : " during " + during) + ": the store's heartbeat monitor "
                    + "declared it dead: " + (reason == null ? "(no reason given)" : reason);
        }

        /** A {@link PeerFailureException} naming communicator rank {@code rank} with {@link #message}. */
        public PeerFailureException failure(int rank, String during) {
            return new PeerFailureException(rank, message(rank, during));
        }

        /**
         * A note for timeout messages about the ranks among {@code ranks} (communicator ranks) that
         * send no heartbeats: {@code " [heartbeats: rank 1 silent for 3.2 s: stopped (SIGSTOP, a
         * debugger), paused or unreachable, not dead]"}, or "" when none is silent.
         */
        public String silentNote(List<Integer> ranks) {
            Map<Integer, Duration> silent = liveness.silentRanks();
            if (silent.isEmpty() || ranks == null) {
                return "";
            }
            StringBuilder b = new StringBuilder();
            for (int r : ranks) {
                if (r < 0 || r >= jobRanks.length) {
                    continue;
                }
                Duration d = silent.get(jobRanks[r]);
                if (d != null) {
                    b.append(b.length() == 0 ? " [heartbeats: " : ", ").append(name(r)).append(" silent for ")
                            .append(String.format(java.util.Locale.ROOT, "%.1f s", d.toMillis() / 1e3));
                }
            }
            return b.length() == 0 ? "" : b.append(": stopped (SIGSTOP, a debugger), paused or unreachable, not dead]")
                    .toString();
        }

        @Override
        public String toString() {
            return "Liveness.Watch[job ranks " + Arrays.toString(jobRanks) + ", " + liveness + "]";
        }
    }
}
