package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jccl.CollectiveTimeoutException;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.jccl.bootstrap.TimeToError;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Per-call deadlines: {@link Communicator#withTimeout(Duration)} views of host communicators over
 * shared memory, TCP and the hierarchical composition, whose default deadline is a minute.
 */
class WithTimeoutTest {
    static final Duration LONG = Duration.ofSeconds(60);
    static final Duration SHORT = Duration.ofMillis(300);
    // docs/RELIABILITY.md's times (upper ends, under load) for the 300 ms view, asserted per rank at <= 3x (and >= 300 ms)
    static final Map<String, Double> VIEW_SECS = Map.of("shm", 0.61, "tcp", 0.319, "hierarchical", 1.01);
    static final double ASYNC_VIEW_SECS = 1.34;

    /** Runs {@code body} on ranks as threads over the given transport ({@code hierarchical}: two pretend hosts). */
    static <T> List<T> run(String kind, int n, ThreadRanks.RankBody<T> body) throws Exception {
        if (kind.equals("hierarchical")) {
            String[] hosts = new String[n];
            for (int i = 0; i < n; i++) {
                hosts[i] = i < n / 2 ? "hostA" : "hostB";
            }
            return HierarchicalTest.run(hosts, LONG, body);
        }
        if (kind.equals("tcp")) {
            System.setProperty("jccl.transport", "tcp");
        }
        try {
            return ThreadRanks.run(n, LONG, Duration.ofSeconds(60), body);
        } finally {
            System.clearProperty("jccl.transport");
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shm", "tcp", "hierarchical"})
    void aViewsDeadlineEndsAWaitForARankThatNeverCalls(String kind) throws Exception {
        int n = kind.equals("hierarchical") ? 4 : 2;
        CountDownLatch rank0Done = new CountDownLatch(1);
        List<Object> out = run(kind, n, comm -> {
            float[] a = new float[1000];
            comm.allReduce(HostBuffer.of(a), ReduceOp.SUM); // everyone is there once
            if (comm.rank() == 1) {
                rank0Done.await(30, TimeUnit.SECONDS); // never calls the second one
                return "idle";
            }
            Communicator quick = comm.withTimeout(SHORT);
            assertEquals(SHORT, quick.timeout());
            assertEquals(LONG, comm.timeout());
            long t0 = System.nanoTime();
            try {
                quick.allReduce(HostBuffer.of(a), ReduceOp.SUM);
                return "no error";
            } catch (JcclException e) {
                double secs = (System.nanoTime() - t0) / 1e9;
                if (comm.rank() == 0) {
                    rank0Done.countDown();
                }
                return new Object[] {e, secs};
            }
        });
        Object[] r0 = (Object[]) out.get(0);
        CollectiveTimeoutException e = assertInstanceOf(CollectiveTimeoutException.class, r0[0]);
        assertEquals(List.of(1), e.missingRanks(), e.getMessage());
        assertTrue(e.getMessage().contains("PT0.3S"), e.getMessage());
        assertEquals("idle", out.get(1));
        // every rank that called through its view (hierarchical: 0, 2 and 3) failed in time, none before its deadline
        for (int r = 0; r < n; r++) {
            if (r == 1) {
                continue;
            }
            Object[] o = assertInstanceOf(Object[].class, out.get(r), "rank " + r + ": " + out.get(r));
            double secs = (double) o[1];
            System.out.printf("%s: rank %d's withTimeout(%s) all-reduce failed after %.3f s: %s%n", kind, r, SHORT, secs, o[0]);
            assertInstanceOf(JcclException.class, o[0], "rank " + r);
            String scenario = kind + ": withTimeout(300 ms) while rank 1 never calls";
            if (o[0] instanceof CollectiveTimeoutException) {
                TimeToError.assertDeadline(scenario, r, secs, SHORT.toNanos() / 1e9, VIEW_SECS.get(kind));
            } else {
                TimeToError.assertWithin(scenario + " (told by a peer)", r, secs, VIEW_SECS.get(kind));
            }
        }
    }

    @Test
    void asyncWorkThroughAViewHasTheViewsDeadline() throws Exception {
        CountDownLatch rank0Done = new CountDownLatch(1);
        List<Object> out = run("shm", 2, comm -> {
            float[] a = new float[100];
            if (comm.rank() == 1) {
                rank0Done.await(30, TimeUnit.SECONDS);
                return "idle";
            }
            long t0 = System.nanoTime();
            Work w = comm.withTimeout(SHORT).allReduceAsync(HostBuffer.of(a), ReduceOp.SUM);
            try {
                w.await(); // the view's deadline, not the communicator's minute
                return "no error";
            } catch (JcclException e) {
                rank0Done.countDown();
                return new Object[] {e, (System.nanoTime() - t0) / 1e9};
            }
        });
        Object[] r0 = (Object[]) out.get(0);
        double secs = (double) r0[1];
        System.out.printf("async: withTimeout(%s) work failed after %.3f s: %s%n", SHORT, secs, r0[0]);
        assertEquals(List.of(1), assertInstanceOf(CollectiveTimeoutException.class, r0[0]).missingRanks());
        TimeToError.assertDeadline("async Work.await() of a withTimeout(300 ms) view", 0, secs, SHORT.toNanos() / 1e9,
                ASYNC_VIEW_SECS);
    }

    @Test
    void aViewIsTheSameCommunicatorAndClosingItClosesNothing() throws Exception {
        List<Object> out = run("shm", 2, comm -> {
            Communicator v = comm.withTimeout(Duration.ofSeconds(5));
            assertEquals(comm.rank(), v.rank());
            assertEquals(comm.size(), v.size());
            assertEquals("host", v.backend());
            assertEquals(Duration.ofSeconds(7), v.withTimeout(Duration.ofSeconds(7)).timeout());
            float[] a = {comm.rank() + 1};
            // rank 0 through the view, rank 1 directly: the same sequence of calls
            (comm.rank() == 0 ? v : comm).allReduce(HostBuffer.of(a), ReduceOp.SUM);
            float[] b = {comm.rank() + 1};
            (comm.rank() == 1 ? v : comm).allReduceAsync(HostBuffer.of(b), ReduceOp.SUM).await();
            v.close(); // does nothing
            float[] c = {10};
            comm.allReduce(HostBuffer.of(c), ReduceOp.SUM);
            v.barrier(); // the view still works too
            return new float[] {a[0], b[0], c[0]};
        });
        for (Object o : out) {
            float[] r = (float[]) o;
            assertEquals(3f, r[0]);
            assertEquals(3f, r[1]);
            assertEquals(20f, r[2]);
        }
    }

    @Test
    void badTimeoutsAreRefusedNamingTheArgument() throws Exception {
        run("shm", 1, comm -> {
            for (Duration bad : new Duration[] {null, Duration.ZERO, Duration.ofMillis(-5)}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> comm.withTimeout(bad));
                assertTrue(e.getMessage().startsWith("timeout is "), e.getMessage());
                assertTrue(e.getMessage().contains("positive Duration"), e.getMessage());
            }
            return null;
        });
    }

    @Test
    void aBackendWithoutPerCallDeadlinesSaysWhatToUse() {
        Communicator plain = java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {Communicator.class}, (proxy, m, args) -> {
                    if (m.isDefault()) {
                        return java.lang.reflect.InvocationHandler.invokeDefault(proxy, m, args);
                    }
                    return m.getName().equals("backend") ? "example" : null;
                }) instanceof Communicator c ? c : null;
        org.jccl.InvalidUsageException e = assertThrows(org.jccl.InvalidUsageException.class,
                () -> plain.withTimeout(Duration.ofSeconds(1)));
        assertTrue(e.getMessage().contains("the example backend") && e.getMessage().contains("Work.await(Duration)"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> plain.withTimeout(null));
        assertSame(plain, plain);
    }
}
