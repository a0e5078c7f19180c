package org.jccl.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.JcclException;
import org.jccl.ReduceOp;
import org.jccl.Work;
import org.junit.jupiter.api.Test;

/**
 * The one call path: every {@link Communicator} method reaches {@link AbstractCommunicator#execute}
 * as one {@link Op} with the right fields, ranks are checked before the backend sees the op, and a
 * {@link Communicator#withTimeout} view's ops carry its deadline.
 */
class AbstractCommunicatorTest {

    /** What a backend saw of one op (the op itself is a flyweight, valid only during execute). */
    record Seen(Collective collective, org.jccl.Buffer send, org.jccl.Buffer recv, ReduceOp op, int root, int peer,
            Duration timeout) {
        static Seen of(Op o) {
            return new Seen(o.collective(), o.send(), o.recv(), o.op(), o.root(), o.peer(), o.timeout());
        }
    }

    /** A backend that records what it is asked to run (rank 1 of 4). */
    static final class Recording extends AbstractCommunicator<Work> {
        final List<Seen> ops = new ArrayList<>();
        final List<Op> instances = new ArrayList<>();
        final List<Boolean> async = new ArrayList<>();
        boolean aborted;
        boolean closed;

        Recording() {
            super("recording", 1, 4, Duration.ofMinutes(5));
        }

        @Override
        protected Work execute(Op op, boolean isAsync) {
            ops.add(Seen.of(op));
            instances.add(op);
            async.add(isAsync);
            return isAsync ? DONE : null;
        }

        @Override
        public Communicator split(int color, int key) {
            return this;
        }

        @Override
        public void abort() {
            aborted = true;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    static final Work DONE = new Work() {
        @Override
        public boolean isDone() {
            return true;
        }

        @Override
        public void await() {
        }

        @Override
        public boolean await(Duration timeout) {
            return true;
        }

        @Override
        public JcclException exception() {
            return null;
        }
    };

    static final HostBuffer A = HostBuffer.of(new float[8]);
    static final HostBuffer B = HostBuffer.of(new float[8]);

    private static Seen only(Recording r, Consumer<Communicator> call, boolean expectAsync) {
        r.ops.clear();
        r.instances.clear();
        r.async.clear();
        call.accept(r);
        assertEquals(1, r.ops.size());
        assertEquals(expectAsync, r.async.getFirst());
        return r.ops.getFirst();
    }

    @Test
    void everyMethodBuildsItsOp() {
        Recording r = new Recording();
        ReduceOp max = ReduceOp.MAX;
        record Case(Consumer<Communicator> call, boolean async, Collective c, HostBuffer send, HostBuffer recv,
                ReduceOp op, int root, int peer) {
        }
        List<Case> cases = List.of(
                new Case(c -> c.allReduce(A, B, max), false, Collective.ALL_REDUCE, A, B, max, -1, -1),
                new Case(c -> c.allReduceAsync(A, B, max), true, Collective.ALL_REDUCE, A, B, max, -1, -1),
                new Case(c -> c.allReduce(A, max), false, Collective.ALL_REDUCE, A, A, max, -1, -1),
                new Case(c -> c.allReduceAsync(A, max), true, Collective.ALL_REDUCE, A, A, max, -1, -1),
                new Case(c -> c.broadcast(A, B, 2), false, Collective.BROADCAST, A, B, null, 2, -1),
                new Case(c -> c.broadcastAsync(A, 3), true, Collective.BROADCAST, A, A, null, 3, -1),
                new Case(c -> c.reduce(A, B, max, 0), false, Collective.REDUCE, A, B, max, 0, -1),
                new Case(c -> c.reduceAsync(A, max, 1), true, Collective.REDUCE, A, A, max, 1, -1),
                new Case(c -> c.allGather(A, B), false, Collective.ALL_GATHER, A, B, null, -1, -1),
                new Case(c -> c.allGatherAsync(A, B), true, Collective.ALL_GATHER, A, B, null, -1, -1),
                new Case(c -> c.reduceScatter(A, B, max), false, Collective.REDUCE_SCATTER, A, B, max, -1, -1),
                new Case(c -> c.reduceScatterAsync(A, B, max), true, Collective.REDUCE_SCATTER, A, B, max, -1, -1),
                new Case(c -> c.allToAll(A, B), false, Collective.ALL_TO_ALL, A, B, null, -1, -1),
                new Case(c -> c.allToAllAsync(A), true, Collective.ALL_TO_ALL, A, A, null, -1, -1),
                new Case(c -> c.gather(A, B, 3), false, Collective.GATHER, A, B, null, 3, -1),
                new Case(c -> c.gatherAsync(A, B, 0), true, Collective.GATHER, A, B, null, 0, -1),
                new Case(c -> c.scatter(A, B, 2), false, Collective.SCATTER, A, B, null, 2, -1),
                new Case(c -> c.scatterAsync(A, B, 1), true, Collective.SCATTER, A, B, null, 1, -1),
                new Case(c -> c.send(A, 0), false, Collective.SEND, A, null, null, -1, 0),
                new Case(c -> c.sendAsync(A, 3), true, Collective.SEND, A, null, null, -1, 3),
                new Case(c -> c.recv(B, 2), false, Collective.RECV, null, B, null, -1, 2),
                new Case(c -> c.recvAsync(B, 0), true, Collective.RECV, null, B, null, -1, 0),
                new Case(Communicator::barrier, false, Collective.BARRIER, null, null, null, -1, -1),
                new Case(Communicator::barrierAsync, true, Collective.BARRIER, null, null, null, -1, -1));
        for (Case k : cases) {
            Seen op = only(r, k.call(), k.async());
            assertEquals(new Seen(k.c(), k.send(), k.recv(), k.op(), k.root(), k.peer(), null), op, k.c().name());
        }
    }

    @Test
    void blockingCallsReuseOneOpPerCommunicator() {
        Recording r = new Recording();
        r.allReduce(A, ReduceOp.SUM);
        r.barrier();
        r.sendAsync(A, 2);
        assertEquals(3, r.instances.size());
        assertSame(r.instances.get(0), r.instances.get(1));
        assertSame(r.instances.get(1), r.instances.get(2));
        assertEquals(Collective.SEND, r.instances.get(2).collective()); // the last call's fields
        assertEquals(Collective.ALL_REDUCE, r.ops.get(0).collective());
    }

    @Test
    void inPlaceAllGatherAndReduceScatterUseSliceRank() {
        Recording r = new Recording();
        Seen g = only(r, c -> c.allGatherAsync(A), true);
        assertSame(A, g.recv());
        assertEquals(2, g.send().count()); // 8 elements over 4 ranks
        assertTrue(g.send().sameStart(A.slice(2, 2)));
        Seen s = only(r, c -> c.reduceScatterAsync(A, ReduceOp.SUM), true);
        assertSame(A, s.send());
        assertTrue(s.recv().sameStart(A.slice(2, 2)));
    }

    @Test
    void rootsAndPeersOutOfRangeAreRefusedBeforeTheBackendSeesTheOp() {
        Recording r = new Recording();
        List<Consumer<Communicator>> bad = List.of(c -> c.broadcast(A, B, 4), c -> c.reduce(A, B, ReduceOp.SUM, -1),
                c -> c.gatherAsync(A, B, 7), c -> c.scatter(A, B, -2), c -> c.send(A, 4), c -> c.recvAsync(B, -1));
        for (Consumer<Communicator> call : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> call.accept(r));
            assertTrue(e.getMessage().contains("but the communicator has ranks 0..3: pass a rank in that range"),
                    e.getMessage());
            assertTrue(e.getMessage().startsWith("root is ") || e.getMessage().startsWith("peer is "), e.getMessage());
        }
        assertTrue(r.ops.isEmpty());
    }

    @Test
    void aViewsOpsCarryItsDeadlineAndTheViewOwnsNothing() {
        Recording r = new Recording();
        Communicator v = r.withTimeout(Duration.ofMillis(300));
        assertEquals(Duration.ofMillis(300), v.timeout());
        assertEquals(1, v.rank());
        assertEquals(4, v.size());
        assertEquals("recording", v.backend());
        Seen viaView = only(r, c -> v.allReduce(A, ReduceOp.SUM), false);
        assertEquals(Duration.ofMillis(300), viaView.timeout());
        assertEquals(300_000_000L, r.instances.getFirst().timeoutNanos(1));
        Seen viaAsync = only(r, c -> v.sendAsync(A, 2), true);
        assertEquals(Duration.ofMillis(300), viaAsync.timeout());
        Seen direct = only(r, c -> c.allReduce(A, ReduceOp.SUM), false);
        assertNull(direct.timeout());
        assertEquals(Duration.ofMinutes(5), r.instances.getFirst().timeoutOr(r.timeout()));
        assertEquals(7L, r.instances.getFirst().timeoutNanos(7));
        assertEquals(Duration.ofSeconds(2), v.withTimeout(Duration.ofSeconds(2)).timeout());
        v.close();
        assertFalse(r.closed);
        v.abort();
        assertTrue(r.aborted);
        assertSame(r, v.split(0, 0));
        assertThrows(IllegalArgumentException.class, () -> r.withTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> v.withTimeout(null));
    }
}
