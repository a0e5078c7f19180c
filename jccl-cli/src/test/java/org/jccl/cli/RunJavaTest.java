package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * jccl run with a java command: the ranks get the launcher's JDK (not PATH's java) and jccl's JVM
 * flags once; the --cp short form. Real processes, with a PATH whose java fails.
 */
@Timeout(120)
class RunJavaTest {
    private static final String CP = System.getProperty("java.class.path");
    private static final String JAVA = JavaCommand.currentJava();
    private static final String MAIN = AllReduceRankMain.class.getName();
    private static final int FEATURE = Runtime.version().feature();

    record Result(int code, String out, String err) {
    }

    /** jccl (this JDK) with PATH starting at a folder whose java prints "fake java from PATH" and exits 1. */
    static Result jccl(Path dir, String... args) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path fake = bin.resolve("java");
        Files.writeString(fake, "#!/bin/sh\necho 'fake java from PATH' >&2\nexit 1\n");
        Files.setPosixFilePermissions(fake, PosixFilePermissions.fromString("rwxr-xr-x"));
        List<String> cmd = new ArrayList<>(List.of(JAVA, "-cp", CP, Main.class.getName()));
        cmd.addAll(List.of(args));
        Path out = dir.resolve("out.txt");
        Path err = dir.resolve("err.txt");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("JCCL_") || k.equals("JDK_JAVA_OPTIONS"));
        env.put("PATH", bin + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
        env.put("JCCL_DEBUG", "INFO");
        // as the suite runs (pom.xml): no JIT warm-up at creation, no pinning (these tests are about neither)
        env.put("JCCL_WARMUP", "0");
        env.put("JCCL_AFFINITY", "off");
        Process p = pb.start();
        if (!p.waitFor(100, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            throw new AssertionError("jccl " + String.join(" ", args) + " did not end");
        }
        return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    static void assertRanksOk(Result r, String args) {
        assertEquals(0, r.code(), r.out() + r.err());
        for (int rank = 0; rank < 2; rank++) {
            String line = "[" + rank + "] rank " + rank + " ok sum=3.0 java=" + FEATURE
                    + " nativeAccess=1 vector=1 vectorModule=true args=" + args + "\n";
            assertTrue(r.out().contains(line), "missing '" + line + "' in:\n" + r.out() + r.err());
        }
        assertFalse(r.err().contains("fake java"), r.err());
        assertFalse(r.err().contains("WARNING: Using incubator modules"), "the forwarder drops the incubator notice: " + r.err());
    }

    @Test
    void aBareJavaRunsOnTheLaunchersJdkWithJcclsFlags(@TempDir Path dir) throws Exception {
        Result r = jccl(dir, "run", "-n", "2", "--", "java", "-cp", CP, MAIN);
        assertRanksOk(r, "");
        assertTrue(r.err().contains("jccl run: INFO: ranks run " + JAVA + " (the JDK jccl runs on): " + JAVA + " "
                + JavaCommand.NATIVE_ACCESS + " --add-modules jdk.incubator.vector -cp "), r.err());
    }

    @Test
    void flagsTheUserGaveAreNotAddedAgain(@TempDir Path dir) throws Exception {
        Result r = jccl(dir, "run", "-n", "2", "--", "java", "--add-modules=jdk.incubator.vector",
                "--enable-native-access", "ALL-UNNAMED", "-cp", CP, MAIN, "x");
        assertRanksOk(r, "x");
    }

    @Test
    void theShortFormRunsAnAllReduce(@TempDir Path dir) throws Exception {
        Result r = jccl(dir, "run", "-n", "2", "--cp", CP, MAIN, "a", "--b");
        assertRanksOk(r, "a,--b");
        assertTrue(r.err().contains("jccl run: INFO: ranks run " + JAVA + " (the JDK jccl runs on)"), r.err());
    }

    @Test
    void javaFromPathKeepsPathsJava(@TempDir Path dir) throws Exception {
        Result r = jccl(dir, "run", "-n", "2", "--java-from-path", "--", "java", "-version");
        assertEquals(1, r.code(), r.out() + r.err());
        assertTrue(r.err().contains("[0] fake java from PATH") && r.err().contains("[1] fake java from PATH"), r.err());
        assertTrue(r.err().contains("jccl run: INFO: ranks run java (from PATH (--java-from-path)): java "
                + JavaCommand.NATIVE_ACCESS + " --add-modules jdk.incubator.vector -version"), r.err());
    }

    static List<String> resolve(boolean fromPath, boolean flags, String jcclJava, String jdkOpts, String... cmd) {
        return JavaCommand.resolve(List.of(cmd), fromPath, flags, jcclJava, jdkOpts).command();
    }

    @Test
    void whichJavaAndWhichFlags() {
        String na = JavaCommand.NATIVE_ACCESS;
        String am = "--add-modules";
        String vm = JavaCommand.VECTOR_MODULE;
        assertEquals(List.of(JAVA, na, am, vm, "-cp", "a.jar", "Main", "--add-modules", "x"),
                resolve(false, true, null, null, "java", "-cp", "a.jar", "Main", "--add-modules", "x"),
                "the program's own arguments are not JVM options");
        assertEquals(List.of("java", na, am, vm, "Main"), resolve(true, true, "/opt/j/bin/java", null, "java", "Main"));
        assertEquals(List.of("/opt/j/bin/java", "Main"), resolve(false, false, "/opt/j/bin/java", null, "java", "Main"));
        assertEquals(List.of("/usr/bin/java", na, am, vm, "-jar", "app.jar"),
                resolve(false, true, "/opt/j/bin/java", null, "/usr/bin/java", "-jar", "app.jar"), "a path is kept");
        assertEquals(List.of(JAVA, am, vm, "-p", "mods", "-m", "app/app.Main"),
                resolve(false, true, null, null, "java", "-p", "mods", "-m", "app/app.Main"), "no ALL-UNNAMED for -m");
        assertEquals(List.of(JAVA, "--enable-native-access=org.jccl.cuda", "--add-modules", "java.sql,jdk.incubator.vector",
                "Main"), resolve(false, true, null, null, "java", "--enable-native-access=org.jccl.cuda", "--add-modules",
                "java.sql,jdk.incubator.vector", "Main"));
        assertEquals(List.of(JAVA, am, vm, "Main"), resolve(false, true, null, " --enable-native-access=ALL-UNNAMED ",
                "java", "Main"), "JDK_JAVA_OPTIONS counts");
        assertEquals(List.of(JAVA, na, am, vm, "--add-modules", "java.sql", "Main"),
                resolve(false, true, null, null, "java", "--add-modules", "java.sql", "Main"));
        assertEquals(List.of("sh", "-c", "java x"), resolve(false, true, null, null, "sh", "-c", "java x"));
        assertNull(JavaCommand.resolve(List.of("javac", "X.java"), false, true, null, null).java());
    }

    @Test
    void theShortFormTakesAMainClassNotFlags() {
        MainTest.Result r = MainTest.main("run", "-n", "2", "--cp", "a.jar", "--", "-Xmx1g", "Main");
        assertEquals(2, r.code(), r.err());
        MainTest.assertOneLine(r.err(), "--cp takes the main class");
    }
}
