package org.jccl.host.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The communicator's call lock: mutual exclusion, tryLock, and no wait for itself. */
class CallLockTest {
    @Test
    @Timeout(60)
    void excludesConcurrentHoldersAndPublishesTheirWrites() throws Exception {
        CallLock lock = new CallLock();
        int threads = 4;
        int rounds = 20_000;
        long[] counter = {0}; // plain: only the lock orders the threads' updates
        AtomicBoolean inside = new AtomicBoolean();
        AtomicBoolean overlap = new AtomicBoolean();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < rounds; i++) {
                    lock.lock();
                    try {
                        if (!inside.compareAndSet(false, true)) {
                            overlap.set(true);
                        }
                        counter[0]++;
                        inside.set(false);
                    } finally {
                        lock.unlock();
                    }
                }
            }));
        }
        start.countDown();
        for (Thread t : ts) {
            t.join();
        }
        assertFalse(overlap.get(), "two threads held the lock at once");
        lock.lock();
        try {
            assertEquals((long) threads * rounds, counter[0], "increments made under the lock were lost");
        } finally {
            lock.unlock();
        }
    }

    @Test
    @Timeout(30)
    void tryLockFailsWhileAnotherThreadHoldsItAndSucceedsAfter() throws Exception {
        CallLock lock = new CallLock();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread holder = Thread.ofPlatform().start(() -> {
            lock.lock();
            held.countDown();
            try {
                release.await();
            } catch (InterruptedException ignored) {
                // give it back
            } finally {
                lock.unlock();
            }
        });
        assertTrue(held.await(10, TimeUnit.SECONDS));
        assertFalse(lock.tryLock(), "tryLock took a lock another thread holds");
        // a waiter blocked in lock() gets it once the holder gives it back
        CountDownLatch got = new CountDownLatch(1);
        Thread waiter = Thread.ofPlatform().start(() -> {
            lock.lock();
            got.countDown();
            lock.unlock();
        });
        assertFalse(got.await(50, TimeUnit.MILLISECONDS), "lock() returned while another thread held the lock");
        release.countDown();
        assertTrue(got.await(10, TimeUnit.SECONDS), "the waiter never got the lock after it was given back");
        holder.join();
        waiter.join();
        assertTrue(lock.tryLock());
        lock.unlock();
    }

    @Test
    @Timeout(10)
    void aThreadAskingForTheLockItHoldsFailsInsteadOfWaitingForItself() {
        CallLock lock = new CallLock();
        lock.lock();
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class, lock::lock);
            assertTrue(e.getMessage().contains("already held by this thread"), e.getMessage());
            assertFalse(lock.tryLock(), "tryLock is not reentrant either");
        } finally {
            lock.unlock();
        }
        assertTrue(lock.tryLock(), "the lock stays usable after the refused re-entry");
        lock.unlock();
    }
}
