package org.jccl.cli.perf;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The chart of {@code --svg}: bus bandwidth and time against size, both axes logarithmic, one
 * line per series (a run's collective, type, operator and root), out-of-place solid and in-place
 * dashed, and a legend. Plain SVG 1.1 written by hand; a run given with {@code --compare} is
 * simply more series.
 */
public final class SvgChart {
    private static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
        "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    private static final int PANEL_W = 460;
    private static final int PANEL_H = 300;
    private static final int LEFT = 80;
    private static final int GAP = 100;
    private static final int TOP = 60;
    private static final int LEGEND_LINE = 18;

    private SvgChart() {
    }

    /** One line of the chart. */
    record Series(String name, List<Row> rows) {
    }

    /** The series of some runs: one per run x collective x type x operator x root. */
    static List<Series> series(List<Run> runs) {
        List<Series> out = new ArrayList<>();
        for (Run run : runs) {
            Map<String, List<Row>> groups = new LinkedHashMap<>();
            for (Row r : run.rows()) {
                String key = r.collective() + " " + r.dtype() + (r.op().equals("none") ? "" : " " + r.op())
                        + (r.root() >= 0 ? " root " + r.root() : "");
                groups.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
            }
            for (Map.Entry<String, List<Row>> g : groups.entrySet()) {
                out.add(new Series(run.info().label() + ": " + g.getKey(), g.getValue()));
            }
        }
        return out;
    }

    /** The SVG document. */
    public static String render(List<Run> runs, String title) {
        List<Series> series = series(runs);
        int width = LEFT + PANEL_W + GAP + PANEL_W + 40;
        int legendTop = TOP + PANEL_H + 70;
        int height = legendTop + LEGEND_LINE * (series.size() + 1) + 20;
        StringBuilder sb = new StringBuilder();
        sb.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                + "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", width, height, width, height));
        sb.append(String.format(Locale.ROOT, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>%n", width, height));
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"24\" font-size=\"16\" font-weight=\"bold\">%s</text>%n",
                LEFT, esc(title)));

        double[] xr = xRange(series);
        panel(sb, series, LEFT, "Bus bandwidth (GB/s)", "busbw", xr, m -> m.busBw());
        panel(sb, series, LEFT + PANEL_W + GAP, "Time (us)", "time", xr, m -> m.timeUs());

        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"#444\">solid: out-of-place, dashed: in-place</text>%n",
                LEFT, legendTop));
        for (int i = 0; i < series.size(); i++) {
            int y = legendTop + LEGEND_LINE * (i + 1);
            String c = COLORS[i % COLORS.length];
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2.5\"/>%n",
                    LEFT, y - 4, LEFT + 30, y - 4, c));
            sb.append(String.format(Locale.ROOT, "<text class=\"legend\" x=\"%d\" y=\"%d\">%s</text>%n", LEFT + 38, y,
                    esc(series.get(i).name())));
        }
        sb.append("</svg>\n");
        return sb.toString();
    }

    private static void panel(StringBuilder sb, List<Series> series, int x0, String yLabel, String id, double[] xr,
                              ToDoubleFunction<Measurement> metric) {
        double[] yr = yRange(series, metric);
        int y0 = TOP;
        sb.append(String.format(Locale.ROOT, "<g id=\"%s\">%n", id));
        sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#000\"/>%n",
                x0, y0, PANEL_W, PANEL_H));
        // x ticks: every k-th power of two (xRange aligned the ends to them), at most 13 labels.
        int every = (int) xr[2];
        for (int e = (int) xr[0]; e <= (int) xr[1]; e += every) {
            double px = x0 + (e - xr[0]) / (xr[1] - xr[0]) * PANEL_W;
            sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>%n",
                    px, y0, px, y0 + PANEL_H));
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                    px, y0 + PANEL_H + 16, Sizes.human(1L << e)));
        }
        for (int e = (int) yr[0]; e <= (int) yr[1]; e++) {
            double py = y0 + PANEL_H - (e - yr[0]) / (yr[1] - yr[0]) * PANEL_H;
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                    x0, py, x0 + PANEL_W, py));
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                    x0 - 6, py + 4, decade(e)));
        }
        sb.append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">Size (bytes)</text>%n",
                x0 + PANEL_W / 2, y0 + PANEL_H + 40));
        sb.append(String.format(Locale.ROOT, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                + "transform=\"rotate(-90 %d %d)\">%s</text>%n", x0 - 55, y0 + PANEL_H / 2, x0 - 55, y0 + PANEL_H / 2, esc(yLabel)));
        for (int i = 0; i < series.size(); i++) {
            String c = COLORS[i % COLORS.length];
            for (int placement = 0; placement < 2; placement++) {
                StringBuilder pts = new StringBuilder();
                for (Row r : series.get(i).rows()) {
                    Measurement m = placement == 0 ? r.oop() : r.ip();
                    if (m == null || r.bytes() <= 0) {
                        continue;
                    }
                    double v = metric.applyAsDouble(m);
                    if (!(v > 0) || Double.isInfinite(v)) {
                        continue;
                    }
                    double px = x0 + (log2(r.bytes()) - xr[0]) / (xr[1] - xr[0]) * PANEL_W;
                    double py = y0 + PANEL_H - (Math.log10(v) - yr[0]) / (yr[1] - yr[0]) * PANEL_H;
                    pts.append(String.format(Locale.ROOT, "%s%.1f,%.1f", pts.length() == 0 ? "" : " ", px, py));
                }
                if (pts.length() > 0) {
                    sb.append(String.format(Locale.ROOT, "<polyline class=\"series\" data-series=\"%d\" fill=\"none\" "
                            + "stroke=\"%s\" stroke-width=\"%s\"%s points=\"%s\"/>%n", i, c, placement == 0 ? "2" : "1.5",
                            placement == 0 ? "" : " stroke-dasharray=\"6,4\"", pts));
                }
            }
        }
        sb.append("</g>\n");
    }

    /**
     * The log2 range of the sizes and the tick spacing: {lo, hi, every}, the ends multiples of
     * {@code every}, which keeps the labels at 13 or fewer.
     */
    private static double[] xRange(List<Series> series) {
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (Series s : series) {
            for (Row r : s.rows()) {
                if (r.bytes() > 0) {
                    lo = Math.min(lo, log2(r.bytes()));
                    hi = Math.max(hi, log2(r.bytes()));
                }
            }
        }
        if (lo > hi) {
            return new double[] {0, 1, 1};
        }
        lo = Math.floor(lo);
        hi = Math.max(Math.ceil(hi), lo + 1);
        double every = Math.max(1, Math.ceil((hi - lo) / 12));
        return new double[] {Math.floor(lo / every) * every, Math.ceil(hi / every) * every, every};
    }

    /** Whole decades around the positive values of the metric. */
    private static double[] yRange(List<Series> series, ToDoubleFunction<Measurement> metric) {
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (Series s : series) {
            for (Row r : s.rows()) {
                for (Measurement m : new Measurement[] {r.oop(), r.ip()}) {
                    if (m != null && r.bytes() > 0) {
                        double v = metric.applyAsDouble(m);
                        if (v > 0 && !Double.isInfinite(v)) {
                            lo = Math.min(lo, Math.log10(v));
                            hi = Math.max(hi, Math.log10(v));
                        }
                    }
                }
            }
        }
        if (lo > hi) {
            return new double[] {0, 1};
        }
        lo = Math.floor(lo);
        hi = Math.ceil(hi);
        return hi > lo ? new double[] {lo, hi} : new double[] {lo, lo + 1};
    }

    private static String decade(int e) {
        if (e >= 0 && e <= 6) {
            return Long.toString((long) Math.pow(10, e));
        }
        if (e < 0 && e >= -4) {
            return java.math.BigDecimal.ONE.movePointLeft(-e).toPlainString();
        }
        return "1e" + e;
    }

    private static double log2(double v) {
        return Math.log(v) / Math.log(2);
    }

    /** Escapes text for XML content and attributes. */
    static String esc(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        s.chars()
                // XML 1.0 forbids most control characters even as references: drop them.
                .filter(c -> c >= 0x20 || c == '\t' || c == '\n' || c == '\r')
                .forEach(c -> sb.append(switch (c) {
                    case '&' -> "&amp;";
                    case '<' -> "&lt;";
                    case '>' -> "&gt;";
                    case '"' -> "&quot;";
                    case '\'' -> "&apos;";
                    default -> String.valueOf((char) c);
                }));
        return sb.toString();
    }
}
