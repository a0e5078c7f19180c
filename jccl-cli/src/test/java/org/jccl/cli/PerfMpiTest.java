package org.jccl.cli;

import org.jccl.internal.Json;
import org.jccl.testing.Require;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jccl.Jccl;
import org.jccl.cli.perf.PerfJson;
import org.jccl.cli.perf.Row;
import org.jccl.spi.Backend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** jccl perf --backend mpi under a real mpirun: every collective x type x operator with 0 wrong. */
@Timeout(180)
class PerfMpiTest {

    static Path mpirun() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "mpirun");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    @Test
    void everyCollectiveIsCorrectUnderMpirun(@TempDir Path dir) throws Exception {
        Backend mpi = Jccl.backends().stream().filter(b -> b.name().equals("mpi")).findFirst().orElseThrow();
        Require.require("mpi", !mpi.isAvailable() ? "no usable Open MPI: " + mpi.unavailabilityCause()
                : mpirun() == null ? "mpirun is not on the PATH (apt-get install openmpi-bin)" : null);
        int n = 3;
        Path json = dir.resolve("mpi.json");
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(mpirun().toString(), "--allow-run-as-root", "--oversubscribe",
                "--bind-to", "none", "-np", Integer.toString(n), java, "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "perf", "all", "--backend", "mpi", "-b", "48", "-e", "3K", "-f", "64", "-n", "1", "-w", "1", "-d", "all",
                "-o", "all", "-r", "all", "--json", json.toString()));
        // The job's output goes to a file, not a pipe: nothing here can block on a hung job past the deadline.
        Path log = dir.resolve("perf.log");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("JCCL_") || k.startsWith("OMPI_") || k.startsWith("PMIX_")
                || k.startsWith("SLURM_") || k.equals("RANK") || k.equals("WORLD_SIZE"));
        Process p = pb.start();
        boolean finished = false;
        try {
            finished = p.waitFor(150, TimeUnit.SECONDS);
        } finally {
            if (!finished) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
        String out = new String(Files.readAllBytes(log), StandardCharsets.UTF_8);
        if (!finished) {
            fail("mpirun did not finish within 150 s (killed); its output:\n" + out);
        }
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("| backend mpi | 3 ranks |"), out);
        assertTrue(out.contains("# Out of bounds values : 0 OK"), out);
        List<Row> rows = PerfJson.read(json).getFirst().rows();
        assertEquals(PerfEndToEndTest.expectedRows(n, 2, true), rows.size());
        PerfEndToEndTest.assertAllCorrect(rows);
    }

    @Test
    void outsideAJobMpiAsksForMpirun() throws IOException {
        MainTest.Result r = MainTest.main("perf", "allreduce", "--backend", "mpi", "--ranks", "2");
        assertEquals(2, r.code(), r.err());
        assertTrue(r.err().contains("mpirun -np 2 ./jccl perf ... --backend mpi"), r.err());
    }
}
