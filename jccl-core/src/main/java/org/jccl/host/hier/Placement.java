package org.jccl.host.hier;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jccl.bootstrap.Store;

/**
 * Which ranks share a host: every rank publishes its host id in the store, rank 0 collects them
 * into one value the others read (O(n) store operations in all). Hosts are numbered in the order
 * their first rank appears; the ranks of a host keep their rank order.
 *
 * @param hostIds   host id of every rank
 * @param hostOf    host number of every rank
 * @param members   the ranks of every host, in rank order
 */
public record Placement(String[] hostIds, int[] hostOf, int[][] members) {

    /** Collective: exchanges the host ids of the {@code size} ranks through {@code store}. */
    public static Placement exchange(Store store, int rank, int size, String hostId, Duration timeout) {
        if (hostId.indexOf('\n') >= 0) {
            throw new IllegalArgumentException("host id '" + hostId + "' contains a line break: use a single-line JCCL_HOST_ID");
        }
        store.set("host/host-of/" + rank, hostId.getBytes(StandardCharsets.UTF_8));
        String all;
        if (rank == 0) {
            StringBuilder b = new StringBuilder();
            for (int r = 0; r < size; r++) {
                b.append(new String(store.get("host/host-of/" + r, timeout), StandardCharsets.UTF_8)).append('\n');
            }
            all = b.toString();
            store.set("host/hosts", all.getBytes(StandardCharsets.UTF_8));
        } else {
            all = new String(store.get("host/hosts", timeout), StandardCharsets.UTF_8);
        }
        String[] ids = all.split("\n", -1);
        return of(java.util.Arrays.copyOf(ids, size));
    }

    /** The placement of ranks with the given host ids. */
    public static Placement of(String[] hostIds) {
        Map<String, List<Integer>> byHost = new LinkedHashMap<>();
        for (int r = 0; r < hostIds.length; r++) {
            byHost.computeIfAbsent(hostIds[r], k -> new ArrayList<>()).add(r);
        }
        int[] hostOf = new int[hostIds.length];
        int[][] members = new int[byHost.size()][];
        int h = 0;
        for (List<Integer> rs : byHost.values()) {
            members[h] = rs.stream().mapToInt(Integer::intValue).toArray();
            for (int r : rs) {
                hostOf[r] = h;
            }
            h++;
        }
        return new Placement(hostIds.clone(), hostOf, members);
    }

    /** Number of hosts. */
    public int hosts() {
        return members.length;
    }

    /** Position of {@code rank} among the ranks of its host. */
    public int localRank(int rank) {
        int[] m = members[hostOf[rank]];
        for (int i = 0; i < m.length; i++) {
            if (m[i] == rank) {
                return i;
            }
        }
        throw new IllegalArgumentException("rank " + rank + " is not in this placement");
    }

    /** Most ranks on one host. */
    public int maxLocal() {
        int m = 0;
        for (int[] x : members) {
            m = Math.max(m, x.length);
        }
        return m;
    }
}
