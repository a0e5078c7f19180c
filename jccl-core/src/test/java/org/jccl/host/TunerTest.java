package org.jccl.host;

import org.jccl.host.tune.Tuner;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TunerTest {
    @Test
    void choosesOneShotForSmallAndReduceScatterAllGatherForLargeMessages() {
        Tuner t = new Tuner(null, 32 << 10);
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(8, 4));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(32 << 10, 4));
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce((32 << 10) + 1, 4));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, t.allReduce(64 << 10, 2), "two ranks keep one-shot twice as long");
        assertEquals(Tuner.AllReduceAlgo.RSAG, t.allReduce(1 << 20, 2));
    }

    @Test
    void jcclAlgoForcesOneAndAnUnknownNameListsTheValidOnes() {
        assertEquals(Tuner.AllReduceAlgo.RSAG, new Tuner("rsag", 1 << 20).allReduce(8, 2));
        assertEquals(Tuner.AllReduceAlgo.ONESHOT, new Tuner("OneShot", 0).allReduce(1 << 30, 8));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Tuner("bogus", 0));
        assertTrue(e.getMessage().contains("JCCL_ALGO=bogus") && e.getMessage().contains("oneshot, rsag"), e.getMessage());
    }
}
