package org.jccl.cli.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class SvgChartTest {
    static Run run(String label, String coll, double scale) {
        List<Row> rows = new ArrayList<>();
        for (long b = 8; b <= (1 << 20); b *= 4) {
            double us = 2 + b / 1000.0 * scale;
            double bw = b / 1e9 / (us * 1e-6);
            rows.add(new Row(coll, "float", "sum", -1, b, b / 4, new Measurement(us, bw, bw, 0),
                    new Measurement(us * 1.1, bw / 1.1, bw / 1.1, 0)));
        }
        rows.add(new Row(coll, "float", "sum", -1, 0, 0, new Measurement(1, 0, 0, 0), null));
        return new Run(new RunInfo("h", 2, "host", 2, "0.1.0", "25", label), rows);
    }

    static Document parse(String svg) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        return f.newDocumentBuilder().parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void isValidSvgWithAPanelPerMetricAndALinePerSeriesAndPlacement() throws Exception {
        String svg = SvgChart.render(List.of(run("jccl host 2 ranks", "allreduce", 1)), "jccl perf allreduce");
        Document doc = parse(svg);
        Element root = doc.getDocumentElement();
        assertEquals("svg", root.getLocalName());
        assertEquals("http://www.w3.org/2000/svg", root.getNamespaceURI());
        NodeList lines = doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "polyline");
        // 2 panels x (out-of-place + in-place) of one series.
        assertEquals(4, lines.getLength());
        for (int i = 0; i < lines.getLength(); i++) {
            Element l = (Element) lines.item(i);
            String[] pts = l.getAttribute("points").split(" ");
            // 8 B .. 1 MiB by 4: 9 sizes; the 0-byte row has no place on a log axis.
            assertEquals(9, pts.length);
            double lastX = -1;
            for (String p : pts) {
                double x = Double.parseDouble(p.split(",")[0]);
                double y = Double.parseDouble(p.split(",")[1]);
                assertTrue(x > lastX, "x grows with size");
                assertTrue(y >= 60 && y <= 360, "inside the panel: " + y);
                lastX = x;
            }
        }
        String text = root.getTextContent();
        assertTrue(text.contains("Bus bandwidth (GB/s)") && text.contains("Time (us)") && text.contains("Size (bytes)"));
        assertTrue(text.contains("jccl host 2 ranks: allreduce float sum"));
        Set<String> labels = new HashSet<>();
        NodeList texts = doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "text");
        for (int i = 0; i < texts.getLength(); i++) {
            labels.add(texts.item(i).getTextContent());
        }
        // 8 B .. 1 MiB: ticks at every other power of two, ends included.
        assertTrue(labels.containsAll(Set.of("4", "16", "1K", "1M")), labels.toString());
    }

    @Test
    void timeGrowsUpwardAndBandwidthWithSize() throws Exception {
        Document doc = parse(SvgChart.render(List.of(run("a", "allreduce", 1)), "t"));
        NodeList groups = doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "g");
        for (int g = 0; g < groups.getLength(); g++) {
            Element group = (Element) groups.item(g);
            Element first = (Element) group.getElementsByTagNameNS("http://www.w3.org/2000/svg", "polyline").item(0);
            String[] pts = first.getAttribute("points").split(" ");
            double y0 = Double.parseDouble(pts[0].split(",")[1]);
            double yN = Double.parseDouble(pts[pts.length - 1].split(",")[1]);
            // SVG y grows downwards: larger values are higher up (smaller y) for both metrics here.
            assertTrue(yN < y0, group.getAttribute("id"));
        }
    }

    @Test
    void compareOverlaysMoreSeriesWithTheirOwnColours() throws Exception {
        String svg = SvgChart.render(List.of(run("jccl", "allreduce", 1), run("Open MPI <4.1> & co", "allreduce", 3)), "x");
        Document doc = parse(svg);
        NodeList lines = doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "polyline");
        assertEquals(8, lines.getLength());
        Set<String> colours = new HashSet<>();
        for (int i = 0; i < lines.getLength(); i++) {
            colours.add(((Element) lines.item(i)).getAttribute("stroke"));
        }
        assertEquals(2, colours.size());
        assertTrue(doc.getDocumentElement().getTextContent().contains("Open MPI <4.1> & co: allreduce float sum"));
    }

    @Test
    void emptyRunsStillGiveAValidChart() throws Exception {
        Document doc = parse(SvgChart.render(List.of(new Run(new RunInfo("h", 1, "host", 1, "", "", "e"), List.of())), "e"));
        assertEquals(0, doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "polyline").getLength());
    }
}
