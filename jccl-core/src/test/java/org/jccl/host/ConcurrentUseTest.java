package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jccl.CollectiveTimeoutException;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.junit.jupiter.api.Test;

/**
 * Real communicators (shared memory, ranks as threads): a second thread calling into a
 * communicator another thread is inside of fails at once naming both, and the first call still
 * completes; {@link Work#awaitWithin} cannot be ignored; {@link Work#toCompletableFuture}.
 */
class ConcurrentUseTest {

    @Test
    void aSecondThreadInsideTheSameCommunicatorFailsAtOnceAndTheFirstCallCompletes() throws Exception {
        CountDownLatch secondFailed = new CountDownLatch(1);
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(30), comm -> {
            float[] x = {comm.rank() + 1};
            if (comm.rank() == 1) {
                // join only after rank 0's second thread has been refused, so rank 0's first call is inside
                assertTrue(secondFailed.await(20, TimeUnit.SECONDS));
                comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);
                return x[0];
            }
            AtomicReference<Throwable> firstFailure = new AtomicReference<>();
            Thread first = Thread.ofPlatform().name("first-caller").start(() -> {
                try {
                    comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);
                } catch (Throwable t) {
                    firstFailure.set(t);
                }
            });
            // Wait until the first thread is inside its call (its stack is in the engine's execute),
            // without calling the communicator from this thread meanwhile: that would be concurrent use
            // too, and could refuse the first thread instead.
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!insideExecute(first)) {
                assertTrue(System.nanoTime() < until && first.isAlive(), "the first thread never got inside its call: "
                        + firstFailure.get());
                Thread.sleep(5);
            }
            // a call whose bad root would fail before anything is sent: refused for the concurrent use
            // first, which is checked before the arguments
            HostBuffer probe = HostBuffer.of(new float[1]);
            InvalidUsageException e = assertThrows(InvalidUsageException.class, () -> comm.broadcast(probe, probe, 7));
            // a withTimeout view is the same communicator: refused too
            InvalidUsageException viaView = assertThrows(InvalidUsageException.class,
                    () -> comm.withTimeout(Duration.ofSeconds(1)).broadcast(probe, probe, 7));
            assertTrue(viaView.getMessage().contains("inside allReduce"), viaView.getMessage());
            secondFailed.countDown();
            String m = e.getMessage();
            assertTrue(m.contains("while thread 'first-caller' is inside allReduce of the same communicator"), m);
            assertTrue(m.contains("called broadcast on rank 0 of 2 (host)") && m.contains("one thread at a time"), m);
            first.join(20_000);
            assertEquals(null, firstFailure.get());
            return x[0];
        });
        assertEquals(3f, out.get(0));
        assertEquals(3f, out.get(1));
    }

    /** Whether {@code t} is inside a host communicator's execute (past the one-thread claim). */
    private static boolean insideExecute(Thread t) {
        for (StackTraceElement f : t.getStackTrace()) {
            if (f.getMethodName().equals("execute") && f.getClassName().endsWith("EngineCommunicator")) {
                return true;
            }
        }
        return false;
    }

    @Test
    void awaitWithinFailsAPendingWorkAndTheWorkStillCompletes() throws Exception {
        CountDownLatch refused = new CountDownLatch(1);
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(30), comm -> {
            int[] x = {comm.rank() + 10};
            if (comm.rank() == 1) {
                assertTrue(refused.await(20, TimeUnit.SECONDS));
                comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);
                return x[0];
            }
            Work w = comm.allReduceAsync(HostBuffer.of(x), ReduceOp.SUM);
            long t0 = System.nanoTime();
            CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                    () -> w.awaitWithin(Duration.ofMillis(200)));
            double secs = (System.nanoTime() - t0) / 1e9;
            refused.countDown();
            assertTrue(secs >= 0.19 && secs < 5, "awaitWithin(200 ms) returned after " + secs + " s");
            assertTrue(e.getMessage().contains("is still pending after PT0.2S (awaitWithin)"), e.getMessage());
            assertTrue(e.missingRanks().isEmpty());
            assertThrows(IllegalArgumentException.class, () -> w.awaitWithin(Duration.ZERO));
            w.awaitWithin(Duration.ofSeconds(20)); // rank 1 joined: completes, returns normally
            return x[0];
        });
        assertEquals(21, out.get(0));
        assertEquals(21, out.get(1));
    }

    @Test
    void toCompletableFutureCompletesWithTheWorkAndExceptionallyWithItsFailure() throws Exception {
        List<Object> out = ThreadRanks.run(2, Duration.ofSeconds(30), comm -> {
            long[] x = {comm.rank() + 1, 100L * (comm.rank() + 1)};
            CompletableFuture<Void> f = comm.allReduceAsync(HostBuffer.of(x), ReduceOp.MAX).toCompletableFuture();
            f.get(20, TimeUnit.SECONDS);
            assertArrayEquals(new long[] {2, 200}, x);
            // an already completed work's future is complete at once
            assertTrue(comm.barrierAsync().toCompletableFuture().get(20, TimeUnit.SECONDS) == null);
            if (comm.rank() == 0) {
                // a failed work: this rank aborts, so its pending collective fails
                Work w = comm.allReduceAsync(HostBuffer.of(new long[1]), ReduceOp.SUM);
                CompletableFuture<Void> failed = w.toCompletableFuture();
                comm.abort();
                ExecutionException e = assertThrows(ExecutionException.class, () -> failed.get(20, TimeUnit.SECONDS));
                assertInstanceOf(JcclException.class, e.getCause());
            }
            return "ok";
        });
        assertEquals(List.of("ok", "ok"), out);
    }
}
