package org.jccl.mpi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jccl.Jccl;
import org.jccl.Options;
import org.jccl.spi.Backend;
import org.junit.jupiter.api.Test;

/** Finding, checking and refusing libmpi, without starting MPI in the test JVM. */
class MpiAvailabilityTest {

    @Test
    void theBackendIsFoundByServiceLoaderAndIsNeverTheAutomaticChoice() {
        Backend mpi = Jccl.backends().stream().filter(b -> b.name().equals("mpi")).findFirst().orElseThrow();
        assertTrue(mpi instanceof MpiBackend);
        assertFalse(mpi.prefers(Options.of(0, 1)));
        assertFalse(mpi.needsStore());
        assertEquals(mpi.isAvailable(), mpi.unavailabilityCause() == null);
    }

    @Test
    void theInstalledOpenMpiIsRecognised() {
        MpiJob.requireMpi();
        String v = Mpi.libraryVersion();
        assertNotNull(v);
        assertTrue(v.startsWith("Open MPI v"), v);
        int major = MpiLibrary.majorVersion(v);
        assertTrue(major == 4 || major == 5, v);
    }

    @Test
    void versionParsing() {
        assertEquals(4, MpiLibrary.majorVersion("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4"));
        assertEquals(5, MpiLibrary.majorVersion("Open MPI v5.0.3, package: Open MPI"));
        assertEquals(-1, MpiLibrary.majorVersion("MPICH Version:      4.0.2"));
    }

    @Test
    void blockingModeParsing() {
        assertFalse(MpiRuntime.parseBlocking(null));
        assertFalse(MpiRuntime.parseBlocking(" "));
        assertFalse(MpiRuntime.parseBlocking("Poll"));
        assertTrue(MpiRuntime.parseBlocking("native"));
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> MpiRuntime.parseBlocking("fast"));
        assertTrue(e.getMessage().contains("JCCL_MPI_BLOCKING=fast is not valid: use poll"), e.getMessage());
    }

    /** Runs {@link MpiProbeMain} in a fresh JVM with JCCL_MPI_LIBRARY set to {@code lib}. */
    static String probe(String lib) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        ProcessBuilder pb = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), MpiProbeMain.class.getName()));
        pb.environment().keySet().removeIf(k -> k.startsWith("JCCL_") || k.startsWith("OMPI_"));
        pb.environment().put("JCCL_MPI_LIBRARY", lib);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return new String(out, StandardCharsets.UTF_8);
    }

    /** Asserts that the probe with {@code JCCL_MPI_LIBRARY=lib} printed every one of {@code parts}. */
    static void assertProbeSays(String lib, String... parts) throws Exception {
        String out = probe(lib);
        for (String part : parts) {
            assertTrue(out.contains(part), out);
        }
    }

    @Test
    void aMissingLibraryIsReportedWithTheVariableThatNamedIt() throws Exception {
        assertProbeSays("/nonexistent/libmpi.so.40", "available=false",
                "cause=JCCL_MPI_LIBRARY=/nonexistent/libmpi.so.40 cannot be loaded",
                "init=backend 'mpi' is not available here: JCCL_MPI_LIBRARY=");
    }

    @Test
    void aLibraryThatIsNotOpenMpiIsRefused() throws Exception {
        // libc loads fine but has no MPI at all: the same path that refuses MPICH's libmpi.so.12.
        assertProbeSays("libc.so.6", "available=false", "libc.so.6 is not Open MPI", "JCCL_MPI_LIBRARY");
    }
}
