package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jccl.DataType;
import org.jccl.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A process that drives every GPU closes its communicators and exits at once: the exit must wait
 * for NCCL's teardown, which runs on threads of its own (it crashed the JVM in ncclCommDestroy
 * when CUDA's exit handlers ran under it), whichever stream the last call used, even one the
 * caller destroyed before closing. Real child JVMs, each ending right after close().
 */
class NcclStreamLifetimeTest {
    /** A child: all-reduces on every GPU, on a caller stream it then destroys (arg "user") or on the communicator's own, closes, exits. */
    public static void main(String[] args) throws Exception {
        boolean userStreamLast = args[0].equals("user");
        List<CudaDevice> devs = Gpu.openAll();
        List<NcclCommunicator> comms = NcclCommunicator.initAll(devs, Duration.ofSeconds(60));
        Gpu.assertEachOk(comms, Duration.ofSeconds(60), c -> {
            CudaDevice d = c.device();
            d.makeCurrent();
            try (DeviceBuffer x = d.allocate(DataType.FLOAT32, 1024)) {
                try (CudaStream user = d.createStream()) {
                    c.allReduce(x, ReduceOp.SUM, user);
                }
                if (!userStreamLast) {
                    c.allReduce(x, ReduceOp.SUM);
                }
            }
            return "ok";
        });
        Gpu.closeAll(comms, devs);
        System.out.println("closed");
        System.exit(0);
    }

    private static void exitsCleanly(String last, Path dir) throws Exception {
        Gpu.assume(2);
        for (int i = 0; i < 3; i++) {
            List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                    "--enable-native-access=ALL-UNNAMED", "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"), "-cp",
                    System.getProperty("java.class.path"), NcclStreamLifetimeTest.class.getName(), last));
            Path out = dir.resolve("child-" + last + "-" + i + ".txt");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child did not end");
            String text = Files.readString(out);
            assertFalse(text.contains("SIGSEGV"), "run " + i + " crashed:\n" + text);
            assertEquals(0, p.exitValue(), "run " + i + ":\n" + text);
            assertTrue(text.contains("closed"), text);
        }
    }

    @Test
    void exitRightAfterCloseWhenTheLastCallsStreamWasDestroyed(@TempDir Path dir) throws Exception {
        exitsCleanly("user", dir);
    }

    @Test
    void exitRightAfterCloseWhenTheLastCallRanOnTheCommunicatorsStream(@TempDir Path dir) throws Exception {
        exitsCleanly("own", dir);
    }
}
