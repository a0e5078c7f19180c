package org.jccl.host.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The call lock of a communicator: one compare-and-set to take it, a release store to give it
 * back. A {@code ReentrantLock}'s unlock is a full fence (it must then look for a queued waiter):
 * on a small collective's hot path that fence waited for the call's last stores (its posted
 * header and done words, lines the peers poll) to reach the peers, about a sixth of a 4-rank
 * gather's time. Here nobody is woken: the rare waiter (a close, an abort or a failure report from
 * another thread, a caller behind the async worker) polls, parking 1 to 50 us between tries.
 *
 * <p>Not reentrant: a thread that asks for the lock it holds fails at once rather than waiting
 * for itself.
 */
final class CallLock {
    private static final VarHandle STATE;
    private static final VarHandle OWNER;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(CallLock.class, "state", int.class);
            OWNER = l.findVarHandle(CallLock.class, "owner", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through STATE
    private volatile int state;
    /** The holder (written after taking, cleared before giving back): for the self-deadlock check. */
    private volatile Thread owner;

    /** Takes the lock, waiting for it as long as it takes. */
    void lock() {
        if (!STATE.compareAndSet(this, 0, 1)) {
            slowLock();
        }
        setOwner();
    }

    /** Takes the lock if it is free. */
    boolean tryLock() {
        if (STATE.compareAndSet(this, 0, 1)) {
            setOwner();
            return true;
        }
        return false;
    }

    /** Gives the lock back (the holder only). */
    void unlock() {
        OWNER.setOpaque(this, (Thread) null);
        STATE.setRelease(this, 0);
    }

    private void setOwner() {
        OWNER.setOpaque(this, Thread.currentThread());
    }

    /** A waiter's polls: 100 spins, 100 yields, then parks from 1 us doubling to 50 us. */
    private static final org.jccl.spi.IdleStrategy WAIT = new org.jccl.spi.BackoffIdleStrategy(100, 100, 1_000, 50_000);

    private void slowLock() {
        Thread me = Thread.currentThread();
        for (int i = 0; ; i++) {
            if ((int) STATE.getOpaque(this) == 0 && STATE.compareAndSet(this, 0, 1)) {
                return;
            }
            if (OWNER.getOpaque(this) == me) {
                throw new IllegalStateException("the call lock is already held by this thread (" + me.getName() + ")");
            }
            WAIT.idle(i);
        }
    }
}
