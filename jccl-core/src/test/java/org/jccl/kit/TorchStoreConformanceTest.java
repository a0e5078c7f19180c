package org.jccl.kit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jccl.bootstrap.TorchStore;
import org.jccl.bootstrap.TorchStoreProtocol.Generation;
import org.jccl.bootstrap.TorchStoreServer;
import org.jccl.host.HostWorlds;
import org.jccl.testing.PythonTorch;
import org.jccl.testing.Require;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The conformance kit (its quick subset) on communicators formed through a store that speaks
 * PyTorch's TCPStore protocol: jccl's {@link TorchStoreServer}, and torch's own server (Debian's
 * python3-torch; {@code JCCL_REQUIRE=torch} makes its absence a failure).
 */
class TorchStoreConformanceTest {
    private static final long SEED = Kit.seed();
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @Test
    void shmThreadsOverJcclsTorchProtocolStore() throws Exception {
        for (Generation g : List.of(Generation.TORCH_2)) { // TORCH_1 clients: against torch's own server below
            try (TorchStoreServer server = TorchStoreServer.start(new InetSocketAddress("127.0.0.1", 0))) {
                runKit("shm 3 threads, torch store (jccl's, " + g + " clients)", HostWorlds.oneHost(3), "auto",
                        r -> TorchStore.connect("127.0.0.1", server.port(), g, TIMEOUT));
            }
        }
    }

    @Test
    void tcpThreadsOverTorchsOwnStore(@TempDir Path dir) throws Exception {
        Require.require("torch", PythonTorch.unavailable());
        int port = PythonTorch.freePort();
        try (PythonTorch.Script py = PythonTorch.startTorchServer(dir, port, 1)) {
            runKit("tcp 2 threads, torch store (torch's own server)", HostWorlds.oneHost(2), "tcp",
                    rank -> TorchStore.connect("127.0.0.1", port, null, TIMEOUT));
        }
    }

    private static void runKit(String name, String[] hosts, String transport,
                               java.util.function.IntFunction<org.jccl.bootstrap.Store> storeOf) throws Exception {
        Traits traits = Traits.host(transport.equals("tcp") ? "tcp" : "shm", false).named(name);
        List<Kit.Report> reports = HostWorlds.runOnStores(hosts, transport, TIMEOUT, Duration.ofMinutes(6), storeOf,
                comm -> Kit.run(comm, Mem::host, traits, SEED, false, Kit.selection()));
        List<String> failures = new ArrayList<>();
        for (Kit.Report rep : reports) {
            failures.addAll(rep.failures());
        }
        System.out.println(name + ": " + reports.get(0).ran());
        assertFalse(reports.get(0).ran().isEmpty() && System.getProperty("jccl.kit.cases") == null, name + ": no case ran");
        if (!failures.isEmpty()) {
            fail(name + ": " + failures.size() + " failure(s), seed " + SEED + ":\n  " + String.join("\n  ", failures.subList(0,
                    Math.min(40, failures.size()))));
        }
    }
}
