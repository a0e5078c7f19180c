package org.jccl.host.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link VectorKernels} is the committed output of {@code jccl-core/src/gen/vector_kernels.py}: this
 * test runs the generator into a temporary file and requires the committed file to be byte for byte
 * that output, so that neither a hand edit of the Java nor a generator change without regenerating
 * goes unnoticed. It never skips: without python3 it fails.
 */
class GeneratedKernelsTest {
    private static final String GENERATOR = "src/gen/vector_kernels.py";
    private static final String GENERATED = "src/main/java/org/jccl/host/kernel/VectorKernels.java";
    private static final String REGENERATE = "regenerate it with `python3 jccl-core/src/gen/vector_kernels.py`"
            + " (from anywhere; it rewrites jccl-core/" + GENERATED + ") and commit both files";

    @Test
    void committedVectorKernelsIsTheGeneratorOutput(@TempDir Path tmp) throws Exception {
        Path module = moduleDir();
        Path committed = module.resolve(GENERATED);
        Path out = tmp.resolve("VectorKernels.java");
        Path log = tmp.resolve("generator.log");
        List<String> cmd = List.of(python3(), module.resolve(GENERATOR).toString(), out.toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("the generator did not finish within 120 s: " + String.join(" ", cmd));
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), () -> "the generator failed: " + String.join(" ", cmd) + "\n" + output);

        byte[] want = Files.readAllBytes(out);
        byte[] have = Files.readAllBytes(committed);
        if (!Arrays.equals(want, have)) {
            fail("jccl-core/" + GENERATED + " is not what jccl-core/" + GENERATOR + " generates ("
                    + firstDifference(want, have) + "). It is generated code: do not edit it by hand; change the"
                    + " generator's templates instead, then " + REGENERATE + ".");
        }
    }

    /** jccl-core/: surefire runs in the module directory; from the repository root, its jccl-core/. */
    private static Path moduleDir() {
        Path cwd = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        for (Path dir : List.of(cwd, cwd.resolve("jccl-core"))) {
            if (Files.isRegularFile(dir.resolve(GENERATOR)) && Files.isRegularFile(dir.resolve(GENERATED))) {
                return dir;
            }
        }
        return fail("cannot find " + GENERATOR + " and " + GENERATED + " under " + cwd + " or its jccl-core/");
    }

    /** /usr/bin/python3, else python3 on the PATH; fails (never skips) when there is none. */
    private static String python3() {
        Path usr = Path.of("/usr/bin/python3");
        if (Files.isExecutable(usr)) {
            return usr.toString();
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "python3"))) {
                    return Path.of(dir, "python3").toString();
                }
            }
        }
        return fail("python3 is needed to check that VectorKernels.java is the output of jccl-core/" + GENERATOR
                + ", and there is none (/usr/bin/python3 or on the PATH): install python3"
                + " (Debian/Ubuntu: apt-get install python3; .ci/run installs it in CI)");
    }

    /** The first line that differs, 1-based, with both versions of it. */
    private static String firstDifference(byte[] want, byte[] have) {
        String[] w = new String(want, StandardCharsets.UTF_8).split("\n", -1);
        String[] h = new String(have, StandardCharsets.UTF_8).split("\n", -1);
        for (int i = 0; i < Math.min(w.length, h.length); i++) {
            if (!w[i].equals(h[i])) {
                return "first difference at line " + (i + 1) + ": generated \"" + w[i] + "\", committed \"" + h[i]
                        + "\"";
            }
        }
        return "generated " + w.length + " lines, committed " + h.length + " lines"
                + (w.length == h.length ? " (the bytes differ, e.g. line endings or encoding)" : "");
    }
}
