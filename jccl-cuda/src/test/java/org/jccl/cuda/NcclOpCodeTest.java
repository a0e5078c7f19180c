package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jccl.spi.Collective;
import org.junit.jupiter.api.Test;

/** The NCCL backend's operation kinds are the one numbering ({@link Collective#code()}); no GPU needed. */
class NcclOpCodeTest {

    @Test
    void kindsAreTheCollectiveCodesAndNamedAlike() {
        int[] kinds = {NcclCommunicator.ALL_REDUCE, NcclCommunicator.BROADCAST, NcclCommunicator.REDUCE,
            NcclCommunicator.ALL_GATHER, NcclCommunicator.REDUCE_SCATTER, NcclCommunicator.ALL_TO_ALL,
            NcclCommunicator.GATHER, NcclCommunicator.SCATTER, NcclCommunicator.BARRIER, NcclCommunicator.SEND,
            NcclCommunicator.RECV};
        assertEquals(Collective.values().length, kinds.length);
        for (int i = 0; i < kinds.length; i++) {
            Collective c = Collective.values()[i];
            assertEquals(c.code(), kinds[i], c.name());
            assertEquals(c.apiName(), NcclCommunicator.opName(kinds[i]));
        }
    }
}
