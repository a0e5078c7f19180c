package org.jccl.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class TableTest {
    @Test
    void columnHeadersAreNcclTests() {
        // The three lines nccl-tests' common.cu prints, with its printf widths, then jccl's
        // trailing "first call" columns.
        String nl = System.lineSeparator();
        String want = "#                                                              out-of-place                       in-place          "
                + " first call " + nl
                + "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
                + "      oop       ip" + nl
                + "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "
                + "     (us)     (us)" + nl;
        assertEquals(want, Table.columns());
    }

    @Test
    void rowsUseNcclTestsWidthsAndTimeFormats() {
        Row r = new Row("allreduce", "float", "sum", -1, 1024, 256,
                new Measurement(5.123, 0.2, 0.3, 0), new Measurement(123.45, 12.345, 1.5, Measurement.NOT_CHECKED));
        assertEquals("        1024           256     float     sum      -1     5.12    0.20    0.30      0"
                + "    123.5   12.35    1.50    N/A", Table.row(r));
        Row big = new Row("broadcast", "double", "none", 3, 1L << 30, 1L << 27,
                new Measurement(12345.6, 86.97, 86.97, 7), null);
        String line = Table.row(big);
        assertTrue(line.startsWith("  1073741824     134217728    double    none       3    12346   86.97   86.97      7"), line);
        assertTrue(line.endsWith("        -       -       -      -"), line);
        // The first-call columns follow nccl-tests' columns, in its time format; "-" where not measured.
        Row first = new Row("allreduce", "float", "sum", -1, 8, 2, new Measurement(1.5, 0, 0, 0, 812.2),
                new Measurement(1.25, 0, 0, 0, 12345.6));
        assertTrue(Table.row(first).endsWith("      0    812.2    12346"), Table.row(first));
        Row half = new Row("allreduce", "float", "sum", -1, 8, 2, new Measurement(1.5, 0, 0, 0, 3.5), null);
        assertTrue(Table.row(half).endsWith("      -     3.50        -"), Table.row(half));
        // nccl-tests' name for PreMulSum.
        assertTrue(Table.row(new Row("allreduce", "float", "premulsum", -1, 8, 2, null, null)).contains(" mulsum "));
    }

    @Test
    void timeThresholds() {
        assertEquals("   0.50", Table.time(0.5));
        assertEquals("  99.99", Table.time(99.99));
        assertEquals("  100.0", Table.time(100));
        assertEquals(" 9999.9", Table.time(9999.94));
        assertEquals("  10000", Table.time(10000));
    }

    @Test
    void formatGMatchesCPrintf() {
        // Outputs of C's printf("%g") for the same values.
        double[] in = {0.0, 1.5, 123456789.0, 0.0001234, 0.00001234, 12.3456789, 100000.0, 1000000.0, 999999.5, 0.1,
            2.0 / 3, 1e-10, -3.25, 1234567.0, 9.9999996e-05};
        String[] out = {"0", "1.5", "1.23457e+08", "0.0001234", "1.234e-05", "12.3457", "100000", "1e+06", "1e+06",
            "0.1", "0.666667", "1e-10", "-3.25", "1.23457e+06", "0.0001"};
        for (int i = 0; i < in.length; i++) {
            assertEquals(out[i], Table.formatG(in[i]), "value " + in[i]);
        }
    }

    @Test
    void footerCountsFailedMeasurementsAndAveragesBusBandwidth() {
        List<Row> rows = List.of(
                new Row("allreduce", "float", "sum", -1, 8, 2, new Measurement(1, 1, 2, 0), new Measurement(1, 1, 4, 3)),
                new Row("allreduce", "float", "sum", -1, 16, 4, new Measurement(1, 1, 6, 1), new Measurement(1, 1, 8,
                        Measurement.NOT_CHECKED)));
        assertEquals(2, Table.outOfBounds(rows));
        assertEquals(5.0, Table.averageBusBw(rows), 0);
        String nl = System.lineSeparator();
        assertEquals("# Out of bounds values : 2 FAILED" + nl + "# Avg bus bandwidth    : 5 " + nl + "#" + nl,
                Table.footer(rows));
        List<Row> good = List.of(new Row("allgather", "int8", "none", -1, 8, 2, new Measurement(1, 1, 1.25, 0), null));
        assertTrue(Table.footer(good).startsWith("# Out of bounds values : 0 OK" + nl + "# Avg bus bandwidth    : 1.25 "));
    }
}
