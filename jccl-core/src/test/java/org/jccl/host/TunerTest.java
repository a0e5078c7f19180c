package org.jccl.host;

import org.jccl.host.tune.Tuner;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TunerTest {
    @Test
    void choosesOneShotForSmallAndReduceScatterAllGatherForLargeMessages() {
        Tuner t = new Tuner(null, -1);
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(8, 4));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(512, 16));
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce(513, 4), "from 4 ranks the second synchronisation pays from 1 KiB");
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce(4 << 10, 8));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(1 << 10, 3));
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce(2 << 10, 3));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(64 << 10, 2), "two ranks keep one-shot much longer");
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce((64 << 10) + 4, 2));
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce(1 << 20, 2));
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
    }
}
