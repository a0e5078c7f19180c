package org.jccl.cli.perf;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.List;
import java.util.Locale;

/** The nccl-tests table: column headers, one line per {@link Row}, and the footer. */
public final class Table {
    private Table() {
    }

    /** The three header lines of the columns, as nccl-tests prints them. */
    public static String columns() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place           first call %n",
                "", "", "", "", ""));
        sb.append(String.format(Locale.ROOT, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s  %7s  %7s%n",
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "oop", "ip"));
        sb.append(String.format(Locale.ROOT, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s  %7s  %7s%n",
                "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)"));
        return sb.toString();
    }

    /** One line of the table, without the line break. */
    public static String row(Row r) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%12d  %12d  %8s  %6s  %6d",
                r.bytes(), r.count(), r.dtype(), tableOpName(r.op()), r.root()));
        cell(sb, r.oop());
        cell(sb, r.ip());
        if (first(r.oop()) || first(r.ip())) {
            // Trailing columns: readers of nccl-tests' columns by position still find theirs.
            for (Measurement m : new Measurement[] {r.oop(), r.ip()}) {
                sb.append("  ").append(first(m) ? time(m.firstUs()) : String.format(Locale.ROOT, "%7s", "-"));
            }
        }
        return sb.toString();
    }

    private static void cell(StringBuilder sb, Measurement m) {
        if (m == null) {
            sb.append(String.format(Locale.ROOT, "  %7s  %6s  %6s  %5s", "-", "-", "-", "-"));
            return;
        }
        sb.append(String.format(Locale.ROOT, "  %7s  %6.2f  %6.2f  %5s", time(m.timeUs()), m.algBw(), m.busBw(),
                m.checked() ? Long.toString(m.wrong()) : "N/A"));
    }

    private static boolean first(Measurement m) {
        return m != null && !Double.isNaN(m.firstUs());
    }

    /** nccl-tests prints PreMulSum as "mulsum"; every other name is printed as it is. */
    static String tableOpName(String op) {
        return "premulsum".equals(op) ? "mulsum" : op;
    }

    /** A time in microseconds as nccl-tests prints it: 2 decimals below 100, 1 below 10000, else none. */
    public static String time(double us) {
        if (us >= 10000.0) {
            return String.format(Locale.ROOT, "%7.0f", us);
        }
        if (us >= 100.0) {
            return String.format(Locale.ROOT, "%7.1f", us);
        }
        return String.format(Locale.ROOT, "%7.2f", us);
    }

    /** Number of measurements with wrong elements (nccl-tests' "Out of bounds values"). */
    public static long outOfBounds(List<Row> rows) {
        long n = 0;
        for (Row r : rows) {
            n += (r.oop() != null && r.oop().wrong() > 0 ? 1 : 0) + (r.ip() != null && r.ip().wrong() > 0 ? 1 : 0);
        }
        return n;
    }

    /** Mean bus bandwidth over every measurement, out of place and in place (nccl-tests' "Avg bus bandwidth"). */
    public static double averageBusBw(List<Row> rows) {
        double sum = 0;
        int n = 0;
        for (Row r : rows) {
            for (Measurement m : new Measurement[] {r.oop(), r.ip()}) {
                if (m != null) {
                    sum += m.busBw();
                    n++;
                }
            }
        }
        return n == 0 ? 0 : sum / n;
    }

    /** The footer: out-of-bounds count with OK/FAILED, average bus bandwidth, and a closing "#". */
    public static String footer(List<Row> rows) {
        long bad = outOfBounds(rows);
        return "# Out of bounds values : " + bad + (bad == 0 ? " OK" : " FAILED") + System.lineSeparator()
                + "# Avg bus bandwidth    : " + formatG(averageBusBw(rows)) + " " + System.lineSeparator()
                + "#" + System.lineSeparator();
    }

    /** C's {@code %g}: 6 significant digits, trailing zeros removed, exponent form below 1e-4 or from 1e6. */
    public static String formatG(double v) {
        if (v == 0) {
            return "0";
        }
        if (Double.isNaN(v)) {
            return "nan";
        }
        if (Double.isInfinite(v)) {
            return v > 0 ? "inf" : "-inf";
        }
        BigDecimal d = new BigDecimal(v).round(new MathContext(6));
        int exp = d.precision() - d.scale() - 1;
        if (exp < -4 || exp >= 6) {
            BigDecimal mant = d.movePointLeft(exp).stripTrailingZeros();
            String m = mant.scale() <= 0 ? mant.toBigInteger().toString() : mant.toPlainString();
            return m + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
        }
        BigDecimal s = d.stripTrailingZeros();
        return s.scale() <= 0 ? s.toBigInteger().toString() : s.toPlainString();
    }
}
