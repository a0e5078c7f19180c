package org.jccl.bootstrap;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jccl.Options;
import org.junit.jupiter.api.Test;

class EnvDiscoveryTest {

    static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    static Options d(String... kv) {
        return EnvDiscovery.discover(env(kv));
    }

    /** Asserts the rank, the world and local sizes, the store's address and the job id discovered in {@code o}. */
    static void assertWorld(Options o, int rank, int size, int localRank, int localSize, String storeHost, int storePort,
                            String jobId) {
        assertEquals(rank, o.rank());
        assertEquals(size, o.size());
        assertEquals(localRank, o.localRank());
        assertEquals(localSize, o.localSize());
        assertEquals(storeHost, o.storeHost());
        assertEquals(storePort, o.storePort());
        assertEquals(jobId, o.jobId());
    }

    /** Asserts an IllegalArgumentException whose message names every given word. */
    static void fails(Map<String, String> env, String... words) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> EnvDiscovery.discover(env));
        for (String w : words) {
            assertTrue(e.getMessage().contains(w), "message lacks '" + w + "': " + e.getMessage());
        }
    }

    @Test
    void nothingSetIsASingleRankJobHostingItsOwnStore() {
        Options o = d();
        assertWorld(o, 0, 1, 0, 1, "127.0.0.1", 0, "jccl");
        assertNull(o.token());
        assertEquals(Options.DEFAULT_TIMEOUT, o.timeout());
        assertNull(o.backend());
    }

    @Test
    void jcclVariables() {
        Options o = d("JCCL_RANK", "3", "JCCL_WORLD_SIZE", "8", "JCCL_LOCAL_RANK", "1", "JCCL_LOCAL_WORLD_SIZE", "2",
                "JCCL_STORE", "node7:29400", "JCCL_JOB_ID", "exp-42", "JCCL_TOKEN", "t0k", "JCCL_TIMEOUT", "90",
                "JCCL_BACKEND", " Host ");
        assertWorld(o, 3, 8, 1, 2, "node7", 29400, "exp-42");
        assertEquals("t0k", o.token());
        assertEquals(Duration.ofSeconds(90), o.timeout());
        assertEquals("host", o.backend());
        // no local variables: every rank on this host
        Options g = d("JCCL_RANK", "2", "JCCL_WORLD_SIZE", "4", "JCCL_STORE", "127.0.0.1:29500");
        assertEquals(2, g.localRank());
        assertEquals(4, g.localSize());
        // IPv6
        Options v6 = d("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "[::1]:29500");
        assertEquals("::1", v6.storeHost());
        assertEquals(29500, v6.storePort());
    }

    @Test
    void timeouts() {
        assertEquals(Duration.ofSeconds(90), d("JCCL_TIMEOUT", "90").timeout());
        assertEquals(Duration.ofSeconds(90), d("JCCL_TIMEOUT", "90s").timeout());
        assertEquals(Duration.ofMinutes(5), d("JCCL_TIMEOUT", "5m").timeout());
        assertEquals(Duration.ofHours(1), d("JCCL_TIMEOUT", "1h").timeout());
        assertEquals(Duration.ofMillis(500), d("JCCL_TIMEOUT", "500ms").timeout());
        assertEquals(Duration.ofSeconds(90), d("JCCL_TIMEOUT", "1.5m").timeout());
        assertEquals(Duration.ofSeconds(30), d("JCCL_TIMEOUT", "PT30S").timeout());
        fails(env("JCCL_TIMEOUT", "soon"), "JCCL_TIMEOUT", "90s");
        fails(env("JCCL_TIMEOUT", "0"), "JCCL_TIMEOUT");
        fails(env("JCCL_TIMEOUT", "-5s"), "JCCL_TIMEOUT");
        fails(env("JCCL_TIMEOUT", "5 parsecs"), "JCCL_TIMEOUT");
    }

    @Test
    void heartbeats() {
        assertEquals(Options.DEFAULT_HEARTBEAT, d().heartbeat());
        assertTrue(d().heartbeatsOn());
        assertEquals(Duration.ofMillis(200), d("JCCL_HEARTBEAT", "200ms").heartbeat());
        assertEquals(Duration.ofSeconds(2), d("JCCL_HEARTBEAT", "2").heartbeat());
        assertEquals(Duration.ofSeconds(5), d("JCCL_HEARTBEAT", "PT5S").heartbeat());
        for (String off : new String[] {"0", "off", "OFF", "none", "false", "no", "0s", "0ms", "0.0"}) {
            Options o = d("JCCL_HEARTBEAT", off);
            assertEquals(Duration.ZERO, o.heartbeat(), off);
            assertTrue(!o.heartbeatsOn(), off);
        }
        fails(env("JCCL_HEARTBEAT", "often"), "JCCL_HEARTBEAT");
        fails(env("JCCL_HEARTBEAT", "5ms"), "JCCL_HEARTBEAT", "10 ms");
        fails(env("JCCL_HEARTBEAT", "-1s"), "JCCL_HEARTBEAT");
        assertThrows(IllegalArgumentException.class, () -> Options.of(0, 1).withHeartbeat(Duration.ofMillis(1)));
        assertThrows(IllegalArgumentException.class, () -> Options.of(0, 1).withHeartbeat(Duration.ofSeconds(-1)));
        assertThrows(NullPointerException.class, () -> Options.of(0, 1).withHeartbeat(null));
        assertTrue(Options.of(0, 1).withHeartbeat(Duration.ZERO).toString().contains("heartbeat=off"));
    }

    @Test
    void overlaysApplyOnTopOfAnyLauncher() {
        Options o = d("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "1234",
                "JCCL_TIMEOUT", "2m", "JCCL_TOKEN", "sec", "JCCL_JOB_ID", "mine", "JCCL_BACKEND", "nccl");
        assertEquals(Duration.ofMinutes(2), o.timeout());
        assertEquals("sec", o.token());
        assertEquals("mine", o.jobId());
        assertEquals("nccl", o.backend());
        Options s = d("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_LOCALID", "0", "SLURM_TASKS_PER_NODE", "2",
                "SLURM_JOB_ID", "77", "SLURM_STEP_NODELIST", "a1", "JCCL_STORE", "other:555");
        assertEquals("other", s.storeHost());
        assertEquals(555, s.storePort());
        fails(env("JCCL_JOB_ID", "has space"), "JCCL_JOB_ID");
        fails(env("JCCL_TOKEN", ""), "JCCL_TOKEN");
    }

    @Test
    void jcclVariablesWinOverEveryLauncher() {
        Options o = d("JCCL_RANK", "1", "JCCL_WORLD_SIZE", "3", "JCCL_STORE", "j:1",
                "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "m", "MASTER_PORT", "2",
                "SLURM_PROCID", "5", "SLURM_NTASKS", "9", "OMPI_COMM_WORLD_RANK", "4", "OMPI_COMM_WORLD_SIZE", "6");
        assertEquals(1, o.rank());
        assertEquals(3, o.size());
        assertEquals("j", o.storeHost());
        // torchrun before Slurm before Open MPI
        Options t = d("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "m", "MASTER_PORT", "2",
                "SLURM_PROCID", "5", "SLURM_NTASKS", "9", "OMPI_COMM_WORLD_RANK", "4", "OMPI_COMM_WORLD_SIZE", "6");
        assertEquals(2, t.size());
        Options s = d("SLURM_PROCID", "5", "SLURM_NTASKS", "9", "SLURM_NNODES", "1", "SLURM_JOB_ID", "1",
                "SLURM_STEP_NODELIST", "n1", "OMPI_COMM_WORLD_RANK", "4", "OMPI_COMM_WORLD_SIZE", "6");
        assertEquals(9, s.size());
    }

    @Test
    void jcclErrorsNameTheVariable() {
        fails(env("JCCL_RANK", "0"), "JCCL_WORLD_SIZE");
        fails(env("JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:1"), "JCCL_RANK");
        fails(env("JCCL_RANK", "x", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:1"), "JCCL_RANK", "'x'", "integer");
        fails(env("JCCL_RANK", "2", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:1"), "JCCL_RANK=2", "JCCL_WORLD_SIZE=2");
        fails(env("JCCL_RANK", "-1", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:1"), "JCCL_RANK");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "0"), "JCCL_WORLD_SIZE");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2"), "JCCL_STORE", "host:port");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:1", "JCCL_LOCAL_RANK", "0"),
                "JCCL_LOCAL_RANK", "JCCL_LOCAL_WORLD_SIZE");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:1", "JCCL_LOCAL_WORLD_SIZE", "2"),
                "JCCL_LOCAL_RANK");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:1", "JCCL_LOCAL_RANK", "2",
                "JCCL_LOCAL_WORLD_SIZE", "2"), "JCCL_LOCAL_RANK=2");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:1", "JCCL_LOCAL_RANK", "0",
                "JCCL_LOCAL_WORLD_SIZE", "4"), "JCCL_LOCAL_WORLD_SIZE", "JCCL_WORLD_SIZE=2");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "nohost"), "JCCL_STORE", "port");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:http"), "JCCL_STORE", "port");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:70000"), "JCCL_STORE", "port");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "::1:5"), "JCCL_STORE", "[");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", ":5"), "JCCL_STORE", "host");
        fails(env("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "2", "JCCL_STORE", "h:0"), "JCCL_STORE", "port 0");
    }

    @Test
    void torchrun() {
        Options o = d("RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4",
                "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29500", "TORCHELASTIC_RUN_ID", "run/7");
        assertWorld(o, 5, 8, 1, 4, "10.0.0.1", 29500, "torch-run-7");
        // torchrun's agent owns MASTER_PORT: jccl uses the next one
        Options a = d("RANK", "0", "WORLD_SIZE", "2", "LOCAL_RANK", "0", "LOCAL_WORLD_SIZE", "2",
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500", "TORCHELASTIC_USE_AGENT_STORE", "True",
                "TORCHELASTIC_RUN_ID", "none");
        assertEquals(29501, a.storePort());
        assertEquals("torch-p29501", a.jobId());
        // ... unless the ranks speak torch's store protocol: then they share the agent's store
        Options t = d("RANK", "0", "WORLD_SIZE", "2", "LOCAL_RANK", "0", "LOCAL_WORLD_SIZE", "2",
                "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500", "TORCHELASTIC_USE_AGENT_STORE", "True",
                "TORCHELASTIC_RUN_ID", "none", "JCCL_STORE_PROTOCOL", "torch");
        assertEquals(29500, t.storePort());
        // errors
        fails(env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "1", "JCCL_STORE_PROTOCOL", "pytorch"),
                "JCCL_STORE_PROTOCOL=pytorch", "torch");
        fails(env("RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", "1"), "MASTER_ADDR");
        fails(env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h"), "MASTER_PORT");
        fails(env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "abc"), "MASTER_PORT");
        fails(env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "0"), "MASTER_PORT", "port 0");
        fails(env("RANK", "4", "WORLD_SIZE", "4", "MASTER_ADDR", "h", "MASTER_PORT", "1"), "RANK=4", "WORLD_SIZE=4");
        fails(env("RANK", "1"), "WORLD_SIZE");
        fails(env("WORLD_SIZE", "two"), "WORLD_SIZE", "'two'");
        fails(env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "1", "LOCAL_RANK", "0"),
                "LOCAL_WORLD_SIZE");
        fails(env("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "65535",
                "TORCHELASTIC_USE_AGENT_STORE", "True"), "MASTER_PORT");
        // a single-rank torchrun without a master address
        Options one = d("RANK", "0", "WORLD_SIZE", "1");
        assertEquals(0, one.storePort());
    }

    @Test
    void slurm() {
        Options o = d("SLURM_PROCID", "5", "SLURM_NTASKS", "8", "SLURM_LOCALID", "1", "SLURM_NODEID", "1",
                "SLURM_TASKS_PER_NODE", "4(x2)", "SLURM_JOB_ID", "12345", "SLURM_STEP_ID", "0",
                "SLURM_STEP_NODELIST", "gpu[01-04,07],cpu3");
        int port = EnvDiscovery.slurmPort("12345", "0");
        assertWorld(o, 5, 8, 1, 4, "gpu01", port, "slurm-12345.0");
        assertTrue(port >= EnvDiscovery.SLURM_PORT_BASE && port < EnvDiscovery.SLURM_PORT_BASE + EnvDiscovery.SLURM_PORT_RANGE);
        // the derived port is the same on every task and differs between steps (for these ids)
        assertEquals(port, EnvDiscovery.slurmPort("12345", "0"));
        assertNotEquals(port, EnvDiscovery.slurmPort("12345", "1"));

        // uneven nodes: "2(x2),1" and this task on the third node
        Options u = d("SLURM_PROCID", "4", "SLURM_STEP_NUM_TASKS", "5", "SLURM_NTASKS", "99", "SLURM_LOCALID", "0",
                "SLURM_NODEID", "2", "SLURM_STEP_TASKS_PER_NODE", "2(x2),1", "SLURM_JOB_ID", "9",
                "SLURM_STEP_NODELIST", "n[3-5]", "MASTER_PORT", "4000");
        assertEquals(5, u.size());
        assertEquals(1, u.localSize());
        assertEquals("n3", u.storeHost());
        assertEquals(4000, u.storePort());
        // MASTER_ADDR wins over the node list
        Options m = d("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_LOCALID", "0", "SLURM_NTASKS_PER_NODE", "2",
                "SLURM_JOB_ID", "9", "SLURM_STEP_NODELIST", "n1", "MASTER_ADDR", "login");
        assertEquals("login", m.storeHost());
        assertEquals(2, m.localSize());
        // a single node without tasks per node
        Options single = d("SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_NNODES", "1", "SLURM_JOB_ID", "3",
                "SLURM_NODELIST", "solo");
        assertEquals(1, single.localRank());
        assertEquals(2, single.localSize());
        assertEquals("solo", single.storeHost());
    }

    @Test
    void slurmErrorsNameTheVariable() {
        fails(env("SLURM_PROCID", "0"), "SLURM_NTASKS");
        fails(env("SLURM_PROCID", "x", "SLURM_NTASKS", "2"), "SLURM_PROCID", "'x'");
        fails(env("SLURM_PROCID", "2", "SLURM_NTASKS", "2", "SLURM_NNODES", "1"), "SLURM_PROCID=2", "SLURM_NTASKS=2");
        fails(env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_NNODES", "2", "SLURM_JOB_ID", "1",
                "SLURM_STEP_NODELIST", "a[1-2]"), "SLURM_STEP_TASKS_PER_NODE");
        fails(env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_TASKS_PER_NODE", "2(x2)", "SLURM_JOB_ID", "1",
                "SLURM_STEP_NODELIST", "a[1-2]"), "SLURM_LOCALID");
        fails(env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "2", "SLURM_TASKS_PER_NODE", "2(x2)",
                "SLURM_JOB_ID", "1", "SLURM_STEP_NODELIST", "a[1-2]"), "SLURM_LOCALID=2");
        fails(env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0", "SLURM_TASKS_PER_NODE", "2(y2)",
                "SLURM_JOB_ID", "1", "SLURM_STEP_NODELIST", "a[1-2]"), "SLURM_TASKS_PER_NODE");
        fails(env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0", "SLURM_NODEID", "5",
                "SLURM_TASKS_PER_NODE", "2,2", "SLURM_JOB_ID", "1", "SLURM_STEP_NODELIST", "a[1-2]"),
                "SLURM_NODEID=5", "SLURM_TASKS_PER_NODE");
        fails(env("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_NNODES", "1", "SLURM_JOB_ID", "1"), "SLURM_STEP_NODELIST");
        fails(env("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_NNODES", "1", "SLURM_STEP_NODELIST", "a"), "SLURM_JOB_ID");
        fails(env("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_NNODES", "1", "SLURM_JOB_ID", "1",
                "SLURM_STEP_NODELIST", "gpu[01-"), "SLURM_STEP_NODELIST");
    }

    @Test
    void hostLists() {
        assertEquals(List.of("gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "cpu3"),
                EnvDiscovery.expandHostList("V", "gpu[01-04,07],cpu3", 100));
        assertEquals(List.of("r1n1", "r1n2", "r2n1", "r2n2"), EnvDiscovery.expandHostList("V", "r[1-2]n[1-2]", 100));
        assertEquals(List.of("a", "b-09", "b-10"), EnvDiscovery.expandHostList("V", "a,b-[09-10]", 100));
        assertEquals(List.of("n0098", "n0099"), EnvDiscovery.expandHostList("V", "n[0098-0099]", 100));
        assertEquals(List.of("big0"), EnvDiscovery.expandHostList("V", "big[0-999999999]", 1));
        assertThrows(IllegalArgumentException.class, () -> EnvDiscovery.expandHostList("V", "a[2-1]", 10));
        assertThrows(IllegalArgumentException.class, () -> EnvDiscovery.expandHostList("V", "a[x]", 10));
        assertThrows(IllegalArgumentException.class, () -> EnvDiscovery.expandHostList("V", "a]", 10));
        assertEquals(List.of(4, 4, 2), EnvDiscovery.parseTasksPerNode("V", "4(x2),2"));
    }

    @Test
    void openMpi() {
        Options o = d("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "1",
                "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "JCCL_STORE", "head:29500", "OMPI_MCA_ess_base_jobid", "123456");
        assertWorld(o, 3, 4, 1, 2, "head", 29500, "ompi-123456");
        Options m = d("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_RANK", "0",
                "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "7", "PMIX_NAMESPACE", "prterun-h-1@1");
        assertEquals("h", m.storeHost());
        assertEquals(7, m.storePort());
        assertEquals("ompi-prterun-h-1-1", m.jobId());
        // no store address: port 0 (the mpi backend needs none; Jccl.init asks the others for one)
        Options noStore = d("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2");
        assertEquals(0, noStore.storePort());
        assertEquals(1, noStore.rank());
        assertEquals(2, noStore.size());
        // an explicit port 0 is still an error
        fails(env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "JCCL_STORE", "h:0"), "JCCL_STORE", "port 0");
        fails(env("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "2", "JCCL_STORE", "h:1"),
                "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2");
        fails(env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "JCCL_STORE", "h:1",
                "OMPI_COMM_WORLD_LOCAL_RANK", "0"), "OMPI_COMM_WORLD_LOCAL_SIZE");
        // a single rank needs no store address
        assertEquals(0, d("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1").storePort());
    }

    @Test
    void longLauncherJobIdsAreShortenedUniquely() {
        String a = EnvDiscovery.sanitizeJobId("x".repeat(100) + "a");
        String b = EnvDiscovery.sanitizeJobId("x".repeat(100) + "b");
        assertEquals(64, a.length());
        assertNotEquals(a, b);
        assertTrue(a.matches("[A-Za-z0-9._-]{1,64}"));
    }
}
