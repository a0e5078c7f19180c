package org.jccl.cli;

import org.jccl.internal.Json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.jccl.Buffer;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.Options;
import org.jccl.ReduceOp;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.cli.perf.Collective;
import org.jccl.cli.perf.HostMemory;
import org.jccl.cli.perf.PerfConfig;
import org.jccl.cli.perf.PerfJson;
import org.jccl.cli.perf.PerfRunner;
import org.jccl.cli.perf.Progress;
import org.jccl.cli.perf.Row;
import org.jccl.cli.perf.Run;
import org.jccl.cli.perf.Table;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;

/**
 * jccl perf on the host engine with real rank processes: every collective x type x operator
 * checked with 0 wrong for 2, 3 and 4 ranks, the files it writes, and a corrupted result caught.
 */
@Timeout(120)
class PerfEndToEndTest {

    /** Rows of one sweep: collectives x types x ops x roots x sizes. */
    static int expectedRows(int ranks, int sizes, boolean allRoots) {
        int rows = 0;
        for (Collective c : Collective.values()) {
            rows += DataType.values().length * (c.reduces() ? 6 : 1) * (c.hasRoot() && allRoots ? ranks : 1) * sizes;
        }
        return rows;
    }

    static void assertAllCorrect(List<Row> rows) {
        for (Row r : rows) {
            assertEquals(0, r.oop().wrong(), r.toString());
            if (r.collective().equals("sendrecv")) {
                assertFalse(r.ip().checked(), "in-place send/recv is not checked, as in nccl-tests");
            } else {
                assertEquals(0, r.ip().wrong(), r.toString());
            }
            assertTrue(r.oop().timeUs() > 0 && r.ip().timeUs() > 0, r.toString());
        }
    }

    @Test
    void everyCollectiveTypeAndOpIsCorrectOn2And3Ranks(@TempDir Path dir) throws Exception {
        // 2 ranks and 3 (uneven chunks, every root, more ranks than CI's 2 CPUs); the library's
        // collectives at 4 ranks and more run in the conformance kit
        for (int n : new int[] {2, 3}) {
            Path json = dir.resolve("all-" + n + ".json");
            // Sizes 48 and 3072 bytes: every type has elements on every rank, and counts that do
            // not divide evenly into chunks.
            MainTest.Result r = MainTest.main("perf", "all", "--ranks", Integer.toString(n), "-b", "48", "-e", "3K",
                    "-f", "64", "-n", "1", "-w", "1", "-d", "all", "-o", "all", "-r", n == 3 ? "all" : "1",
                    "--json", json.toString());
            assertEquals(0, r.code(), r.err());
            assertTrue(r.out().contains("# Out of bounds values : 0 OK"), r.out());
            assertFalse(r.err().contains("\r"), "no progress line when stderr is not a terminal");
            assertEquals(n > org.jccl.internal.Affinity.cpus(), r.out().contains("# note: " + n + " local ranks on "
                    + org.jccl.internal.Affinity.cpus() + " CPUs take turns"), "the header says when ranks outnumber CPUs:\n" + r.out());
            List<Row> rows = PerfJson.read(json).getFirst().rows();
            assertEquals(expectedRows(n, 2, n == 3), rows.size());
            assertAllCorrect(rows);
            assertEquals(n, PerfJson.read(json).getFirst().info().ranks());
        }
    }

    @Test
    void blockingCallsRunEveryCollectiveInBothPlacements(@TempDir Path dir) throws Exception {
        // -z 1: each call completes before the next; in-place send/recv included (sendRecv itself
        // refuses overlapping buffers: the tool issues the async pair, as in its default mode)
        Path json = dir.resolve("blocking.json");
        MainTest.Result r = MainTest.main("perf", "all", "--ranks", "2", "-b", "48", "-e", "3K", "-f", "64", "-n", "3",
                "-w", "1", "-z", "1", "--json", json.toString());
        assertEquals(0, r.code(), r.err());
        List<Row> rows = PerfJson.read(json).getFirst().rows();
        assertEquals(Collective.values().length * 2, rows.size());
        assertAllCorrect(rows);
    }

    @Test
    void tableJsonCsvAndSvgOfOneRun(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("r.json");
        Path csv = dir.resolve("r.csv");
        Path svg = dir.resolve("r.svg");
        Path mpi = dir.resolve("mpi.json");
        Files.writeString(mpi, "{\"runs\":[{\"label\":\"Open MPI\",\"backend\":\"mpi\",\"ranks\":2,\"rows\":["
                + "{\"collective\":\"allreduce\",\"dtype\":\"float\",\"op\":\"sum\",\"root\":-1,\"bytes\":1024,\"count\":256,"
                + "\"oop\":{\"time_us\":5,\"algbw\":0.2,\"busbw\":0.2,\"wrong\":0},\"ip\":null},"
                + "{\"collective\":\"allreduce\",\"dtype\":\"float\",\"op\":\"sum\",\"root\":-1,\"bytes\":65536,\"count\":16384,"
                + "\"oop\":{\"time_us\":50,\"algbw\":1.3,\"busbw\":1.3,\"wrong\":0},\"ip\":null}]}]}");
        MainTest.Result r = MainTest.main("perf", "allreduce", "--ranks", "2", "-b", "1K", "-e", "64K", "-f", "4",
                "-n", "5", "-w", "2", "-z", "1", "--settle", "0.3", "--json", json.toString(), "--csv", csv.toString(),
                "--svg", svg.toString(), "--compare", mpi.toString(), "--label", "jccl test");
        assertEquals(0, r.code(), r.err());
        String[] lines = r.out().split("\n");
        assertTrue(lines[0].startsWith("# jccl perf " + Jccl.VERSION + ": allreduce | backend host | 2 ranks | JDK "), lines[0]);
        assertTrue(r.out().contains("#  Rank  0 Group  0 Pid") && r.out().contains("#  Rank  1 Group  0 Pid"), r.out());
        assertTrue(r.out().contains(Table.columns()), r.out());
        List<String> table = java.util.Arrays.stream(lines).filter(l -> !l.startsWith("#")).toList();
        assertEquals(4, table.size(), r.out());
        assertTrue(table.getFirst().matches(" +1024 +256 +float +sum +-1 .* 0 .* 0( +[0-9.]+){2}"), table.getFirst());
        assertTrue(r.out().contains("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : "), r.out());

        Run run = PerfJson.read(json).getFirst();
        assertEquals("jccl test", run.info().label());
        assertEquals(List.of(1024L, 4096L, 16384L, 65536L), run.rows().stream().map(Row::bytes).toList());
        assertTrue(run.rows().stream().allMatch(w -> w.oop().firstUs() > 0 && w.ip().firstUs() > 0), "no first-call times");
        for (Row row : run.rows()) {
            // busbw = algbw x 2(n-1)/n = algbw for 2 ranks; algbw = bytes / time.
            assertEquals(row.oop().algBw(), row.oop().busBw(), 1e-12);
            assertEquals(row.bytes() / 1e9 / (row.oop().timeUs() * 1e-6), row.oop().algBw(), 1e-9 * row.oop().algBw());
        }
        assertEquals(5, Files.readAllLines(csv).size());
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        Document doc = f.newDocumentBuilder().parse(new ByteArrayInputStream(Files.readAllBytes(svg)));
        String text = doc.getDocumentElement().getTextContent();
        assertTrue(text.contains("jccl test: allreduce float sum") && text.contains("Open MPI: allreduce float sum"), text);
        // 2 panels x (jccl out-of-place + in-place + Open MPI out-of-place).
        assertEquals(6, doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "polyline").getLength());
    }

    @Test
    void toSteadyReportsEachSizesTimeToSteadyStateAndNeedsBlockingCalls(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("s.json");
        MainTest.Result r = MainTest.main("perf", "allreduce", "--ranks", "2", "-b", "64", "-e", "4K", "-f", "64",
                "-n", "200", "-w", "5", "-z", "1", "--to-steady", "--json", json.toString());
        assertEquals(0, r.code(), r.err());
        Run run = PerfJson.read(json).getFirst();
        assertEquals(List.of(64L, 4096L), run.rows().stream().map(Row::bytes).toList());
        for (Row row : run.rows()) {
            for (var m : List.of(row.oop(), row.ip())) {
                // reached: at least the first call's own time; or -1 (the run ended first)
                assertTrue(m.toSteadyUs() == -1 || m.toSteadyUs() >= m.firstUs() * 0.999, row.toString());
            }
        }
        MainTest.Result async = MainTest.main("perf", "allreduce", "--ranks", "2", "--to-steady");
        assertEquals(2, async.code());
        MainTest.assertOneLine(async.err(), "--to-steady", "-z 1");
        assertEquals("", async.out());
    }

    @Test
    void ranksMustMatchTheJobInsideAJob() {
        String java = ProcessHandle.current().info().command().orElseThrow();
        MainTest.Result r = MainTest.main("run", "-n", "2", "--", java, "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "perf", "allreduce", "--ranks", "3", "-b", "8", "-e", "8");
        assertEquals(2, r.code(), r.err());
        assertTrue(r.err().contains("--ranks 3 does not match this job, which has 2 ranks"), r.err());
    }

    @Test
    void ncclBackendRunsOrSaysWhyNot() {
        MainTest.Result r = MainTest.main("perf", "allreduce", "--backend", "nccl", "-b", "1K", "-e", "4K", "-n", "2");
        if (org.jccl.cuda.Nccl.isAvailable()) {
            assertEquals(0, r.code(), r.err());
            assertTrue(r.out().contains("backend nccl") && r.out().contains("# Out of bounds values : 0 OK"), r.out());
        } else {
            assertEquals(1, r.code());
            MainTest.assertOneLine(r.err(), "jccl perf: error: --backend nccl cannot run here: ", "CUDA");
        }
    }

    /**
     * A communicator whose all-reduce results get one element wrong (a real 1-rank host
     * communicator underneath): the check must count exactly that element and the footer fail.
     */
    @Test
    void aWrongElementIsCountedAndFailsTheRun() throws Exception {
        String token = Launcher.newToken();
        try (TcpStoreServer store = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), token);
             Communicator real = Jccl.init(Options.of(0, 1).withStore("127.0.0.1", store.port()).withToken(token)
                     .withJobId("perf-wrong-" + ProcessHandle.current().pid()).withBackend("host"));
             HostMemory mem = new HostMemory()) {
            Communicator corrupting = (Communicator) Proxy.newProxyInstance(Communicator.class.getClassLoader(),
                    new Class<?>[] {Communicator.class}, (proxy, m, args) -> {
                        Object result;
                        try {
                            result = m.invoke(real, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                        if (m.getName().equals("allReduce") && args.length == 3 && args[1] instanceof HostBuffer h
                                && h.type() == DataType.FLOAT32 && h.count() > 0) {
                            float v = h.segment().get(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0);
                            h.segment().set(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0, v + 1);
                        }
                        return result;
                    });
            PerfConfig cfg = new PerfConfig(List.of(Collective.ALLREDUCE), 8, 64, 1, 2, 2, 1, true,
                    List.of(ReduceOp.SUM), List.of(DataType.FLOAT32), 0, true, 1);
            List<Row> rows = new PerfRunner(corrupting, mem, cfg, null, Progress.off()).run();
            assertEquals(4, rows.size());
            for (Row r : rows) {
                assertEquals(1, r.oop().wrong(), r.toString());
                assertEquals(1, r.ip().wrong(), r.toString());
            }
            assertEquals(8, Table.outOfBounds(rows));
            assertTrue(Table.footer(rows).startsWith("# Out of bounds values : 8 FAILED"));
            // The same run on the communicator itself is clean.
            List<Row> clean = new PerfRunner(real, mem, cfg, null, Progress.off()).run();
            assertEquals(0, Table.outOfBounds(clean));
        }
    }
}
