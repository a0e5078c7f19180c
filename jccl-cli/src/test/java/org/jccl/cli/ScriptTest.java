package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** ./jccl: syntax, and how it finds a JDK (fake JDKs in a folder; nothing is built or started). */
class ScriptTest {
    static final Path SCRIPT = Path.of(System.getProperty("user.dir")).getParent().resolve("jccl");

    record Result(int code, String out, String err) {
    }

    static Result bash(Map<String, String> env, String... args) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(args);
        pb.environment().remove("JAVA_HOME");
        pb.environment().putAll(env);
        Path out = Files.createTempFile("script", ".out");
        Path err = Files.createTempFile("script", ".err");
        try {
            Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    static Path fakeJdk(Path dir, String name, String version) throws IOException {
        Path home = dir.resolve(name);
        Files.createDirectories(home.resolve("bin"));
        Path java = home.resolve("bin/java");
        Files.writeString(java, "#!/bin/sh\necho 'openjdk version \"" + version + "\"' >&2\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.writeString(home.resolve("release"), "IMPLEMENTOR=\"test\"\nJAVA_VERSION=\"" + version + "\"\n",
                StandardCharsets.UTF_8);
        return home;
    }

    @Test
    void isValidBash() throws Exception {
        assertTrue(Files.isExecutable(SCRIPT), SCRIPT + " must be executable");
        assertEquals(0, bash(Map.of(), "bash", "-n", SCRIPT.toString()).code());
    }

    @Test
    void picksJavaHomeWhenRecentEnoughElseTheNewestJdkOf25OrLater(@TempDir Path dir) throws Exception {
        Path jvms = Files.createDirectories(dir.resolve("jvm"));
        Path old = fakeJdk(jvms, "java-17", "17.0.9");
        fakeJdk(jvms, "java-8", "1.8.0_392");
        Path j25 = fakeJdk(jvms, "jdk-25", "25.0.1");
        Path j26 = fakeJdk(jvms, "jdk-26", "26");
        Path elsewhere = fakeJdk(dir, "custom-25", "25");
        Map<String, String> base = Map.of("JCCL_JVM_DIR", jvms.toString(), "JCCL_PRINT_JAVA", "1");

        Result r = bash(Map.of("JCCL_JVM_DIR", jvms.toString(), "JCCL_PRINT_JAVA", "1", "JAVA_HOME", elsewhere.toString()),
                SCRIPT.toString());
        assertEquals(0, r.code(), r.err());
        assertEquals(elsewhere + "\n", r.out());

        r = bash(Map.of("JCCL_JVM_DIR", jvms.toString(), "JCCL_PRINT_JAVA", "1", "JAVA_HOME", old.toString()), SCRIPT.toString());
        assertEquals(j26 + "\n", r.out());
        r = bash(base, SCRIPT.toString());
        assertEquals(j26 + "\n", r.out());

        Files.delete(j26.resolve("release"));
        Files.delete(j26.resolve("bin/java"));
        r = bash(base, SCRIPT.toString());
        assertEquals(j25 + "\n", r.out(), "a folder without java is skipped");
    }

    @Test
    void saysWhatToInstallWithoutAJdk25(@TempDir Path dir) throws Exception {
        Path jvms = Files.createDirectories(dir.resolve("jvm"));
        Path old = fakeJdk(jvms, "java-17", "17.0.9");
        Result r = bash(Map.of("JCCL_JVM_DIR", jvms.toString(), "JCCL_PRINT_JAVA", "1", "JAVA_HOME", old.toString()),
                SCRIPT.toString(), "perf", "allreduce");
        assertEquals(1, r.code());
        assertEquals("", r.out());
        assertTrue(r.err().contains("needs a JDK 25 or newer") && r.err().contains("java-17 (17)")
                && r.err().contains("JAVA_HOME"), r.err());
    }
}
