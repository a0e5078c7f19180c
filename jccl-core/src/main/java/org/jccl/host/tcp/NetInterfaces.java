package org.jccl.host.tcp;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jccl.JcclException;

/**
 * Chooses the address a rank listens on.
 *
 * <p>With {@code JCCL_SOCKET_IFNAME} (NCCL's syntax): a comma-separated list of interface name
 * prefixes ({@code eth,ib}); {@code =} in front asks for exact names ({@code =eth0}); {@code ^}
 * in front excludes the listed prefixes instead ({@code ^docker,lo}). The first interface that
 * is up and matches, in the system's order, gives its first IPv4 address (else a global IPv6 one).
 *
 * <p>Without it: the local address of the route to the store host (what the kernel would use as
 * source address to reach it; no packet is sent), so the ranks listen where the store is reachable.
 */
public final class NetInterfaces {
    private NetInterfaces() {
    }

    /**
     * The listen address.
     *
     * @param ifname    JCCL_SOCKET_IFNAME or null
     * @param storeHost the store's host (name or address), or null
     */
    public static InetAddress choose(String ifname, String storeHost) {
        if (ifname != null) {
            return byName(ifname);
        }
        if (storeHost != null && !storeHost.isBlank()) {
            try {
                InetAddress store = InetAddress.getByName(storeHost);
                if (store.isLoopbackAddress()) {
                    return store;
                }
                try (DatagramSocket probe = new DatagramSocket()) {
                    probe.connect(new InetSocketAddress(store, 9));
                    InetAddress local = probe.getLocalAddress();
                    if (local != null && !local.isAnyLocalAddress()) {
                        return local;
                    }
                }
            } catch (IOException | RuntimeException e) {
                // fall through to the first interface
            }
        }
        InetAddress any = firstUp(List.of(), false, false);
        if (any != null) {
            return any;
        }
        return InetAddress.getLoopbackAddress();
    }

    static InetAddress byName(String spec) {
        String s = spec.trim();
        boolean exclude = s.startsWith("^");
        if (exclude) {
            s = s.substring(1);
        }
        boolean exact = s.startsWith("=");
        if (exact) {
            s = s.substring(1);
        }
        List<String> names = new ArrayList<>();
        for (String part : s.split(",")) {
            if (!part.isBlank()) {
                names.add(part.trim());
            }
        }
        if (names.isEmpty()) {
            throw new IllegalArgumentException("JCCL_SOCKET_IFNAME=" + spec
                    + " names no interface: give a prefix such as eth0, a list eth,ib, =eth0 for an exact name or ^lo to exclude");
        }
        InetAddress a = exclude ? firstUp(names, exact, true) : null;
        if (!exclude) {
            for (String name : names) {
                a = firstUp(List.of(name), exact, false);
                if (a != null) {
                    break;
                }
            }
        }
        if (a == null) {
            throw new JcclException("JCCL_SOCKET_IFNAME=" + spec + " matches no interface that is up and has an address; "
                    + "interfaces here: " + describeAll());
        }
        return a;
    }

    /** The first up interface (matching or, with exclude, not matching the names) with an address. */
    private static InetAddress firstUp(List<String> names, boolean exact, boolean exclude) {
        try {
            InetAddress v6 = null;
            for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (!ni.isUp()) {
                    continue;
                }
                boolean matches = false;
                for (String n : names) {
                    matches |= exact ? ni.getName().equals(n) : ni.getName().startsWith(n);
                }
                if (names.isEmpty()) {
                    // no names: any interface but loopback
                    if (ni.isLoopback()) {
                        continue;
                    }
                } else if (matches == exclude) {
                    continue;
                }
                for (InetAddress a : Collections.list(ni.getInetAddresses())) {
                    if (a instanceof Inet4Address) {
                        return a;
                    }
                    if (v6 == null && a instanceof Inet6Address i6 && !i6.isLinkLocalAddress()) {
                        v6 = a;
                    }
                }
            }
            return v6;
        } catch (SocketException e) {
            throw new JcclException("cannot list network interfaces: " + e.getMessage(), e);
        }
    }

    /** "name(addr, ...)" for every interface that is up, for error messages. */
    static String describeAll() {
        try {
            List<String> out = new ArrayList<>();
            for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (ni.isUp()) {
                    List<String> addrs = new ArrayList<>();
                    for (InetAddress a : Collections.list(ni.getInetAddresses())) {
                        addrs.add(a.getHostAddress());
                    }
                    out.add(ni.getName() + addrs);
                }
            }
            return String.join(", ", out);
        } catch (SocketException e) {
            return "(cannot list: " + e.getMessage() + ")";
        }
    }
}
