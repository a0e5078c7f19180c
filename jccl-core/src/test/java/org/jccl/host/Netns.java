package org.jccl.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Pretend hosts for tests: Linux network namespaces {@code <prefix>-h<i>}, each with an {@code
 * eth0} (10.77.0.(i+1)/24) on a veth whose other end sits on a bridge in a switch namespace
 * {@code <prefix>-sw}. Everything is created inside the namespaces (nothing in the caller's
 * namespace), names carry the pid and a counter, and {@link #close()} deletes every namespace
 * (their veths and the bridge go with them), also after a failed setup. Needs root and iproute2.
 */
final class Netns implements AutoCloseable {
    private static final AtomicInteger COUNTER = new AtomicInteger();

    private final String prefix;
    private final int hosts;
    private final List<String> created = new ArrayList<>();

    private Netns(String prefix, int hosts) {
        this.prefix = prefix;
        this.hosts = hosts;
    }

    /** Why namespaces cannot be made here, or null when they can. */
    static String unavailable() {
        if (!System.getProperty("os.name", "").startsWith("Linux")) {
            return "network namespaces need Linux";
        }
        try {
            Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
            if (!Integer.valueOf(0).equals(uid)) {
                return "network namespaces need root (uid " + uid + ")";
            }
        } catch (IOException | RuntimeException e) {
            return "cannot tell the uid: " + e;
        }
        if (!Files.isExecutable(Path.of("/usr/sbin/ip")) && !Files.isExecutable(Path.of("/sbin/ip"))
                && !Files.isExecutable(Path.of("/usr/bin/ip"))) {
            return "the ip command (iproute2) is missing";
        }
        String probe = "jccl" + ProcessHandle.current().pid() + "-probe";
        try {
            run("ip", "netns", "add", probe);
            run("ip", "netns", "del", probe);
        } catch (IOException e) {
            return "cannot create a network namespace: " + e.getMessage();
        }
        return null;
    }

    /** Creates {@code hosts} pretend hosts on one switch. */
    static Netns create(int hosts) throws IOException {
        Netns n = new Netns("jccl" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet(), hosts);
        boolean ok = false;
        try {
            String sw = n.switchNs();
            n.add(sw);
            run("ip", "-n", sw, "link", "add", "br0", "type", "bridge");
            run("ip", "-n", sw, "link", "set", "br0", "up");
            run("ip", "-n", sw, "link", "set", "lo", "up");
            for (int i = 0; i < hosts; i++) {
                String h = n.ns(i);
                n.add(h);
                run("ip", "-n", sw, "link", "add", "p" + i, "type", "veth", "peer", "name", "eth0", "netns", h);
                run("ip", "-n", sw, "link", "set", "p" + i, "master", "br0");
                run("ip", "-n", sw, "link", "set", "p" + i, "up");
                run("ip", "-n", h, "addr", "add", address(i) + "/24", "dev", "eth0");
                run("ip", "-n", h, "link", "set", "eth0", "up");
                run("ip", "-n", h, "link", "set", "lo", "up");
            }
            ok = true;
            return n;
        } finally {
            if (!ok) {
                n.close();
            }
        }
    }

    private void add(String ns) throws IOException {
        run("ip", "netns", "add", ns);
        created.add(ns);
    }

    String switchNs() {
        return prefix + "-sw";
    }

    /** The namespace of host {@code i}. */
    String ns(int i) {
        return prefix + "-h" + i;
    }

    /** The address of host {@code i}. */
    static String address(int i) {
        return "10.77.0." + (i + 1);
    }

    int hosts() {
        return hosts;
    }

    /** {@code command} run inside host {@code i}'s namespace. */
    List<String> inHost(int i, List<String> command) {
        List<String> c = new ArrayList<>(List.of("ip", "netns", "exec", ns(i)));
        c.addAll(command);
        return c;
    }

    /** Cuts host {@code i} off the switch (its veth's switch end goes down; no FIN, no RST: silence). */
    void cut(int i) throws IOException {
        run("ip", "-n", switchNs(), "link", "set", "p" + i, "down");
    }

    /** The namespaces of this object that still exist. */
    List<String> remaining() throws IOException {
        String all = run("ip", "netns", "list");
        List<String> left = new ArrayList<>();
        for (String ns : created) {
            if (all.contains(ns + " ") || all.contains(ns + "\n") || all.endsWith(ns)) {
                left.add(ns);
            }
        }
        return left;
    }

    @Override
    public void close() {
        for (int i = created.size() - 1; i >= 0; i--) {
            try {
                run("ip", "netns", "del", created.get(i));
            } catch (IOException e) {
                System.err.println("could not delete network namespace " + created.get(i) + ": " + e.getMessage());
            }
        }
    }

    /** Runs a command, returns its output; IOException with its output when it fails or takes over 20 s. */
    static String run(String... cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", cmd) + " did not finish in 20 s");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", cmd));
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed (" + p.exitValue() + "): " + out.trim());
        }
        return out;
    }
}
