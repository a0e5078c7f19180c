package org.jccl.host.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jccl.spi.Collective;
import org.junit.jupiter.api.Test;

/** The op descriptor's numbering is the host engine's wire numbering: ranks of two builds must agree. */
class OpCodeTest {

    @Test
    void everyCollectiveHasItsWireCodeAndApiName() {
        int[] wire = {OpCode.ALL_REDUCE, OpCode.BROADCAST, OpCode.REDUCE, OpCode.ALL_GATHER, OpCode.REDUCE_SCATTER,
            OpCode.ALL_TO_ALL, OpCode.GATHER, OpCode.SCATTER, OpCode.BARRIER, OpCode.SEND, OpCode.RECV};
        String[] api = {"allReduce", "broadcast", "reduce", "allGather", "reduceScatter", "allToAll", "gather",
            "scatter", "barrier", "send", "recv"};
        assertEquals(wire.length, Collective.values().length);
        for (int i = 0; i < wire.length; i++) {
            Collective c = Collective.values()[i];
            assertEquals(wire[i], c.code(), c.name());
            assertEquals(c, Collective.of(wire[i]));
            assertEquals(api[i], c.apiName());
            assertEquals(api[i], OpCode.name(c.code()));
        }
        assertEquals("split", OpCode.name(OpCode.SPLIT));
    }
}
