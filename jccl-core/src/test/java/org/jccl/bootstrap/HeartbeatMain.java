package org.jccl.bootstrap;

import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;

/**
 * A rank that only sends heartbeats (a test process): {@code host port scope rank intervalMs}.
 * Prints "ready", then "DEAD r t" when it learns that rank r died (t: its System.nanoTime, the
 * same clock as every process of this machine) and "SILENT [..] t" whenever the set of silent
 * ranks changes. Exits by itself after 60 s.
 */
public final class HeartbeatMain {
    private HeartbeatMain() {
    }

    public static void main(String[] args) throws Exception {
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        String scope = args[2];
        int rank = Integer.parseInt(args[3]);
        Duration interval = Duration.ofMillis(Long.parseLong(args[4]));
        TcpStore store = TcpStore.connect(host, port, null, Duration.ofSeconds(30));
        Heartbeat hb = Heartbeat.start(store, scope, rank, interval, false);
        hb.addListener((r, why) -> {
            System.out.println("DEAD " + r + " " + System.nanoTime() + " " + why);
            System.out.flush();
        });
        System.out.println("ready");
        System.out.flush();
        Set<Integer> silent = new TreeSet<>();
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < end) {
            Set<Integer> now = new TreeSet<>(hb.silentRanks().keySet());
            if (!now.equals(silent)) {
                silent = now;
                System.out.println("SILENT " + now + " " + System.nanoTime());
                System.out.flush();
            }
            Thread.sleep(10);
        }
        System.exit(0);
    }
}
