package org.jccl.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntPredicate;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jccl.Communicator;
import org.jccl.DataType;
import org.jccl.HostBuffer;
import org.jccl.InvalidUsageException;
import org.jccl.ReduceOp;
import org.jccl.host.HostWorlds;
import org.jccl.host.shm.ShmTransport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The conformance kit's collective and variable-size cases on registered buffers ({@code
 * Communicator.allocate}): every rank registered (the zero-copy paths of the shared-memory engine,
 * from one byte up, and from the default threshold), some ranks registered (every rank takes the
 * copy path), and hierarchical (registered with each host's shared-memory part). Plus what the
 * kit does not check: allocate's arguments, isRegistered, buffers reused at once after a call, the
 * same bits as the copy path, and the region files going away.
 */
class RegisteredConformanceTest {
    private static final long SEED = Kit.seed();
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** The collective and variable-size cases (not p2p, lifecycle or errors: they allocate nothing special). */
    private static final Pattern CASES = Pattern.compile("^(allReduce|reduce|broadcast|allGather|reduceScatter|allToAll"
            + "|gather|scatter|bitwiseIdentity|allGatherV|reduceScatterV|allToAllV|gatherV|scatterV)$");

    private static final Pattern HIER_CASES = Pattern.compile("^(allReduce|reduce|broadcast|allGather|reduceScatter)$");

    static Stream<Arguments> worlds() {
        IntPredicate all = r -> true;
        IntPredicate notLast = r -> r != 2;
        return Stream.of(
                // zero copy for every message of one byte or more
                Arguments.of("shm registered", HostWorlds.oneHost(3), all, "1", false),
                Arguments.of("shm registered", HostWorlds.oneHost(4), all, "1", false),
                // the default threshold, full matrix on the main types (counts around it)
                Arguments.of("shm registered", HostWorlds.oneHost(2), all, null, true),
                // some ranks registered: every rank takes the copy path
                Arguments.of("shm mixed", HostWorlds.oneHost(3), notLast, "1", false),
                // registered with each host's shared-memory part
                Arguments.of("hier registered", new String[] {"a", "a", "b", "b"}, all, "1", false));
    }

    @ParameterizedTest(name = "{0} threads on hosts {1}, zero copy from {3} bytes, full {4}")
    @MethodSource("worlds")
    void kitOnRegisteredBuffers(String name, String[] hosts, IntPredicate registered, String zeroCopyBytes,
                                boolean full) throws Exception {
        String label = name + " " + hosts.length + " threads " + String.join("", hosts)
                + (zeroCopyBytes == null ? "" : " zero copy from " + zeroCopyBytes + " B");
        Traits traits = Traits.host(name.startsWith("hier") ? "hier" : "shm", false).named(label);
        Predicate<String> sel = Kit.selection();
        // hierarchical: the collectives whose steps inside a host take registered buffers (time)
        Pattern cases = name.startsWith("hier") ? HIER_CASES : CASES;
        String before = zeroCopyBytes == null ? null : System.setProperty("jccl.shm.zero.copy.bytes", zeroCopyBytes);
        try {
            List<Kit.Report> reports = HostWorlds.run(hosts, "auto", TIMEOUT, Duration.ofMinutes(4), comm -> {
                Mem mem = Mem.registered(comm, registered);
                try {
                    return Kit.run(comm, () -> mem, traits, SEED, full, n -> cases.matcher(n).find() && sel.test(n));
                } finally {
                    mem.close();
                }
            });
            List<String> failures = new ArrayList<>();
            for (Kit.Report r : reports) {
                failures.addAll(r.failures());
            }
            System.out.println(label + ": " + reports.get(0).ran());
            assertTrue(!reports.get(0).ran().isEmpty() || System.getProperty("jccl.kit.cases") != null, label + ": no case ran");
            ConformanceTest.assertNoFailures(label, failures);
        } finally {
            if (zeroCopyBytes != null) {
                if (before == null) {
                    System.clearProperty("jccl.shm.zero.copy.bytes");
                } else {
                    System.setProperty("jccl.shm.zero.copy.bytes", before);
                }
            }
        }
    }

    /** Ranks as processes: each maps the others' region files (zero copy from one byte). */
    @Test
    void processesAsRanks() throws Exception {
        int n = 2;
        String label = "shm registered " + n + " processes";
        try (org.jccl.bootstrap.TcpStoreServer server = org.jccl.bootstrap.TcpStoreServer.start(
                new java.net.InetSocketAddress("127.0.0.1", 0), null)) {
            List<org.jccl.bootstrap.Procs.Proc> procs = new ArrayList<>();
            String job = "kitr" + Long.toHexString(System.nanoTime());
            try {
                for (int r = 0; r < n; r++) {
                    java.util.Map<String, String> env = new java.util.HashMap<>();
                    env.put("JCCL_RANK", Integer.toString(r));
                    env.put("JCCL_WORLD_SIZE", Integer.toString(n));
                    env.put("JCCL_STORE", "127.0.0.1:" + server.port());
                    env.put("JCCL_STORE_SERVED", "1");
                    env.put("JCCL_JOB_ID", job);
                    env.put("JCCL_TIMEOUT", TIMEOUT.toSeconds() + "s");
                    env.put("JCCL_SHM_ZERO_COPY_BYTES", "1");
                    env.put("JCCL_KIT_SEED", Long.toString(SEED));
                    // as the suite runs (pom.xml): no JIT warm-up at creation, no pinning of the rank threads
                    env.put("JCCL_WARMUP", "0");
                    env.put("JCCL_AFFINITY", "off");
                    String sel = System.getProperty("jccl.kit.cases");
                    env.put("JCCL_KIT_CASES", sel != null ? sel : CASES.pattern());
                    procs.add(org.jccl.bootstrap.Procs.startC2(KitMain.class, List.of(label, "quick", "registered"), env));
                }
                List<String> failures = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    org.jccl.bootstrap.Procs.Proc p = procs.get(r);
                    assertTrue(p.process().waitFor(4, java.util.concurrent.TimeUnit.MINUTES),
                            "rank " + r + " of " + label + " did not finish (hang):\n" + p.output());
                    p.await(l -> l.startsWith("KIT-DONE"), 5_000);
                    String out = p.output();
                    assertTrue(out.contains("KIT-DONE"), "rank " + r + " ended without finishing the kit:\n" + out);
                    failures.addAll(KitMain.failures(out));
                    assertEquals(0, p.process().exitValue(), "rank " + r + " exit code:\n" + out);
                }
                ConformanceTest.assertNoFailures(label, failures);
            } finally {
                for (org.jccl.bootstrap.Procs.Proc p : procs) {
                    p.process().destroyForcibly();
                }
            }
        }
    }

    /** A zero-copy-sized call with a rank missing ends at the deadline, naming it. */
    @Test
    void deadlineNamesTheMissingRank() throws Exception {
        HostWorlds.run(HostWorlds.oneHost(2), "auto", TIMEOUT, Duration.ofMinutes(1), comm -> {
            HostBuffer b = comm.allocate(DataType.FLOAT32, 1 << 20);
            if (comm.rank() == 0) {
                org.jccl.CollectiveTimeoutException e = assertThrows(org.jccl.CollectiveTimeoutException.class,
                        () -> comm.withTimeout(Duration.ofMillis(300)).allReduce(b, ReduceOp.SUM));
                assertEquals(List.of(1), e.missingRanks(), e.getMessage());
            } else {
                Thread.sleep(1500);
            }
            return null;
        });
    }

    /** allocate's arguments, isRegistered, slices, and the files: gone at close. */
    @Test
    void allocateAndIsRegistered() throws Exception {
        List<String> files = HostWorlds.run(HostWorlds.oneHost(2), "auto", TIMEOUT, Duration.ofMinutes(1), comm -> {
            HostBuffer b = comm.allocate(DataType.FLOAT32, 1000);
            assertEquals(1000, b.count());
            assertEquals(DataType.FLOAT32, b.type());
            assertEquals(0, b.segment().address() % 4096, "page aligned");
            assertTrue(comm.isRegistered(b));
            assertTrue(comm.isRegistered(b.slice(10, 7)), "a slice of registered memory is registered");
            assertTrue(comm.withTimeout(Duration.ofSeconds(5)).isRegistered(b), "a view sees the registration");
            assertTrue(comm.isRegistered(comm.withTimeout(Duration.ofSeconds(5)).allocate(DataType.INT8, 3)));
            for (int i = 0; i < 1000; i++) {
                assertEquals(0f, b.segment().getAtIndex(ValueLayout.JAVA_FLOAT, i), "zeroed");
            }
            HostBuffer zero = comm.allocate(DataType.INT64, 0);
            assertEquals(0, zero.count());
            assertFalse(comm.isRegistered(HostBuffer.of(new float[4])));
            assertFalse(comm.isRegistered(HostBuffer.allocate(DataType.FLOAT32, 4, java.lang.foreign.Arena.ofAuto())));
            assertFalse(comm.isRegistered(null));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> comm.allocate(null, 4));
            assertTrue(e.getMessage().contains("type"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> comm.allocate(DataType.FLOAT32, -1));
            assertTrue(e.getMessage().contains("count is -1"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> comm.allocate(DataType.FLOAT64, Long.MAX_VALUE / 2));
            // A split communicator has its own registrations.
            try (Communicator sub = comm.split(0, comm.rank())) {
                assertFalse(sub.isRegistered(b));
                HostBuffer s = sub.allocate(DataType.FLOAT32, 4);
                assertTrue(sub.isRegistered(s));
                assertFalse(comm.isRegistered(s));
            }
            List<String> mine = new ArrayList<>();
            try (Stream<Path> ls = Files.list(ShmTransport.shmDirectory())) {
                ls.filter(p -> p.getFileName().toString().contains("-" + comm.rank() + "-reg")).forEach(p -> mine.add(p.toString()));
            }
            comm.barrier();
            return String.join(",", mine);
        });
        for (String f : String.join(",", files).split(",")) {
            if (!f.isEmpty()) {
                assertFalse(Files.exists(Path.of(f)), f + " still exists after close");
            }
        }
        assertTrue(String.join(",", files).contains("-reg"), "no region file seen: " + files);
    }

    @Test
    void allocateOnClosedAndTcp() throws Exception {
        HostWorlds.run(HostWorlds.oneHost(2), "tcp", TIMEOUT, Duration.ofMinutes(1), comm -> {
            HostBuffer b = comm.allocate(DataType.FLOAT32, 8);
            assertFalse(comm.isRegistered(b), "TCP registers nothing");
            b.segment().setAtIndex(ValueLayout.JAVA_FLOAT, 0, comm.rank() + 1);
            comm.allReduce(b, ReduceOp.SUM);
            assertEquals(3f, b.segment().getAtIndex(ValueLayout.JAVA_FLOAT, 0));
            return null;
        });
        Communicator[] kept = new Communicator[2];
        HostBuffer[] held = new HostBuffer[2];
        HostWorlds.run(HostWorlds.oneHost(2), "auto", TIMEOUT, Duration.ofMinutes(1), comm -> {
            kept[comm.rank()] = comm;
            held[comm.rank()] = comm.allocate(DataType.FLOAT32, 8);
            return null;
        });
        InvalidUsageException e = assertThrows(InvalidUsageException.class, () -> kept[0].allocate(DataType.FLOAT32, 1));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> held[0].segment().get(ValueLayout.JAVA_FLOAT, 0),
                "registered memory is unmapped at close: an exception, not a crash");
    }

    /**
     * Every rank overwrites its buffers the moment a call returns: a rank that returned while a
     * peer still read them would make that peer's result wrong. Also: the same bits as the copy path.
     */
    @Test
    void buffersReusableAtReturnAndSameBitsAsCopyPath() throws Exception {
        int n = 3;
        long count = 300_007;
        List<String> out = HostWorlds.run(HostWorlds.oneHost(n), "auto", TIMEOUT, Duration.ofMinutes(2), comm -> {
            List<String> bad = new ArrayList<>();
            HostBuffer send = comm.allocate(DataType.FLOAT32, count);
            HostBuffer recv = comm.allocate(DataType.FLOAT32, count);
            HostBuffer gathered = comm.allocate(DataType.FLOAT32, count * n);
            float[] plainRecv = new float[(int) count];
            java.util.Random rnd = new java.util.Random(SEED + comm.rank());
            for (int round = 0; round < 20; round++) {
                for (long i = 0; i < count; i++) {
                    send.segment().setAtIndex(ValueLayout.JAVA_FLOAT, i, rnd.nextFloat() * 1000 - 500);
                }
                float[] plainSend = send.segment().toArray(ValueLayout.JAVA_FLOAT);
                comm.allReduce(send, recv, ReduceOp.SUM);
                send.segment().fill((byte) 0x7f); // a peer still reading would see NaNs
                MemorySegment zc = MemorySegment.ofArray(recv.segment().toArray(ValueLayout.JAVA_FLOAT));
                recv.segment().fill((byte) 0x7f);
                comm.allReduce(HostBuffer.of(plainSend), HostBuffer.of(plainRecv), ReduceOp.SUM);
                long m = zc.mismatch(MemorySegment.ofArray(plainRecv));
                if (m >= 0) {
                    bad.add("round " + round + ": zero-copy all-reduce differs from the copy path at byte " + m);
                }
                MemorySegment.copy(plainSend, 0, send.segment(), ValueLayout.JAVA_FLOAT, 0, plainSend.length);
                comm.allGather(send, gathered);
                send.segment().fill((byte) 0x7f);
                float[] all = new float[(int) (count * n)];
                comm.allGather(HostBuffer.of(plainSend), HostBuffer.of(all));
                m = gathered.segment().mismatch(MemorySegment.ofArray(all));
                if (m >= 0) {
                    bad.add("round " + round + ": zero-copy all-gather differs from the copy path at byte " + m);
                }
            }
            return String.join("\n", bad);
        });
        for (String s : out) {
            assertEquals("", s);
        }
    }
}
