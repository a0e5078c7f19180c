package org.jccl.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * How {@code jccl run} starts a rank command whose program is {@code java}: with the JDK the
 * launcher runs on, and with the JVM flags jccl uses when the command lacks them.
 *
 * <ul>
 *   <li>Which java: a bare {@code java} becomes {@code $JCCL_JAVA} when set, else this JVM's
 *       {@code java.home/bin/java} (the JDK 25 that {@code ./jccl} found), unless the user asks for
 *       the {@code java} of {@code PATH} ({@code --java-from-path}). A path ({@code /usr/bin/java})
 *       is kept as given.</li>
 *   <li>Flags, inserted right after the program when absent from its JVM options (and from
 *       {@code JDK_JAVA_OPTIONS}): {@code --enable-native-access=ALL-UNNAMED} (jccl-cuda and
 *       jccl-mpi bind their native libraries through FFM: without it JDK 25 warns at the first
 *       call, and later JDKs refuse) for a class-path launch, not for {@code -m}/{@code --module}
 *       (there the user names the modules); {@code --add-modules jdk.incubator.vector} (the vector
 *       reduction kernels of the host engine; without it the scalar kernels run). The host engine
 *       itself needs neither.</li>
 * </ul>
 */
final class JavaCommand {
    /** The flag for FFM's restricted methods (jccl-cuda, jccl-mpi) on the class path. */
    static final String NATIVE_ACCESS = "--enable-native-access=ALL-UNNAMED";
    /** The incubator module of the vector kernels. */
    static final String VECTOR_MODULE = "jdk.incubator.vector";

    /** JVM options that take the next word as their value. */
    private static final Set<String> WITH_VALUE = Set.of("-cp", "-classpath", "--class-path", "-p", "--module-path",
            "--upgrade-module-path", "--add-modules", "--limit-modules", "--add-reads", "--add-exports", "--add-opens",
            "--patch-module", "--enable-native-access", "--source");

    private JavaCommand() {
    }

    /**
     * A command ready to start, and the java it starts ({@code null} when the program is not java).
     */
    record Resolved(List<String> command, String java, String source) {
    }

    /** This JVM's java launcher: {@code java.home/bin/java}. */
    static String currentJava() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Whether the program is a java launcher: {@code java} or a path whose file name is {@code java}. */
    static boolean isJava(String program) {
        return program.equals("java") || program.endsWith("/java");
    }

    /**
     * The command to start for {@code command}.
     *
     * @param javaFromPath keep a bare {@code java} (the one on PATH)
     * @param addFlags add the JVM flags jccl uses when absent
     * @param jcclJava the value of {@code JCCL_JAVA} (a java to use for a bare {@code java}), or null
     * @param jdkJavaOptions the value of {@code JDK_JAVA_OPTIONS} (flags the java launcher reads too), or null
     */
    static Resolved resolve(List<String> command, boolean javaFromPath, boolean addFlags, String jcclJava,
            String jdkJavaOptions) {
        String program = command.getFirst();
        if (!isJava(program)) {
            return new Resolved(List.copyOf(command), null, null);
        }
        String java = program;
        String source = "as given";
        if (program.equals("java")) {
            if (javaFromPath) {
                source = "from PATH (--java-from-path)";
            } else if (jcclJava != null && !jcclJava.isBlank()) {
                java = jcclJava.strip();
                source = "JCCL_JAVA";
            } else {
                java = currentJava();
                source = "the JDK jccl runs on";
            }
        }
        List<String> out = new ArrayList<>();
        out.add(java);
        if (addFlags) {
            List<String> options = new ArrayList<>(jvmOptions(command.subList(1, command.size())));
            boolean moduleLaunch = options.contains("-m") || options.contains("--module")
                    || options.stream().anyMatch(o -> o.startsWith("--module="));
            if (jdkJavaOptions != null && !jdkJavaOptions.isBlank()) {
                options.addAll(Arrays.asList(jdkJavaOptions.strip().split("\\s+")));
            }
            if (!moduleLaunch && !hasNativeAccess(options)) {
                out.add(NATIVE_ACCESS);
            }
            if (!addsModule(options, VECTOR_MODULE)) {
                out.add("--add-modules");
                out.add(VECTOR_MODULE);
            }
        }
        out.addAll(command.subList(1, command.size()));
        return new Resolved(List.copyOf(out), java, source);
    }

    /**
     * The JVM's options among java's arguments: the words before the main class, up to and with
     * {@code -jar}, {@code -m} or {@code --module} (what follows them is the program's).
     */
    static List<String> jvmOptions(List<String> args) {
        List<String> options = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (!a.startsWith("-") && !a.startsWith("@")) {
                break; // the main class (or a source file): the program's arguments follow
            }
            options.add(a);
            if (a.equals("-jar") || a.equals("-m") || a.equals("--module") || a.startsWith("--module=")) {
                break;
            }
            if (WITH_VALUE.contains(a) && i + 1 < args.size()) {
                options.add(args.get(++i));
            }
        }
        return options;
    }

    private static boolean hasNativeAccess(List<String> options) {
        return options.stream().anyMatch(o -> o.equals("--enable-native-access") || o.startsWith("--enable-native-access="));
    }

    private static boolean addsModule(List<String> options, String module) {
        for (int i = 0; i < options.size(); i++) {
            String o = options.get(i);
            String value = null;
            if (o.equals("--add-modules") && i + 1 < options.size()) {
                value = options.get(i + 1);
            } else if (o.startsWith("--add-modules=")) {
                value = o.substring("--add-modules=".length());
            }
            if (value != null && Arrays.asList(value.split(",")).contains(module)) {
                return true;
            }
        }
        return false;
    }
}
