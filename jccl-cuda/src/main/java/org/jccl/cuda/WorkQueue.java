package org.jccl.cuda;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A communicator's outstanding asynchronous works, oldest first. An array deque under a monitor:
 * the enqueuing thread appends without allocating, and the watchdog and the waiters touch it
 * briefly. (A lock-free linked queue measured slower here: every append allocated a node and
 * contended with the watchdog's removals; its operations were most of jccl's own cost per call.)
 */
final class WorkQueue {
    private final ArrayDeque<NcclWork> works = new ArrayDeque<>();
    private volatile int size;

    synchronized void add(NcclWork w) {
        works.addLast(w);
        size = works.size();
    }

    synchronized NcclWork peek() {
        return works.peekFirst();
    }

    synchronized NcclWork poll() {
        NcclWork w = works.pollFirst();
        size = works.size();
        return w;
    }

    synchronized boolean remove(NcclWork w) {
        boolean r = works.peekFirst() == w ? works.pollFirst() != null : works.removeFirstOccurrence(w);
        size = works.size();
        return r;
    }

    /** No lock: a volatile read. */
    boolean isEmpty() {
        return size == 0;
    }

    /** Drops finished works from the head, then returns up to {@code max} works from the head, oldest first. */
    synchronized List<NcclWork> head(int max) {
        while (!works.isEmpty() && works.peekFirst().isFinished()) {
            works.pollFirst();
        }
        size = works.size();
        List<NcclWork> out = new ArrayList<>(Math.min(max, works.size()));
        for (NcclWork w : works) {
            if (out.size() >= max) {
                break;
            }
            out.add(w);
        }
        return out;
    }

    /** Completes every work issued before {@code done} on its stream (streams run in order). */
    synchronized void completeThrough(NcclWork done) {
        for (NcclWork p : works) {
            if (p.sequence() >= done.sequence()) {
                break;
            }
            if (p.streamHandle() == done.streamHandle()) {
                p.completeInOrder();
            }
        }
    }

    /** A copy of every work, oldest first. */
    synchronized List<NcclWork> snapshot() {
        return new ArrayList<>(works);
    }
}
