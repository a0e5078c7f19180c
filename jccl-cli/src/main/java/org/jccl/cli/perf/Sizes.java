package org.jccl.cli.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Byte sizes as nccl-tests reads and sweeps them. */
public final class Sizes {
    /** The most sizes one sweep may have (a typo such as -i 1 with -e 1G would never end). */
    public static final int MAX_STEPS = 100_000;

    private Sizes() {
    }

    /**
     * Parses a size: a number with an optional K, M or G suffix (powers of 1024, any case), as
     * nccl-tests' {@code -b}/{@code -e}: {@code 8}, {@code 64K}, {@code 32M}, {@code 1G}, {@code 0.5M}.
     *
     * @throws IllegalArgumentException saying what a size looks like
     */
    public static long parse(String text) {
        String t = text.trim();
        long unit = 1;
        if (!t.isEmpty()) {
            char last = Character.toUpperCase(t.charAt(t.length() - 1));
            unit = switch (last) {
                case 'K' -> 1L << 10;
                case 'M' -> 1L << 20;
                case 'G' -> 1L << 30;
                default -> 1;
            };
            if (unit != 1) {
                t = t.substring(0, t.length() - 1).trim();
            }
        }
        double v;
        try {
            v = Double.parseDouble(t);
        } catch (NumberFormatException e) {
            v = Double.NaN;
        }
        if (!(v >= 0) || Double.isInfinite(v) || t.endsWith("d") || t.endsWith("f")
                || t.toLowerCase(Locale.ROOT).contains("x") || v * unit >= 0x1p62) {
            throw new IllegalArgumentException("'" + text + "' is not a size: give bytes as a number with an optional "
                    + "K, M or G suffix, e.g. 8, 64K, 32M, 1G");
        }
        return (long) (v * unit);
    }

    /**
     * The sizes of a sweep from {@code min} to {@code max}: multiplied by {@code factor} when it
     * is above 1, else increased by {@code step} (nccl-tests' loop).
     */
    public static List<Long> sweep(long min, long max, long step, long factor) {
        if (min < 0 || max < min) {
            throw new IllegalArgumentException("sizes " + min + ".." + max + ": need 0 <= min <= max");
        }
        if (factor > 1 && min == 0) {
            throw new IllegalArgumentException("a factor sweep from 0 bytes never grows: give -b >= 1 with -f");
        }
        if (factor <= 1 && step < 1) {
            throw new IllegalArgumentException("step is " + step + ": an increment sweep needs -i >= 1");
        }
        List<Long> out = new ArrayList<>();
        for (long s = min; s <= max; s = factor > 1 ? s * factor : s + step) {
            if (out.size() == MAX_STEPS) {
                throw new IllegalArgumentException("the sweep " + min + ".." + max + " by "
                        + (factor > 1 ? "factor " + factor : "step " + step) + " has more than " + MAX_STEPS
                        + " sizes: use a larger -i or a factor (-f 2)");
            }
            out.add(s);
            if (factor > 1 ? s > Long.MAX_VALUE / factor : s > Long.MAX_VALUE - step) {
                break;
            }
        }
        return out;
    }

    /** A size for people: 8, 1K, 32M, 1.5G (powers of 1024). */
    public static String human(long bytes) {
        String[] units = {"", "K", "M", "G", "T"};
        int u = 0;
        while (u < units.length - 1 && bytes >= (1L << (10 * (u + 1)))) {
            u++;
        }
        long unit = 1L << (10 * u);
        if (bytes % unit == 0) {
            return (bytes / unit) + units[u];
        }
        return String.format(Locale.ROOT, "%.1f%s", (double) bytes / unit, units[u]);
    }
}
