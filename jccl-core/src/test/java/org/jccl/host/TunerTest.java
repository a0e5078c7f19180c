package org.jccl.host;

import org.jccl.host.tune.Tuner;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TunerTest {
    @Test
    void choosesOneShotForSmallAndReduceScatterAllGatherForLargeMessages() {
        Tuner t = new Tuner(null, -1, 32);
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(8, 4));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(512, 16));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(1 << 10, 16));
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce((1 << 10) + 4, 16), "3+ ranks: the reduce-scatter step from 1 KiB");
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce(32 << 10, 16));
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce(4 << 10, 3));
        assertEquals(1 << 10, t.oneShotMaxBytes(4));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(32 << 10, 2));
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce((32 << 10) + 4, 2), "2 ranks with cores to spare");
        Tuner twoCores = new Tuner(null, -1, 2);
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, twoCores.allReduce(64 << 10, 2), "2 ranks on 2 cores keep one-shot long");
        assertEquals(Tuner.AllReduceAlgo.RSAG, twoCores.allReduce((64 << 10) + 4, 2));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, new Tuner(null, -1, 3).allReduce(64 << 10, 2));
        assertEquals(Tuner.AllReduceAlgo.RSAG, new Tuner(null, -1, 4).allReduce(64 << 10, 2));
    }

    @Test
    void jcclOneShotMaxBytesIsOneLimitForEveryRankCount() {
        Tuner t = new Tuner(null, 32 << 10);
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(32 << 10, 16));
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce((32 << 10) + 4, 2));
        assertEquals(Tuner.AllReduceAlgo.RSAG, new Tuner(null, 0).allReduce(4, 2));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> org.jccl.internal.Settings.with(java.util.Map.of("JCCL_ONESHOT_MAX_BYTES", "-5"), Tuner::fromEnv));
        assertTrue(e.getMessage().contains("JCCL_ONESHOT_MAX_BYTES=-5"), e.getMessage());
    }

    @Test
    void jcclAlgoForcesOneAndAnUnknownNameListsTheValidOnes() {
        assertEquals(Tuner.AllReduceAlgo.RSAG, new Tuner("rsag", 1 << 20).allReduce(8, 2));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, new Tuner("OneShot", 0).allReduce(1 << 30, 8));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Tuner("bogus", 0));
        assertTrue(e.getMessage().contains("JCCL_ALGO=bogus") && e.getMessage().contains("oneshot, rsag"), e.getMessage());
        Tuner auto = new Tuner(" Auto ", -1);
        assertEquals(new Tuner(null, -1).allReduce(1 << 20, 8), auto.allReduce(1 << 20, 8), "JCCL_ALGO=auto: the tuner chooses");
        assertEquals(new Tuner(null, -1).allReduce(8, 8), auto.allReduce(8, 8));
    }

    @Test
    void smallReducesGoOneShotWhileTheRootReadsAtMost4KiB() {
        Tuner t = new Tuner(null, -1);
        assertTrue(t.reduceOneShot(8, 16));
        assertTrue(t.reduceOneShot(256, 16));
        assertEquals(false, t.reduceOneShot(256 + 4, 16));
        assertTrue(t.reduceOneShot(1 << 10, 4));
        assertEquals(false, t.reduceOneShot(4 << 10, 4), "4 KiB at 4 ranks: the reduce-scatter step (measured faster)");
        assertTrue(t.reduceOneShot(64 << 10, 2));
        assertEquals(false, t.reduceOneShot((64 << 10) + 4, 2), "2 ranks, 64 KiB-1 MiB: the reduce-scatter step");
        assertEquals(false, t.reduceOneShot(256 << 10, 2));
        assertTrue(t.reduceOneShot(1 << 20, 2), "2 ranks from 1 MiB: one-shot, pipelined over the ring");
        assertTrue(t.reduceOneShot(16 << 20, 2));
        assertEquals(false, t.reduceOneShot(1 << 20, 3), "3 ranks keep the reduce-scatter step");
        assertEquals(false, new Tuner("rsag", -1).reduceOneShot(8, 2), "JCCL_ALGO=rsag forces the reduce-scatter step");
        assertTrue(new Tuner("oneshot", -1).reduceOneShot(1 << 20, 8));
    }
}
