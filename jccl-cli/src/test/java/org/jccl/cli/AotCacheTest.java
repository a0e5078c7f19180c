package org.jccl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * JCCL_AOT=on with real rank processes: the first {@code jccl perf --ranks 2} trains and leaves one
 * cache file, the second starts its ranks from it, both with every result right and nothing of the
 * JDK's AOT messages in their output; the setting's bad values fail before any rank starts.
 */
@Timeout(180)
class AotCacheTest {

    private record Out(int code, String out, String err) {
    }

    /** The test class path with every directory (a module's classes, under Maven's test phase) made a jar. */
    private static String jarredClassPath(Path dir) throws Exception {
        List<String> out = new ArrayList<>();
        int i = 0;
        for (String e : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path p = Path.of(e);
            if (!Files.isDirectory(p)) {
                out.add(e);
                continue;
            }
            Path jar = dir.resolve("cp-" + (i++) + ".jar");
            try (var z = new java.util.jar.JarOutputStream(Files.newOutputStream(jar)); var walk = Files.walk(p)) {
                for (Path f : walk.filter(Files::isRegularFile).toList()) {
                    z.putNextEntry(new java.util.jar.JarEntry(p.relativize(f).toString().replace('\\', '/')));
                    Files.copy(f, z);
                    z.closeEntry();
                }
            }
            out.add(jar.toString());
        }
        return String.join(java.io.File.pathSeparator, out);
    }

    private static String classPath;

    private static synchronized String classPath() throws Exception {
        if (classPath == null) {
            Path d = Files.createTempDirectory("jccl-aot-cp");
            d.toFile().deleteOnExit();
            classPath = jarredClassPath(d);
        }
        return classPath;
    }

    private static Out perf(Path cacheHome, String aot) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(JavaCommand.currentJava(), "--enable-native-access=ALL-UNNAMED",
                "--add-modules", "jdk.incubator.vector", "-cp", classPath(), Main.class.getName(),
                "perf", "allreduce", "--ranks", "2", "-b", "8", "-e", "4K", "-f", "8", "-n", "5", "-w", "2"));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("XDG_CACHE_HOME", cacheHome.toString());
        pb.environment().put("JCCL_AOT", aot);
        pb.environment().put("JCCL_WARMUP", "0");
        Path out = Files.createTempFile(cacheHome, "out", ".txt");
        Path err = Files.createTempFile(cacheHome, "err", ".txt");
        Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue(p.waitFor(150, TimeUnit.SECONDS), "jccl perf did not end within 150 s");
        return new Out(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    private static List<Path> caches(Path cacheHome) throws Exception {
        Path dir = cacheHome.resolve("jccl").resolve("aot");
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (var s = Files.list(dir)) {
            return s.sorted().toList();
        }
    }

    @Test
    void theFirstRunTrainsACacheAndTheSecondStartsFromIt(@TempDir Path home) throws Exception {
        Out first = perf(home, "on");
        assertEquals(0, first.code(), first.err());
        assertTrue(first.out().contains("# Out of bounds values : 0 OK"), first.out());
        List<Path> made = caches(home);
        assertEquals(1, made.size(), "one cache file and nothing else left behind: " + made);
        assertTrue(made.getFirst().getFileName().toString().matches("perf-[0-9a-f]{16}\\.aot"), made.toString());
        assertTrue(Files.size(made.getFirst()) > 1_000_000, "a cache of classes and profiles: " + Files.size(made.getFirst()));
        long time = Files.getLastModifiedTime(made.getFirst()).toMillis();

        Out second = perf(home, "on");
        assertEquals(0, second.code(), second.err());
        assertTrue(second.out().contains("# Out of bounds values : 0 OK"), second.out());
        assertEquals(made, caches(home), "the second run used the cache and made no other");
        assertEquals(time, Files.getLastModifiedTime(made.getFirst()).toMillis(), "the cache was not rewritten");
        for (Out o : List.of(first, second)) {
            assertFalse((o.out() + o.err()).contains("AOT"), "the JDK's AOT messages stay out of the output:\n" + o.out() + o.err());
        }
    }

    @Test
    void offMakesNoCacheAndBadValuesFailBeforeAnyRankStarts(@TempDir Path home) throws Exception {
        Out off = perf(home, "off");
        assertEquals(0, off.code(), off.err());
        assertEquals(List.of(), caches(home).stream().filter(p -> p.toString().endsWith(".aot")).toList());
        Out bad = perf(home, "maybe");
        assertNotEquals(0, bad.code());
        assertTrue(bad.err().contains("JCCL_AOT=maybe is not a choice: use on"), bad.err());
        assertFalse(bad.out().contains("Out of bounds"), "no rank ran: " + bad.out());
        assertThrows(IllegalArgumentException.class, () -> AotCache.enabled("1"));
        assertTrue(AotCache.enabled(" ON "));
        assertFalse(AotCache.enabled(null));
    }

    @Test
    void aClassPathWithADirectoryIsRefusedWithTheReason(@TempDir Path dir) {
        java.io.IOException e = assertThrows(java.io.IOException.class,
                () -> AotCache.plan(dir.resolve("aot"), List.of(), dir.toString()));
        assertTrue(e.getMessage().contains(dir + ", not a jar"), e.getMessage());
    }

    @Test
    void theKeyChangesWithTheClassPathAndItsJars(@TempDir Path dir) throws Exception {
        Path jar = Files.writeString(dir.resolve("a.jar"), "one");
        String k1 = AotCache.key(List.of("-Xmx1g"), jar.toString());
        assertEquals(k1, AotCache.key(List.of("-Xmx1g"), jar.toString()));
        assertNotEquals(k1, AotCache.key(List.of("-Xmx2g"), jar.toString()), "JVM options are part of the key");
        Files.writeString(jar, "a rebuilt jar");
        assertNotEquals(k1, AotCache.key(List.of("-Xmx1g"), jar.toString()), "a rebuilt jar trains a new cache");
        assertEquals(Path.of("/x/jccl/aot"), AotCache.dir("/x", "/home/u"));
        assertEquals(Path.of("/home/u/.cache/jccl/aot"), AotCache.dir(null, "/home/u"));
    }
}
