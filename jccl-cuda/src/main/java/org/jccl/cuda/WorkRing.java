package org.jccl.cuda;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import org.jccl.internal.VarHandles;

/**
 * A communicator's launched works in the order their events were recorded, each slot with the
 * CUDA event that completes its work: a ring of {@link #CAPACITY} slots.
 *
 * <pre>
 *   slot:    0      1      2    ...   CAPACITY-1
 *   works: [w512] [w513] [w2]  ...   [w511]        slot i % CAPACITY holds the work armed i-th
 *   events:[e0]   [e1]   [e2]  ...   [e511]        (or a later one: its predecessor had finished)
 *                         ^head (hint)        ^tail (next to arm)
 * </pre>
 *
 * <p>One writer: the thread that holds the communicator's lock arms works here, with plain stores
 * and one release store of the tail, so a launch pays no lock, atomic instruction or fence of its
 * own (a monitor-guarded queue, an event pool and an atomic counter cost measurably more per
 * call: docs/BENCHMARKS.md). A slot is reused only once the work in it has finished, which also bounds the works in
 * flight (so an enqueue never waits in CUDA's launch queue) and makes the slot's event free to
 * record again.
 *
 * <p>Readers (the watchdog, waiters, abort, close) scan from the head hint to the tail. A slot
 * they read may already hold a later work than the index they expect, but only when the expected
 * one had finished; every reader treats any unfinished work it finds as pending, which it is.
 */
final class WorkRing {
    /** Slots; also the most works in flight on one communicator. A power of two. */
    static final int CAPACITY = 512;
    private static final int MASK = CAPACITY - 1;
    private static final VarHandle TAIL = VarHandles.field(MethodHandles.lookup(), "tail", long.class);
    private static final VarHandle HEAD = VarHandles.field(MethodHandles.lookup(), "head", long.class);
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(NcclWork[].class);

    private final NcclWork[] works = new NcclWork[CAPACITY];
    /** Written by the owner only (under the communicator's lock): no reader needs them. */
    private final CudaEvent[] events = new CudaEvent[CAPACITY];
    /** Works armed so far; the next one goes to slot {@code tail & MASK}. Written by the owner. */
    @SuppressWarnings("unused")
    private volatile long tail;
    /** Every work armed before this index has finished (a hint: any thread may advance it; it may lag). */
    @SuppressWarnings("unused")
    private volatile long head;

    /** Works armed so far. */
    long tail() {
        return (long) TAIL.getAcquire(this);
    }

    /**
     * Whether the next slot is known free from the head hint alone: two reads of this ring's
     * own fields, not of the work last in that slot (512 launches old, its memory cold). Without
     * the lock a hint; under it, exact when true.
     */
    boolean hasRoom() {
        return hasRoom(1);
    }

    /** As {@link #hasRoom()}, for {@code slots} more works (a group's). */
    boolean hasRoom(int slots) {
        return (long) TAIL.getOpaque(this) - (long) HEAD.getOpaque(this) <= CAPACITY - slots;
    }

    /**
     * The unfinished work that occupies the next slot, or null when it is free. Without the lock
     * this is a hint (another thread may arm meanwhile); under it, exact.
     */
    NcclWork blocker() {
        NcclWork w = slot((long) TAIL.getOpaque(this));
        return w != null && !w.isFinished() ? w : null;
    }

    /**
     * The event of the next slot, created on first use. Owner only, with the context current and
     * {@link #blocker()} null, i.e. the slot's previous work finished.
     */
    CudaEvent eventFor(CudaDevice device) {
        int s = (int) (long) TAIL.getOpaque(this) & MASK;
        CudaEvent e = events[s];
        if (e == null) {
            e = CudaEvent.pooled(device);
            events[s] = e;
        }
        return e;
    }

    /**
     * Creates the event of every slot that has none yet, so that no later launch pays for one (a
     * launch creates its slot's event on the slot's first use). Owner only, with the context
     * current; a slot with an event keeps it.
     */
    void prefillEvents(CudaDevice device) {
        for (int i = 0; i < CAPACITY; i++) {
            if (events[i] == null) {
                events[i] = CudaEvent.pooled(device);
            }
        }
    }

    /** Publishes {@code w}, armed with {@link #eventFor}'s event, in the next slot. Owner only. */
    void publish(NcclWork w) {
        long t = (long) TAIL.getOpaque(this);
        w.ringIndex = t;
        SLOT.setRelease(works, (int) t & MASK, w); // release: a reader of the slot sees the work's fields
        TAIL.setRelease(this, t + 1); // both plain stores on x86
    }

    /**
     * Moves the head hint past finished works and returns it: every work armed before it has
     * finished. Any thread.
     */
    long advanceHead() {
        long t = tail();
        long h = (long) HEAD.getOpaque(this);
        long from = h;
        h = Math.max(h, t - CAPACITY);
        while (h < t) {
            NcclWork w = slot(h);
            if (w != null && !w.isFinished()) {
                break;
            }
            h++;
        }
        if (h != from) {
            HEAD.setOpaque(this, h); // racing writers may lower it again: it stays a valid hint
        }
        return h;
    }

    /** The work in the slot of index {@code i} (that work, or a later one if it had finished), or null. */
    NcclWork at(long i) {
        return slot(i);
    }

    private NcclWork slot(long i) {
        return (NcclWork) SLOT.getAcquire(works, (int) i & MASK);
    }

    /** Whether some asynchronous work (one the watchdog watches) has not finished. */
    boolean hasWatched() {
        long t = tail();
        for (long i = Math.max((long) HEAD.getOpaque(this), t - CAPACITY); i < t; i++) {
            NcclWork w = slot(i);
            if (w != null && !w.isFinished() && !w.blocking) {
                return true;
            }
        }
        return false;
    }

    /** Every unfinished work, oldest first (a copy; a work appears once, in its one slot). */
    List<NcclWork> unfinished() {
        long t = tail();
        List<NcclWork> out = new ArrayList<>();
        for (long i = Math.max((long) HEAD.getOpaque(this), t - CAPACITY); i < t; i++) {
            NcclWork w = slot(i);
            if (w != null && !w.isFinished()) {
                out.add(w);
            }
        }
        return out;
    }

    /** Completes every work armed before {@code done} on its stream (a stream runs in order). Any thread. */
    void completeThrough(NcclWork done) {
        long end = done.ringIndex;
        if (end < 0) {
            return;
        }
        // The head first: after a run of blocking calls everything before it has finished, and
        // this moves it along one work at a time, so the loop below stays short.
        for (long i = Math.max(advanceHead(), end - CAPACITY + 1); i < end; i++) {
            NcclWork p = slot(i);
            if (p != null && p.ringIndex == i && p.streamHandle() == done.streamHandle()) {
                p.completeInOrder();
            }
        }
    }

    /** Every event created here, for destruction at close (no launch may run then). */
    List<CudaEvent> allEvents() {
        List<CudaEvent> all = new ArrayList<>();
        for (CudaEvent e : events) {
            if (e != null) {
                all.add(e);
            }
        }
        return all;
    }

    /** Forgets the events after they were destroyed. */
    void clearEvents() {
        java.util.Arrays.fill(events, null);
    }
}
