package org.jccl.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.ReduceOp;
import org.jccl.host.tcp.TcpCommunicator;
import org.jccl.host.tune.Tuner;
import org.junit.jupiter.api.Test;

/**
 * {@link org.jccl.Options#withSetting}: a communicator's own settings win over the system property
 * and the environment, apply to that communicator only (not to one created beside it in the same
 * JVM), are inherited by its splits and shrinks, and a bad value fails the creation naming it.
 */
class CommunicatorSettingsTest {
    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void aCommunicatorsSettingsWinOverThePropertyAndItsSplitsAndShrinksInheritThem() throws Exception {
        String before = System.getProperty("jccl.transport");
        System.setProperty("jccl.transport", "shm");
        try {
            List<String> out = ThreadRanks.run(2, T, Duration.ofSeconds(120),
                    o -> o.withSetting("JCCL_TRANSPORT", "tcp").withSetting("JCCL_ALGO", "rhd"), comm -> {
                        StringBuilder b = new StringBuilder(kind(comm));
                        try (Communicator half = comm.split(0, comm.rank());
                             Communicator shrunk = comm.shrink(java.util.Set.of())) {
                            b.append(' ').append(kind(half)).append(' ').append(kind(shrunk));
                            float[] x = {comm.rank() + 1f};
                            shrunk.allReduce(HostBuffer.of(x), ReduceOp.SUM);
                            b.append(' ').append(x[0]);
                        }
                        return b.toString();
                    });
            assertEquals(List.of("tcp/RHD tcp/RHD tcp/RHD 3.0", "tcp/RHD tcp/RHD tcp/RHD 3.0"), out);
            // beside it, in the same JVM, a communicator without settings follows the property
            List<String> plain = ThreadRanks.run(2, T, comm -> kind(comm));
            assertEquals(List.of("shm", "shm"), plain);
        } finally {
            if (before == null) {
                System.clearProperty("jccl.transport");
            } else {
                System.setProperty("jccl.transport", before);
            }
        }
    }

    @Test
    void aBadSettingValueFailsTheCreationNamingTheSetting() {
        Exception e = assertThrows(Exception.class, () -> ThreadRanks.run(2, T, Duration.ofSeconds(120),
                o -> o.withSetting("JCCL_TRANSPORT", "tcp").withSetting("JCCL_TCP_CHUNK_BYTES", "12"), comm -> "created"));
        Throwable c = e;
        while (!(c instanceof IllegalArgumentException) && c.getCause() != null) {
            c = c.getCause();
        }
        assertInstanceOf(IllegalArgumentException.class, c, () -> "not an IllegalArgumentException: " + e);
        assertTrue(c.getMessage().contains("JCCL_TCP_CHUNK_BYTES"), c.getMessage());
    }

    /** "shm", or "tcp/ALGO" with the all-reduce algorithm a TCP communicator picks for 8 bytes. */
    private static String kind(Communicator c) {
        if (c instanceof TcpCommunicator t) {
            Tuner.AllReduceAlgo a = t.allReduceAlgorithm(8);
            return "tcp/" + a;
        }
        assertInstanceOf(HostCommunicator.class, c);
        return "shm";
    }
}
