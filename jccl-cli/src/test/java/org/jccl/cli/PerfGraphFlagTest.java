package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.jccl.cli.perf.Collective;
import org.jccl.cli.perf.PerfConfig;
import org.junit.jupiter.api.Test;

/** {@code jccl perf -G N} (CUDA graph launches, as nccl-tests): its help, and bad values refused in one line before anything runs. */
class PerfGraphFlagTest {
    @Test
    void helpNamesTheFlag() {
        MainTest.Result h = MainTest.main("perf", "--help");
        assertEquals(0, h.code());
        assertTrue(h.out().contains("-G, --cudagraph=N"), h.out());
        assertTrue(h.out().contains("graph"), h.out());
    }

    @Test
    void badGraphFlagsAreOneLineNamingTheFlagAndTheFix() {
        String[][] cases = {
            {"-G", "-1", "'-G'", "0"},
            {"-G", "x", "'--cudagraph'", "x"},
            {"-G", "2", "'-G'", "--backend nccl", "host"},
            {"--cudagraph=3", null, "'-G'", "--backend nccl"},
        };
        for (String[] c : cases) {
            MainTest.Result r = c[1] == null ? MainTest.main("perf", "allreduce", c[0])
                    : MainTest.main("perf", "allreduce", c[0], c[1]);
            assertEquals(2, r.code(), String.join(" ", c[0]) + ": " + r.err());
            MainTest.assertOneLine(r.err(), java.util.Arrays.copyOfRange(c, 2, c.length));
            assertEquals("", r.out());
        }
        MainTest.Result mpi = MainTest.main("perf", "allreduce", "--backend", "mpi", "-G", "1");
        assertEquals(2, mpi.code());
        MainTest.assertOneLine(mpi.err(), "'-G'", "mpi backend takes -G 0");
        MainTest.Result blocking = MainTest.main("perf", "allreduce", "--backend", "nccl", "-z", "1", "-G", "5");
        assertEquals(2, blocking.code());
        MainTest.assertOneLine(blocking.err(), "'-G'", "-z 1", "-z 0");
        assertEquals("", blocking.out());
    }

    @Test
    void theConfigRefusesWhatTheFlagsRefuse() {
        IllegalArgumentException neg = assertThrows(IllegalArgumentException.class, () -> config(false, -1));
        assertTrue(neg.getMessage().contains("-G is -1"), neg.getMessage());
        IllegalArgumentException blocking = assertThrows(IllegalArgumentException.class, () -> config(true, 2));
        assertTrue(blocking.getMessage().contains("-z 0"), blocking.getMessage());
        assertEquals(7, config(false, 7).graphLaunches());
        assertEquals(0, new PerfConfig(List.of(Collective.ALLREDUCE), 8, 64, 1, 2, 2, 1, true, List.of(ReduceOp.SUM),
                List.of(DataType.FLOAT32), 0, false, 1).graphLaunches());
    }

    private static PerfConfig config(boolean blocking, int launches) {
        return new PerfConfig(List.of(Collective.ALLREDUCE), 8, 64, 1, 2, 2, 1, true, List.of(ReduceOp.SUM),
                List.of(DataType.FLOAT32), 0, blocking, 1, launches);
    }
}
