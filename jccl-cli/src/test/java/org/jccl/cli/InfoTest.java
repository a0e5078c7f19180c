package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.jccl.bootstrap.TcpStoreServer;
import org.jccl.internal.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InfoTest {
    static InfoItem item(List<InfoItem> items, String name) {
        return items.stream().filter(i -> i.name().equals(name)).findFirst().orElseThrow(() -> new AssertionError(name + " missing"));
    }

    @Test
    void jdkSectionSeesTheVectorApiAndNativeAccessOfThisJvm() {
        List<InfoItem> jdk = Probes.jdk();
        InfoItem version = item(jdk, "version");
        assertTrue(version.found() && version.detail().startsWith(Runtime.version().toString()), version.toString());
        // The tests run with --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED.
        InfoItem vector = item(jdk, "vector API");
        assertTrue(vector.found() && vector.detail().matches(".*preferred species \\d+ bits.*"), vector.toString());
        assertTrue(item(jdk, "native access").found());
    }

    @Test
    void osSectionMeasuresShmOrSaysWhyNot(@TempDir Path dir) {
        List<InfoItem> os = Probes.os(Path.of("/dev/shm"));
        InfoItem sys = item(os, "system");
        assertTrue(sys.found() && sys.detail().contains(Runtime.getRuntime().availableProcessors() + " cores"));
        InfoItem shm = item(os, "/dev/shm");
        assertTrue(shm.found() && shm.detail().contains("total") && shm.detail().contains("free"), shm.toString());
        InfoItem none = item(Probes.os(dir.resolve("nope")), dir.resolve("nope").toString());
        assertFalse(none.found());
        assertTrue(none.detail().contains("no such directory"));
    }

    @Test
    void singleCopyFollowsProcessVmReadvAndYama(@TempDir Path dir) throws Exception {
        boolean works = org.jccl.internal.CrossMemory.selfCheck() == null;
        InfoItem noYama = Probes.singleCopy(dir.resolve("absent"));
        assertEquals(works, noYama.found(), noYama.toString());
        if (!works) {
            assertTrue(noYama.detail().contains("copy twice"), noYama.toString());
            return;
        }
        assertTrue(noYama.detail().contains("no Yama") && noYama.detail().contains("one copy"), noYama.toString());
        Path scope = dir.resolve("ptrace_scope");
        Files.writeString(scope, "1\n");
        assertTrue(Probes.singleCopy(scope).found() && Probes.singleCopy(scope).detail().contains("ptrace_scope 1"));
        Files.writeString(scope, "2\n");
        InfoItem restricted = Probes.singleCopy(scope);
        assertFalse(restricted.found());
        assertTrue(restricted.detail().contains("ptrace_scope is 2") && restricted.detail().contains("copy twice"),
                restricted.toString());
    }

    @Test
    void jobSectionChecksTheStoreAndItsToken() throws Exception {
        InfoItem none = item(Probes.job(Map.of()), "store");
        assertFalse(none.found());
        assertTrue(none.detail().contains("JCCL_STORE is not set"));

        String token = Launcher.newToken();
        try (TcpStoreServer server = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), token)) {
            String addr = "127.0.0.1:" + server.port();
            List<InfoItem> ok = Probes.job(Map.of("JCCL_STORE", addr, "JCCL_TOKEN", token, "JCCL_RANK", "1",
                    "JCCL_WORLD_SIZE", "2", "JCCL_LOCAL_RANK", "1", "JCCL_LOCAL_WORLD_SIZE", "2", "JCCL_JOB_ID", "j1"));
            assertTrue(item(ok, "store").found(), item(ok, "store").toString());
            assertTrue(item(ok, "store").detail().contains("token accepted"));
            assertEquals("rank 1 of 2, local rank 1 of 2, job id j1", item(ok, "rank").detail());
            InfoItem wrong = item(Probes.job(Map.of("JCCL_STORE", addr, "JCCL_TOKEN", Launcher.newToken())), "store");
            assertFalse(wrong.found(), wrong.toString());
            assertTrue(wrong.detail().contains("handshake failed"), wrong.toString());
        }
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        InfoItem refused = item(Probes.job(Map.of("JCCL_STORE", "127.0.0.1:" + closed)), "store");
        assertFalse(refused.found());
        assertTrue(refused.detail().contains("cannot connect to 127.0.0.1:" + closed), refused.toString());
        InfoItem bad = item(Probes.job(Map.of("JCCL_STORE", "nohost")), "store");
        assertTrue(!bad.found() && bad.detail().contains("not host:port"));
    }

    @Test
    void gpuSectionsSayFoundOrWhyNot() {
        List<InfoItem> cuda = GpuProbes.cuda();
        List<InfoItem> nccl = GpuProbes.nccl();
        InfoItem driver = item(cuda, "driver");
        assertFalse(driver.detail().isBlank());
        if (!driver.found()) {
            assertFalse(item(cuda, "GPUs").found());
            assertFalse(item(nccl, "library").found());
            assertTrue(item(nccl, "library").detail().contains("CUDA"), item(nccl, "library").toString());
        } else {
            assertTrue(driver.detail().startsWith("CUDA "));
        }
    }

    @Test
    void mpiSectionAgreesWithThePath() {
        boolean onPath = false;
        for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            onPath |= !d.isEmpty() && Files.isExecutable(Path.of(d, "ompi_info"));
        }
        InfoItem tool = Probes.mpi().get(1);
        assertEquals(onPath, tool.found() && tool.name().equals("ompi_info"), tool.toString());
        if (onPath) {
            assertTrue(tool.detail().contains("Open MPI"), tool.toString());
        }
    }

    @Test
    void toolsHaveADeadline() {
        assertNull(Probes.run(List.of("/nonexistent/tool")));
        assertEquals("!sh printed nothing", Probes.firstLine("sh", "-c", "true"));
        assertEquals("hello", Probes.firstLine("sh", "-c", "echo; echo hello; echo world"));
        assertNull(Probes.run(List.of("sh", "-c", "exit 3")));
        long t0 = System.nanoTime();
        assertNull(Probes.run(List.of("sh", "-c", "sleep 60")));
        assertTrue(System.nanoTime() - t0 < 15_000_000_000L);
    }

    @Test
    void textAndJsonForms() {
        List<InfoItem> items = List.of(InfoItem.found("JDK", "version", "25 \"x\""), InfoItem.missing("CUDA", "driver", "no libcuda.so.1"));
        String text = InfoCommand.toText(items);
        assertTrue(text.contains("JDK\n  version  found      25 \"x\"\n"), text);
        assertTrue(text.contains("CUDA\n  driver   not found  no libcuda.so.1\n"), text);
        Map<?, ?> doc = (Map<?, ?>) Json.parse(InfoCommand.toJson(items));
        assertEquals(org.jccl.Jccl.VERSION, doc.get("jccl"));
        List<?> list = (List<?>) doc.get("items");
        assertEquals(Map.of("section", "JDK", "name", "version", "found", true, "detail", "25 \"x\""), list.get(0));
        assertEquals(false, ((Map<?, ?>) list.get(1)).get("found"));
    }

    @Test
    void infoCommandPrintsEverySection() {
        MainTest.Result r = MainTest.main("info", "--json");
        assertEquals(0, r.code(), r.err());
        Map<?, ?> doc = (Map<?, ?>) Json.parse(r.out());
        List<?> items = (List<?>) doc.get("items");
        java.util.Set<Object> sections = new java.util.HashSet<>();
        for (Object o : items) {
            Map<?, ?> m = (Map<?, ?>) o;
            sections.add(m.get("section"));
            assertNotNull(m.get("detail"));
            assertTrue(m.get("found") instanceof Boolean);
        }
        assertEquals(java.util.Set.of("JDK", "OS", "Job", "CUDA", "NCCL", "Open MPI"), sections);
        MainTest.Result t = MainTest.main("info");
        assertEquals(0, t.code());
        assertTrue(t.out().startsWith("jccl " + org.jccl.Jccl.VERSION + "\nJDK\n"), t.out());
    }
}
