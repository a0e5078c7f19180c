package org.jccl.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/ENVIRONMENT.md against {@link Settings}: every variable the library's sources name is in
 * the one list, every one of the list has a row in the doc's table, and every row of the doc
 * names a variable something in the repository reads. Also that a system property wins over the
 * environment.
 */
class SettingsDocTest {
    private static final Pattern VAR = Pattern.compile("\"(JCCL_[A-Z0-9_]+)\"");
    private static final Pattern ROW = Pattern.compile("^\\| `(JCCL_[A-Z0-9_]+)` \\|", Pattern.MULTILINE);

    private static Path repo() {
        Path cwd = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        for (Path dir : List.of(cwd, cwd.getParent())) {
            if (dir != null && Files.isRegularFile(dir.resolve("docs/ENVIRONMENT.md"))) {
                return dir;
            }
        }
        return fail("cannot find docs/ENVIRONMENT.md in " + cwd + " or its parent");
    }

    /** The JCCL_* names in quotes in the Java files under {@code jccl-*}/src/{@code kind}. */
    private static Set<String> namedInSources(Path repo, String kind) throws IOException {
        Set<String> out = new TreeSet<>();
        try (Stream<Path> modules = Files.list(repo)) {
            for (Path m : modules.filter(p -> p.getFileName().toString().startsWith("jccl-")).toList()) {
                Path src = m.resolve("src").resolve(kind);
                if (!Files.isDirectory(src)) {
                    continue;
                }
                try (Stream<Path> files = Files.walk(src)) {
                    for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                        Matcher x = VAR.matcher(Files.readString(f));
                        while (x.find()) {
                            out.add(x.group(1));
                        }
                    }
                }
            }
        }
        return out;
    }

    private static Set<String> documented(Path repo) throws IOException {
        Set<String> out = new TreeSet<>();
        Matcher x = ROW.matcher(Files.readString(repo.resolve("docs/ENVIRONMENT.md")));
        while (x.find()) {
            out.add(x.group(1));
        }
        return out;
    }

    @Test
    void everyVariableTheLibraryNamesIsInTheOneList() throws IOException {
        Set<String> named = namedInSources(repo(), "main");
        named.removeAll(Settings.ALL);
        assertTrue(named.isEmpty(), "the library names " + named + " but org.jccl.internal.Settings.ALL does not list "
                + "them: add them there (and a row in docs/ENVIRONMENT.md), and read them with Settings.get");
    }

    @Test
    void everySettingHasARowInTheDoc() throws IOException {
        Set<String> missing = new TreeSet<>(Settings.ALL);
        missing.removeAll(documented(repo()));
        assertTrue(missing.isEmpty(), "docs/ENVIRONMENT.md has no row for " + missing + ": add one (meaning, default)");
    }

    /**
     * The doc's last column says how code sets each setting, as Settings classifies it: the Options
     * method of a job variable, withSetting for a communicator setting, the environment or the
     * system property for a per-process one.
     */
    @Test
    void theDocSaysHowCodeSetsEachSettingAsSettingsClassifiesIt() throws IOException {
        Pattern row = Pattern.compile("^\\| `(JCCL_[A-Z0-9_]+)` \\|.*\\| ([^|]+) \\|$", Pattern.MULTILINE);
        Matcher x = row.matcher(Files.readString(repo().resolve("docs/ENVIRONMENT.md")));
        Set<String> wrong = new TreeSet<>();
        int rows = 0;
        while (x.find()) {
            String v = x.group(1);
            String how = x.group(2);
            Settings.Scope s = Settings.scope(v);
            rows++;
            boolean ok = s == null ? how.equals("scripts only")
                    : switch (s) {
                        case JOB -> how.equals("`Options." + Settings.JOB_METHODS.get(v) + "`");
                        case COMMUNICATOR -> how.equals("`Options.withSetting`");
                        case PROCESS -> how.equals("per process: environment or `-D" + Settings.property(v) + "`");
                    };
            if (!ok) {
                wrong.add(v + " (" + s + "): '" + how + "'");
            }
        }
        assertTrue(rows >= Settings.ALL.size(), "found " + rows + " rows with a last column");
        assertTrue(wrong.isEmpty(), "docs/ENVIRONMENT.md's last column disagrees with Settings: " + wrong);
        for (String v : Settings.ALL) {
            if (Settings.scope(v) == Settings.Scope.COMMUNICATOR) {
                Settings.checkCommunicatorSetting(v); // withSetting takes it
            }
        }
    }

    @Test
    void everyRowOfTheDocIsReadSomewhere() throws IOException {
        Path repo = repo();
        StringBuilder code = new StringBuilder();
        for (String script : List.of("jccl", "run-tests", ".ci/run", "bench/gpu/run-gpu.sh", "bench/fault-load.sh")) {
            Path p = repo.resolve(script);
            if (Files.isRegularFile(p)) {
                code.append(Files.readString(p));
            }
        }
        Set<String> read = new TreeSet<>(Settings.ALL);
        read.addAll(namedInSources(repo, "test"));
        read.addAll(namedInSources(repo, "main"));
        Set<String> stale = new TreeSet<>();
        for (String v : documented(repo)) {
            if (!read.contains(v) && !code.toString().contains(v)) {
                stale.add(v);
            }
        }
        assertTrue(stale.isEmpty(), "docs/ENVIRONMENT.md documents " + stale + " but nothing reads them: remove the rows");
    }

    @Test
    void aSystemPropertyWinsOverTheEnvironment() {
        String prop = Settings.property("JCCL_TRACE_BUFFER");
        assertEquals("jccl.trace.buffer", prop);
        String before = System.getProperty(prop);
        try {
            System.setProperty(prop, "123");
            assertEquals("123", Settings.get("JCCL_TRACE_BUFFER"));
            assertEquals("123", Settings.environment().get("JCCL_TRACE_BUFFER"));
            System.clearProperty(prop);
            assertEquals(System.getenv("JCCL_TRACE_BUFFER"), Settings.get("JCCL_TRACE_BUFFER"));
            if (System.getenv("JCCL_TRACE_BUFFER") == null) {
                assertNull(Settings.environment().get("JCCL_TRACE_BUFFER"));
            }
        } finally {
            if (before != null) {
                System.setProperty(prop, before);
            } else {
                System.clearProperty(prop);
            }
        }
    }
}
