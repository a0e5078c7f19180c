package org.jccl;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jccl.bootstrap.EnvDiscovery;
import org.junit.jupiter.api.Test;

/** Jccl.init's checks that come before any backend runs. */
class JcclInitTest {

    @Test
    void aMultiRankJobWithoutStoreAddressIsRefusedForABackendThatNeedsAStore() {
        // What Open MPI's variables alone describe: rank and size, no store address.
        Options o = EnvDiscovery.discover(java.util.Map.of("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2"))
                .withBackend("host");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Jccl.init(o));
        for (String w : new String[] {"JCCL_STORE", "MASTER_ADDR", "JCCL_BACKEND=mpi", "2 ranks"}) {
            assertTrue(e.getMessage().contains(w), "message lacks '" + w + "': " + e.getMessage());
        }
    }
}
