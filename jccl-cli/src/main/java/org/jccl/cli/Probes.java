package org.jccl.cli;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jccl.bootstrap.Store;
import org.jccl.bootstrap.TcpStore;
import org.jccl.cli.perf.Sizes;

/**
 * The checks of {@code jccl info}, one method per section. Each returns items that say found or
 * not found, and why; none throws, and none takes longer than a few seconds (every external tool
 * and connection has a deadline).
 */
final class Probes {
    /** Deadline of a store connection and of an external tool. */
    static final Duration DEADLINE = Duration.ofSeconds(5);

    private Probes() {
    }

    /** JDK: version, the Vector API, native access (FFM). */
    static List<InfoItem> jdk() {
        List<InfoItem> out = new ArrayList<>();
        out.add(InfoItem.found("JDK", "version", Runtime.version() + " (" + System.getProperty("java.vendor") + "), "
                + System.getProperty("java.home")));
        Optional<Module> vector = ModuleLayer.boot().findModule("jdk.incubator.vector");
        if (vector.isEmpty()) {
            out.add(InfoItem.missing("JDK", "vector API", "jdk.incubator.vector is not resolved: start java with "
                    + "--add-modules jdk.incubator.vector (./jccl does); reductions use scalar code"));
        } else {
            try {
                Object species = Class.forName("jdk.incubator.vector.FloatVector").getField("SPECIES_PREFERRED").get(null);
                int bits = (int) Class.forName("jdk.incubator.vector.VectorSpecies").getMethod("vectorBitSize").invoke(species);
                out.add(InfoItem.found("JDK", "vector API", "jdk.incubator.vector, preferred species " + bits + " bits ("
                        + bits / 32 + " floats)"));
            } catch (ReflectiveOperationException | LinkageError e) {
                out.add(InfoItem.missing("JDK", "vector API", "jdk.incubator.vector is resolved but unusable: " + e));
            }
        }
        if (Probes.class.getModule().isNativeAccessEnabled()) {
            out.add(InfoItem.found("JDK", "native access", "enabled (FFM downcalls to libcuda, libnccl)"));
        } else {
            out.add(InfoItem.missing("JDK", "native access", "not enabled for jccl: start java with "
                    + "--enable-native-access=ALL-UNNAMED (or =org.jccl.cuda on the module path); ./jccl does"));
        }
        return out;
    }

    /** OS, processors and memory, and /dev/shm (the host engine's shared memory). */
    static List<InfoItem> os(Path shm) {
        List<InfoItem> out = new ArrayList<>();
        String memory = "";
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            memory = ", " + Sizes.human(os.getTotalMemorySize()) + " memory";
        }
        out.add(InfoItem.found("OS", "system", System.getProperty("os.name") + " " + System.getProperty("os.version")
                + " " + System.getProperty("os.arch") + ", " + Runtime.getRuntime().availableProcessors() + " cores"
                + memory));
        if (!Files.isDirectory(shm)) {
            out.add(InfoItem.missing("OS", shm.toString(), "no such directory: the host engine needs a tmpfs at " + shm));
        } else {
            try {
                FileStore fs = Files.getFileStore(shm);
                boolean writable = Files.isWritable(shm);
                String detail = fs.type() + ", " + Sizes.human(fs.getTotalSpace()) + " total, "
                        + Sizes.human(fs.getUsableSpace()) + " free";
                out.add(writable ? InfoItem.found("OS", shm.toString(), detail)
                        : InfoItem.missing("OS", shm.toString(), detail + ", but not writable by this user"));
            } catch (IOException e) {
                out.add(InfoItem.missing("OS", shm.toString(), "cannot read its size: " + e.getMessage()));
            }
        }
        out.add(singleCopy(org.jccl.internal.CrossMemory.YAMA_SCOPE));
        return out;
    }

    /**
     * Whether large send/recv between the ranks of this host can move by one copy (process_vm_readv:
     * JCCL_SHM_SINGLE_COPY_BYTES), given Yama's setting in {@code yama} (absent: no Yama).
     */
    static InfoItem singleCopy(Path yama) {
        String why = org.jccl.internal.CrossMemory.selfCheck();
        if (why != null) {
            return InfoItem.missing("OS", "single copy", why + ": large send/recv between local ranks copy twice "
                    + "(through the shared mailboxes)");
        }
        int scope = org.jccl.internal.CrossMemory.ptraceScope(yama);
        if (scope < 0) {
            return InfoItem.found("OS", "single copy", "process_vm_readv (no Yama): large send/recv between local ranks "
                    + "move by one copy");
        }
        if (scope <= 1) {
            return InfoItem.found("OS", "single copy", "process_vm_readv (Yama ptrace_scope " + scope + "): large "
                    + "send/recv between local ranks move by one copy");
        }
        return InfoItem.missing("OS", "single copy", "Yama ptrace_scope is " + scope + " (" + yama + "): only root "
                + "may read another process, so large send/recv between local processes copy twice; ranks that are "
                + "threads of one process still move by one copy");
    }

    /** The job this process belongs to (JCCL_* variables) and whether its store answers. */
    static List<InfoItem> job(Map<String, String> env) {
        List<InfoItem> out = new ArrayList<>();
        String addr = env.get("JCCL_STORE");
        if (addr == null || addr.isBlank()) {
            out.add(InfoItem.missing("Job", "store", "JCCL_STORE is not set: this process is not a rank of a jccl job "
                    + "(jccl run sets it)"));
            return out;
        }
        if (env.containsKey("JCCL_RANK")) {
            out.add(InfoItem.found("Job", "rank", "rank " + env.get("JCCL_RANK") + " of " + env.getOrDefault("JCCL_WORLD_SIZE", "?")
                    + ", local rank " + env.getOrDefault("JCCL_LOCAL_RANK", "?") + " of "
                    + env.getOrDefault("JCCL_LOCAL_WORLD_SIZE", "?") + ", job id " + env.getOrDefault("JCCL_JOB_ID", "(none)")));
        }
        int colon = addr.lastIndexOf(':');
        int port;
        try {
            port = Integer.parseInt(addr.substring(colon + 1));
            if (colon < 1 || port < 1 || port > 65535) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException | IndexOutOfBoundsException e) {
            out.add(InfoItem.missing("Job", "store", "JCCL_STORE='" + addr + "' is not host:port"));
            return out;
        }
        String host = addr.substring(0, colon);
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), (int) DEADLINE.toMillis());
        } catch (IOException e) {
            out.add(InfoItem.missing("Job", "store", "cannot connect to " + addr + ": " + e.getMessage()));
            return out;
        }
        String token = env.get("JCCL_TOKEN");
        try (Store store = TcpStore.open(host, port, false, token == null || token.isEmpty() ? null : token, DEADLINE)) {
            long keys = store.numKeys();
            out.add(InfoItem.found("Job", "store", "reachable at " + addr + ", "
                    + (token == null ? "no JCCL_TOKEN" : "token accepted") + ", " + keys + " keys"));
        } catch (RuntimeException e) {
            out.add(InfoItem.missing("Job", "store", "something listens at " + addr + " but the store handshake failed: "
                    + Main.describe(e)));
        }
        return out;
    }

    /** Open MPI: libmpi on the library path, and ompi_info's version. */
    static List<InfoItem> mpi() {
        List<InfoItem> out = new ArrayList<>();
        List<String> libs = findLibrary("libmpi.so");
        if (libs.isEmpty()) {
            out.add(InfoItem.missing("Open MPI", "libmpi", "not on the library path (ldconfig -p, LD_LIBRARY_PATH): "
                    + "apt-get install libopenmpi-dev openmpi-bin"));
        } else {
            out.add(InfoItem.found("Open MPI", "libmpi", String.join(", ", libs)));
        }
        String tool = firstLine("ompi_info", "--version");
        if (tool.startsWith("!")) {
            String alt = firstLine("mpirun", "--version");
            out.add(alt.startsWith("!") ? InfoItem.missing("Open MPI", "ompi_info", tool.substring(1))
                    : InfoItem.found("Open MPI", "mpirun", alt));
        } else {
            out.add(InfoItem.found("Open MPI", "ompi_info", tool));
        }
        return out;
    }

    /**
     * Files of a shared library: from {@code ldconfig -p}, then LD_LIBRARY_PATH and the usual
     * folders. {@code stem} is the name without version ("libmpi.so").
     */
    static List<String> findLibrary(String stem) {
        Set<String> found = new LinkedHashSet<>();
        String ld = run(List.of("/sbin/ldconfig", "-p"));
        if (ld != null) {
            for (String line : ld.split("\n")) {
                String t = line.trim();
                int arrow = t.indexOf("=>");
                if (t.startsWith(stem) && arrow > 0) {
                    found.add(t.substring(arrow + 2).trim());
                }
            }
        }
        List<String> dirs = new ArrayList<>();
        String ldPath = System.getenv("LD_LIBRARY_PATH");
        if (ldPath != null) {
            dirs.addAll(List.of(ldPath.split(":")));
        }
        dirs.addAll(List.of("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                "/usr/local/lib", "/opt/openmpi/lib"));
        for (String d : dirs) {
            if (d.isBlank()) {
                continue;
            }
            try (var files = Files.list(Path.of(d))) {
                files.filter(p -> p.getFileName().toString().startsWith(stem)).map(Path::toString).sorted()
                        .forEach(found::add);
            } catch (IOException | RuntimeException e) {
                // A folder that does not exist or cannot be read holds nothing.
            }
        }
        // The same file under several names (symlinks, /lib vs /usr/lib) is listed once.
        List<String> out = new ArrayList<>();
        Set<Path> real = new java.util.HashSet<>();
        for (String f : found) {
            try {
                Path r = Path.of(f).toRealPath();
                if (real.add(r)) {
                    out.add(r.getFileName().toString().equals(Path.of(f).getFileName().toString()) ? f
                            : f + " -> " + r.getFileName());
                }
            } catch (IOException | RuntimeException e) {
                // A dangling link: not a library.
            }
        }
        return out;
    }

    /** The first non-empty output line of a tool, or "!" and why it could not run. */
    static String firstLine(String... cmd) {
        String text = run(List.of(cmd));
        if (text == null) {
            return "!" + cmd[0] + " is not installed or did not answer within " + DEADLINE.toSeconds() + " s";
        }
        for (String line : text.split("\n")) {
            if (!line.isBlank()) {
                return line.trim();
            }
        }
        return "!" + cmd[0] + " printed nothing";
    }

    /** A tool's output, or null when it cannot start, fails, or takes longer than the deadline. */
    static String run(List<String> cmd) {
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        } catch (IOException e) {
            return null;
        }
        // Read on another thread so that a tool that never ends cannot block past the deadline.
        AtomicReference<byte[]> output = new AtomicReference<>();
        Thread reader = Thread.ofVirtual().start(() -> {
            try (InputStream in = p.getInputStream()) {
                output.set(in.readAllBytes());
            } catch (IOException e) {
                // The tool was killed: no output.
            }
        });
        try {
            if (!p.waitFor(DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                return null;
            }
            reader.join(DEADLINE.toMillis());
            byte[] b = output.get();
            return p.exitValue() != 0 || b == null ? null : new String(b, StandardCharsets.UTF_8);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            return null;
        }
    }
}
