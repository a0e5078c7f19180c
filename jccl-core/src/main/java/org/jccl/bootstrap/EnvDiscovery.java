package org.jccl.bootstrap;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jccl.Options;

/**
 * Reads rank, size, local rank/size, store address, job id, token, timeout and backend from the
 * environment. The first launcher whose variables are present wins:
 *
 * <ol>
 *   <li><b>jccl</b> (any of JCCL_RANK, JCCL_WORLD_SIZE, JCCL_LOCAL_RANK, JCCL_LOCAL_WORLD_SIZE):
 *       JCCL_RANK and JCCL_WORLD_SIZE; JCCL_LOCAL_RANK and JCCL_LOCAL_WORLD_SIZE (both or
 *       neither: neither means every rank is on this host); store at JCCL_STORE (host:port), else
 *       MASTER_ADDR:MASTER_PORT.</li>
 *   <li><b>torchrun</b> (RANK or WORLD_SIZE): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE;
 *       store at MASTER_ADDR:MASTER_PORT, or MASTER_ADDR:(MASTER_PORT + 1) when
 *       TORCHELASTIC_USE_AGENT_STORE=True (torchrun's own TCPStore listens on MASTER_PORT then; with
 *       JCCL_STORE_PROTOCOL=torch the ranks use that store, at MASTER_PORT);
 *       job id from TORCHELASTIC_RUN_ID.</li>
 *   <li><b>Slurm</b> (SLURM_PROCID): SLURM_PROCID; size from SLURM_STEP_NUM_TASKS, else
 *       SLURM_NTASKS, else SLURM_NPROCS; SLURM_LOCALID; local size from the entry of this node
 *       (SLURM_NODEID) in SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE, else
 *       SLURM_NTASKS_PER_NODE (compressed lists such as {@code 4(x2),2} are understood), else the
 *       size when the step has one node; store host from MASTER_ADDR, else the first host of
 *       SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST, SLURM_NODELIST; compressed host lists such
 *       as {@code gpu[01-04,07],cpu3} are expanded); store port from MASTER_PORT, else
 *       {@link #slurmPort(String, String) derived} from SLURM_JOB_ID and SLURM_STEP_ID in
 *       [{@value #SLURM_PORT_BASE}, {@value #SLURM_PORT_BASE} + {@value #SLURM_PORT_RANGE}); job id
 *       {@code slurm-<SLURM_JOB_ID>.<SLURM_STEP_ID>}.</li>
 *   <li><b>Open MPI</b> (OMPI_COMM_WORLD_RANK or OMPI_COMM_WORLD_SIZE): OMPI_COMM_WORLD_RANK,
 *       OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE; store at
 *       MASTER_ADDR:MASTER_PORT (Open MPI has no store: give one with {@code mpirun -x}); without
 *       either, storePort 0: the mpi backend needs no store, and {@code Jccl.init} tells the others
 *       what to set; job id from OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE.</li>
 *   <li>none: a single-rank job (rank 0 of 1) that hosts its own store on 127.0.0.1, ephemeral port.</li>
 * </ol>
 * On top of any launcher: JCCL_STORE (host:port, or [v6addr]:port) replaces the store address;
 * JCCL_JOB_ID, JCCL_TOKEN, JCCL_TIMEOUT (seconds such as {@code 90}, or a number with a unit:
 * {@code 500ms}, {@code 90s}, {@code 5m}, {@code 1h}, {@code 2d}, or ISO-8601 such as {@code PT90S})
 * JCCL_HEARTBEAT (the same duration syntax, or {@code 0}/{@code off}) and JCCL_BACKEND apply. Empty variables count as unset, except JCCL_TOKEN, which must not be
 * empty when set. Missing or contradictory values throw {@link IllegalArgumentException} naming
 * the variable and what to set.
 */
public final class EnvDiscovery {
    /** First port of the range Slurm jobs derive their store port from. */
    public static final int SLURM_PORT_BASE = 20000;
    /** Size of that range. */
    public static final int SLURM_PORT_RANGE = 10000;
    /** Largest host list {@link #expandHostList} expands. */
    static final int MAX_HOSTS = 1 << 20;

    private static final String LOOPBACK = "127.0.0.1";

    private EnvDiscovery() {
    }

    /** Options from the process environment. */
    public static Options discover() {
        return discover(org.jccl.internal.Settings.environment());
    }

    /**
     * Options from the given environment map.
     *
     * @throws IllegalArgumentException when a variable is missing, malformed or contradicts another;
     *                                  the message names it and says what to set
     */
    public static Options discover(Map<String, String> env) {
        if (env == null) {
            throw new IllegalArgumentException("env is null: pass System.getenv() or a map of variables");
        }
        Env e = new Env(env);
        Found f;
        if (e.any("JCCL_RANK", "JCCL_WORLD_SIZE", "JCCL_LOCAL_RANK", "JCCL_LOCAL_WORLD_SIZE")) {
            f = jccl(e);
        } else if (e.any("RANK", "WORLD_SIZE")) {
            f = torchrun(e);
        } else if (e.any("SLURM_PROCID")) {
            f = slurm(e);
        } else if (e.any("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")) {
            f = openMpi(e);
        } else {
            f = new Found("no launcher", 0, 1, 0, 1, LOOPBACK, 0, "jccl");
            f.storeVar = "JCCL_STORE";
        }
        // Overlays.
        String store = e.get("JCCL_STORE");
        if (store != null) {
            HostPort hp = parseHostPort("JCCL_STORE", store);
            f.host = hp.host;
            f.port = hp.port;
            f.storeVar = "JCCL_STORE";
        }
        if (f.port == 0 && f.size > 1 && !f.noStoreGiven) {
            throw new IllegalArgumentException(f.storeVar + " gives port 0 but the job has " + f.size
                    + " ranks: the other ranks cannot find an ephemeral port; give a fixed port, e.g. "
                    + f.storeVar + (f.storeVar.equals("JCCL_STORE") ? "=" + f.host + ":29500" : "=29500"));
        }
        String jobId = f.jobId;
        String jobVar = e.get("JCCL_JOB_ID");
        if (jobVar != null) {
            if (!jobVar.matches("[A-Za-z0-9._-]{1,64}")) {
                throw new IllegalArgumentException("JCCL_JOB_ID='" + jobVar + "' must be 1..64 characters of "
                        + "[A-Za-z0-9._-] (it names files and store keys)");
            }
            jobId = jobVar;
        }
        String token = null;
        if (env.containsKey("JCCL_TOKEN")) {
            token = env.get("JCCL_TOKEN");
            if (token == null || token.isEmpty()) {
                throw new IllegalArgumentException("JCCL_TOKEN is set but empty: unset it to run without a job token, "
                        + "or give every rank the same secret");
            }
        }
        Duration timeout = Options.DEFAULT_TIMEOUT;
        String t = e.get("JCCL_TIMEOUT");
        if (t != null) {
            timeout = parseDuration("JCCL_TIMEOUT", t);
        }
        Duration heartbeat = Options.DEFAULT_HEARTBEAT;
        String hb = e.get("JCCL_HEARTBEAT");
        if (hb != null) {
            heartbeat = parseHeartbeat(hb);
        }
        String backend = e.get("JCCL_BACKEND");
        if (backend != null) {
            backend = backend.toLowerCase(Locale.ROOT);
        }
        try {
            return new Options(f.rank, f.size, f.localRank, f.localSize, f.host, f.port, jobId, token, timeout, backend,
                    null, null, heartbeat);
        } catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException("environment (" + f.launcher + "): " + ex.getMessage(), ex);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Launchers

    /** What a launcher gave. */
    private static final class Found {
        final String launcher;
        final int rank, size, localRank, localSize;
        String host;
        int port;
        String jobId;
        /** The variable to blame for the store address. */
        String storeVar = "MASTER_PORT";
        /** True when the launcher gave no store address and none is needed to describe the job (Open MPI). */
        boolean noStoreGiven;

        Found(String launcher, int rank, int size, int localRank, int localSize, String host, int port, String jobId) {
            this.launcher = launcher;
            this.rank = rank;
            this.size = size;
            this.localRank = localRank;
            this.localSize = localSize;
            this.host = host;
            this.port = port;
            this.jobId = jobId;
        }
    }

    /**
     * The job a launcher's variables describe: the world size ({@code sizeVar}, what it is {@code
     * sizeWhat}) and rank, the local rank and size (both or neither: then every rank is on this
     * host), checked against each other; the store is the caller's to set.
     */
    private static Found launched(Env e, String launcher, String jobId, String sizeVar, String sizeWhat, String rankVar,
                                  String localRankVar, String localSizeVar) {
        int size = e.requireInt(sizeVar, 1, sizeWhat);
        int rank = e.requireInt(rankVar, 0, "this process's rank, 0.." + sizeVar + "-1");
        checkRank(rankVar, rank, sizeVar, size);
        int[] local = local(e, localRankVar, localSizeVar, rank, size, sizeVar);
        return new Found(launcher, rank, size, local[0], local[1], LOOPBACK, 0, jobId);
    }

    private static Found jccl(Env e) {
        Found f = launched(e, "JCCL_* variables", "jccl", "JCCL_WORLD_SIZE", "the number of ranks of the job", "JCCL_RANK",
                "JCCL_LOCAL_RANK", "JCCL_LOCAL_WORLD_SIZE");
        f.storeVar = "JCCL_STORE";
        if (e.get("JCCL_STORE") == null) {
            if (e.get("MASTER_ADDR") != null || e.get("MASTER_PORT") != null) {
                masterStore(e, f, false, "JCCL_STORE");
            } else if (f.size > 1) {
                throw new IllegalArgumentException("JCCL_STORE is not set but JCCL_WORLD_SIZE is " + f.size
                        + ": set JCCL_STORE=host:port to the address rank 0 serves the store on (the same on every rank), "
                        + "e.g. JCCL_STORE=127.0.0.1:29500 for a job on one host");
            }
        }
        return f;
    }

    /**
     * A JCCL_STORE_PROTOCOL value (null or blank: unset) as {@code jccl} (the default: jccl's own
     * store), {@code torch}, {@code torch1} or {@code torch2} (PyTorch's TCPStore protocol, either
     * generation or the one named); anything else fails, naming the choices.
     */
    public static String storeProtocol(String v) {
        if (v == null || v.isBlank()) {
            return "jccl";
        }
        String p = v.strip().toLowerCase(java.util.Locale.ROOT);
        return switch (p) {
            case "jccl", "torch", "torch1", "torch2" -> p;
            default -> throw new IllegalArgumentException("JCCL_STORE_PROTOCOL=" + v + " is not a store protocol: use jccl "
                    + "(the default), torch (PyTorch's TCPStore, to share a store with torch processes; torch1 or torch2 "
                    + "name the generation of torch's server)");
        };
    }

    private static Found torchrun(Env e) {
        String runId = e.get("TORCHELASTIC_RUN_ID");
        String jobId = runId != null && !runId.equalsIgnoreCase("none") ? sanitizeJobId("torch-" + runId) : "jccl";
        Found f = launched(e, "torchrun variables", jobId, "WORLD_SIZE", "the number of ranks of the job", "RANK",
                "LOCAL_RANK", "LOCAL_WORLD_SIZE");
        if (e.get("JCCL_STORE") == null) {
            // torchrun's agent serves its own TCPStore on MASTER_PORT: jccl's store goes on MASTER_PORT + 1,
            // unless the ranks speak torch's protocol (JCCL_STORE_PROTOCOL=torch*) and share the agent's
            boolean torchProtocol = !storeProtocol(e.get("JCCL_STORE_PROTOCOL")).equals("jccl");
            boolean agentStore = "true".equalsIgnoreCase(e.get("TORCHELASTIC_USE_AGENT_STORE")) && !torchProtocol;
            if (e.get("MASTER_ADDR") != null || e.get("MASTER_PORT") != null || f.size > 1) {
                masterStore(e, f, agentStore, "JCCL_STORE");
            }
            if (runId == null || runId.equalsIgnoreCase("none")) {
                // Two jobs on one host must not share names: the store port tells them apart.
                f.jobId = "torch-p" + f.port;
            }
        }
        return f;
    }

    private static Found slurm(Env e) {
        String sizeVar = e.first("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS");
        if (sizeVar == null) {
            throw new IllegalArgumentException("SLURM_PROCID is set but SLURM_NTASKS is not: run the job step with srun "
                    + "(srun -n N ...), or set SLURM_NTASKS (or JCCL_RANK/JCCL_WORLD_SIZE) yourself");
        }
        int size = e.requireInt(sizeVar, 1, "the number of tasks of the step");
        int rank = e.requireInt("SLURM_PROCID", 0, "this task's rank, 0.." + sizeVar + "-1");
        checkRank("SLURM_PROCID", rank, sizeVar, size);
        int localRank, localSize;
        String perNodeVar = e.first("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE");
        String localIdVar = e.get("SLURM_LOCALID") != null ? "SLURM_LOCALID" : null;
        if (perNodeVar != null) {
            int node = e.get("SLURM_NODEID") != null ? e.requireInt("SLURM_NODEID", 0, "this node's index in the step") : 0;
            List<Integer> perNode = parseTasksPerNode(perNodeVar, e.get(perNodeVar));
            if (node >= perNode.size()) {
                if (perNode.size() == 1) {
                    localSize = perNode.get(0); // the SLURM_NTASKS_PER_NODE form: one number for every node
                } else {
                    throw new IllegalArgumentException("SLURM_NODEID=" + node + " but " + perNodeVar + "='" + e.get(perNodeVar)
                            + "' lists only " + perNode.size() + " nodes: the variables come from different steps; "
                            + "run the step with srun");
                }
            } else {
                localSize = perNode.get(node);
            }
            if (localIdVar == null) {
                throw new IllegalArgumentException(perNodeVar + " is set but SLURM_LOCALID is not: run the step with srun, "
                        + "or set JCCL_LOCAL_RANK/JCCL_LOCAL_WORLD_SIZE with JCCL_RANK/JCCL_WORLD_SIZE");
            }
            localRank = e.requireInt("SLURM_LOCALID", 0, "this task's rank on its node");
        } else {
            String nodesVar = e.first("SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES");
            int nodes = nodesVar != null ? e.requireInt(nodesVar, 1, "the number of nodes") : 1;
            if (nodes != 1) {
                throw new IllegalArgumentException("Slurm gives no tasks per node for a step on " + nodes + " nodes: "
                        + "SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE / SLURM_NTASKS_PER_NODE) is missing; "
                        + "run the step with srun, or pass --ntasks-per-node");
            }
            localSize = size;
            localRank = localIdVar != null ? e.requireInt("SLURM_LOCALID", 0, "this task's rank on its node") : rank;
        }
        checkLocal("SLURM_LOCALID", localRank, perNodeVar != null ? perNodeVar : sizeVar, localSize, sizeVar, size);

        String jobIdVar = e.get("SLURM_JOB_ID") != null ? "SLURM_JOB_ID" : e.get("SLURM_JOBID") != null ? "SLURM_JOBID" : null;
        String slurmJob = jobIdVar != null ? e.get(jobIdVar) : null;
        String step = e.first("SLURM_STEP_ID", "SLURM_STEPID");
        String stepId = step != null ? e.get(step) : null;
        String jobId = slurmJob != null ? sanitizeJobId("slurm-" + slurmJob + (stepId != null ? "." + stepId : "")) : "jccl";
        Found f = new Found("Slurm variables", rank, size, localRank, localSize, LOOPBACK, 0, jobId);
        if (e.get("JCCL_STORE") == null) {
            String host = e.get("MASTER_ADDR");
            if (host == null) {
                String listVar = e.first("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST");
                if (listVar == null) {
                    if (size > 1) {
                        throw new IllegalArgumentException("SLURM_STEP_NODELIST is not set, so the store host is unknown: "
                                + "run the step with srun, or set JCCL_STORE=host:port (or MASTER_ADDR) to rank 0's host");
                    }
                    host = LOOPBACK;
                } else {
                    host = firstHost(listVar, e.get(listVar));
                }
            }
            f.host = host;
            String mp = e.get("MASTER_PORT");
            if (mp != null) {
                f.port = parsePort("MASTER_PORT", mp);
            } else if (slurmJob != null) {
                f.port = slurmPort(slurmJob, stepId);
            } else if (size > 1) {
                throw new IllegalArgumentException("SLURM_JOB_ID is not set, so no store port can be derived: "
                        + "set JCCL_STORE=host:port (or MASTER_PORT)");
            }
            f.storeVar = mp != null ? "MASTER_PORT" : "JCCL_STORE";
        }
        return f;
    }

    private static Found openMpi(Env e) {
        String ompiJob = e.get("OMPI_MCA_ess_base_jobid");
        if (ompiJob == null) {
            ompiJob = e.get("PMIX_NAMESPACE");
        }
        String jobId = ompiJob != null ? sanitizeJobId("ompi-" + ompiJob) : "jccl";
        Found f = launched(e, "Open MPI variables", jobId, "OMPI_COMM_WORLD_SIZE", "the number of ranks (mpirun -n)",
                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
        f.storeVar = "JCCL_STORE";
        if (e.get("JCCL_STORE") == null) {
            if (e.get("MASTER_ADDR") != null || e.get("MASTER_PORT") != null) {
                masterStore(e, f, false, "JCCL_STORE");
            } else {
                // No store address: fine for the mpi backend (mpirun connects the ranks); Jccl.init
                // tells a backend that needs a store what to set.
                f.noStoreGiven = true;
            }
        }
        return f;
    }

    /** Store at MASTER_ADDR:MASTER_PORT (+1 for torchrun's agent store). Both must be set. */
    private static void masterStore(Env e, Found f, boolean plusOne, String alternative) {
        String addr = e.get("MASTER_ADDR");
        String port = e.get("MASTER_PORT");
        if (addr == null) {
            throw new IllegalArgumentException("MASTER_ADDR is not set" + (port != null ? " (MASTER_PORT is)" : "")
                    + ": set MASTER_ADDR to rank 0's host, or " + alternative + "=host:port");
        }
        if (port == null) {
            throw new IllegalArgumentException("MASTER_PORT is not set (MASTER_ADDR is): set MASTER_PORT to a free port "
                    + "on rank 0's host, or " + alternative + "=host:port");
        }
        int p = parsePort("MASTER_PORT", port);
        if (plusOne) {
            if (p >= 65535) {
                throw new IllegalArgumentException("MASTER_PORT=" + p + ": under torchrun jccl serves its store on "
                        + "MASTER_PORT+1, which does not exist; use a lower MASTER_PORT or set JCCL_STORE=host:port");
            }
            p++;
        }
        f.host = stripBrackets(addr);
        f.port = p;
        f.storeVar = "MASTER_PORT";
    }

    private static void checkRank(String rankVar, int rank, String sizeVar, int size) {
        if (rank >= size) {
            throw new IllegalArgumentException(rankVar + "=" + rank + " but " + sizeVar + "=" + size + ": " + rankVar
                    + " must be in [0, " + sizeVar + "); check that both come from the same launch");
        }
    }

    private static int[] local(Env e, String rankVar, String sizeVar, int rank, int size, String worldVar) {
        boolean hasRank = e.get(rankVar) != null;
        boolean hasSize = e.get(sizeVar) != null;
        if (!hasRank && !hasSize) {
            return new int[] {rank, size};
        }
        if (!hasSize) {
            throw new IllegalArgumentException(rankVar + " is set but " + sizeVar + " is not: set " + sizeVar
                    + " to the number of ranks on this host (or unset both when every rank is on this host)");
        }
        if (!hasRank) {
            throw new IllegalArgumentException(sizeVar + " is set but " + rankVar + " is not: set " + rankVar
                    + " to this process's rank on this host, 0.." + sizeVar + "-1");
        }
        int ls = e.requireInt(sizeVar, 1, "the number of ranks on this host");
        int lr = e.requireInt(rankVar, 0, "this process's rank on this host");
        checkLocal(rankVar, lr, sizeVar, ls, worldVar, size);
        return new int[] {lr, ls};
    }

    private static void checkLocal(String rankVar, int lr, String sizeVar, int ls, String worldVar, int size) {
        if (lr >= ls) {
            throw new IllegalArgumentException(rankVar + "=" + lr + " but " + sizeVar + " gives " + ls + " ranks on this host: "
                    + rankVar + " must be in [0, " + ls + ")");
        }
        if (ls > size) {
            throw new IllegalArgumentException(sizeVar + " gives " + ls + " ranks on this host but " + worldVar + "=" + size
                    + ": a host cannot have more ranks than the job");
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Parsing

    /** Reads variables; empty or blank values count as unset. */
    private static final class Env {
        private final Map<String, String> env;

        Env(Map<String, String> env) {
            this.env = env;
        }

        String get(String name) {
            String v = env.get(name);
            return v == null || v.isBlank() ? null : v.trim();
        }

        boolean any(String... names) {
            for (String n : names) {
                if (get(n) != null) {
                    return true;
                }
            }
            return false;
        }

        /** The first of the names that is set, or null. */
        String first(String... names) {
            for (String n : names) {
                if (get(n) != null) {
                    return n;
                }
            }
            return null;
        }

        int requireInt(String name, int min, String meaning) {
            String v = get(name);
            if (v == null) {
                throw new IllegalArgumentException(name + " is not set: set it to " + meaning);
            }
            int n;
            try {
                n = Integer.parseInt(v);
            } catch (NumberFormatException ex) {
                throw new IllegalArgumentException(name + "='" + v + "' is not an integer: set it to " + meaning);
            }
            if (n < min) {
                throw new IllegalArgumentException(name + "=" + n + " is below " + min + ": set it to " + meaning);
            }
            return n;
        }
    }

    private record HostPort(String host, int port) {
    }

    private static HostPort parseHostPort(String var, String value) {
        String host;
        String port;
        if (value.startsWith("[")) {
            int close = value.indexOf(']');
            if (close < 0 || close + 1 >= value.length() || value.charAt(close + 1) != ':') {
                throw new IllegalArgumentException(var + "='" + value + "' is not [address]:port: write an IPv6 store "
                        + "address as [::1]:29500");
            }
            host = value.substring(1, close);
            port = value.substring(close + 2);
        } else {
            int colon = value.lastIndexOf(':');
            if (colon < 0) {
                throw new IllegalArgumentException(var + "='" + value + "' has no port: write host:port, e.g. "
                        + value + ":29500");
            }
            host = value.substring(0, colon);
            port = value.substring(colon + 1);
            if (host.indexOf(':') >= 0) {
                throw new IllegalArgumentException(var + "='" + value + "' is ambiguous: write an IPv6 store address "
                        + "in brackets, e.g. [" + host + "]:" + port);
            }
        }
        if (host.isBlank()) {
            throw new IllegalArgumentException(var + "='" + value + "' has no host: write host:port, e.g. 127.0.0.1"
                    + value.substring(value.lastIndexOf(':')));
        }
        return new HostPort(host, parsePort(var, port));
    }

    private static int parsePort(String var, String value) {
        int p;
        try {
            p = Integer.parseInt(value.trim());
        } catch (NumberFormatException ex) {
            throw new IllegalArgumentException(var + " port '" + value + "' is not a number: give a TCP port 1..65535");
        }
        if (p < 0 || p > 65535) {
            throw new IllegalArgumentException(var + " port " + p + " is out of range: give a TCP port 1..65535");
        }
        return p;
    }

    private static String stripBrackets(String host) {
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }

    private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|sec|m|min|h|d)?", Pattern.CASE_INSENSITIVE);

    /**
     * Parses a duration: seconds ({@code 90}), a number with a unit ({@code 500ms}, {@code 90s},
     * {@code 1.5m}, {@code 5min}, {@code 1h}, {@code 2d}), or ISO-8601 ({@code PT90S}).
     */
    static Duration parseDuration(String var, String value) {
        String v = value.trim();
        Duration d = null;
        Matcher m = DURATION.matcher(v);
        if (m.matches()) {
            double n = Double.parseDouble(m.group(1));
            String unit = m.group(2) == null ? "s" : m.group(2).toLowerCase(Locale.ROOT);
            double ms = switch (unit) {
                case "ms" -> n;
                case "s", "sec" -> n * 1e3;
                case "m", "min" -> n * 60e3;
                case "h" -> n * 3600e3;
                case "d" -> n * 86400e3;
                default -> throw new IllegalStateException(unit);
            };
            if (ms < 9.2e15) {
                d = Duration.ofMillis(Math.round(ms));
            }
        } else if (v.regionMatches(true, 0, "P", 0, 1)) {
            try {
                d = Duration.parse(v);
            } catch (DateTimeParseException ignored) {
                d = null;
            }
        }
        if (d == null) {
            throw new IllegalArgumentException(var + "='" + value + "' is not a duration: give seconds (90) or a number "
                    + "with a unit (500ms, 90s, 5m, 1h)");
        }
        if (d.isZero() || d.isNegative()) {
            throw new IllegalArgumentException(var + "='" + value + "' is not positive: give a deadline such as 90s or 5m");
        }
        return d;
    }

    /**
     * Parses JCCL_HEARTBEAT: {@code 0}, {@code off}, {@code none}, {@code false} or {@code no} turn
     * heartbeats off ({@link Duration#ZERO}); anything else is a duration as for JCCL_TIMEOUT, at
     * least {@link Options#MIN_HEARTBEAT}.
     */
    static Duration parseHeartbeat(String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (v.equals("off") || v.equals("none") || v.equals("false") || v.equals("no")
                || v.matches("0+(\\.0+)?\\s*(ms|s|sec|m|min|h|d)?")) {
            return Duration.ZERO;
        }
        Duration d = parseDuration("JCCL_HEARTBEAT", value);
        if (d.compareTo(Options.MIN_HEARTBEAT) < 0) {
            throw new IllegalArgumentException("JCCL_HEARTBEAT='" + value + "' is shorter than "
                    + Options.MIN_HEARTBEAT.toMillis() + " ms: give an interval such as 1s or 200ms, or off");
        }
        return d;
    }

    /** Makes a launcher's job id fit Options' rules ({@code [A-Za-z0-9._-]{1,64}}). */
    static String sanitizeJobId(String raw) {
        String s = raw.replaceAll("[^A-Za-z0-9._-]", "-");
        if (s.length() > 64) {
            // keep it unique: a short hash of the whole, then the start
            String h = Integer.toHexString(fnv1a(raw));
            s = s.substring(0, 63 - h.length()) + "-" + h;
        }
        return s;
    }

    /**
     * The store port of a Slurm step without MASTER_PORT or JCCL_STORE: {@value #SLURM_PORT_BASE}
     * + (FNV-1a 32-bit hash of the UTF-8 of {@code "<jobId>.<stepId>"}, or of {@code jobId} when
     * there is no step id) mod {@value #SLURM_PORT_RANGE}. Every task of the step computes the same
     * port; concurrent steps of a job and jobs sharing a node most likely get different ones.
     */
    public static int slurmPort(String jobId, String stepId) {
        String s = stepId != null ? jobId + "." + stepId : jobId;
        return SLURM_PORT_BASE + Integer.remainderUnsigned(fnv1a(s), SLURM_PORT_RANGE);
    }

    private static int fnv1a(String s) {
        int h = 0x811C9DC5;
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xFF;
            h *= 0x01000193;
        }
        return h;
    }

    /**
     * Parses Slurm's tasks-per-node form: comma-separated counts, each optionally repeated as
     * {@code count(xN)}: {@code "4(x2),2"} is [4, 4, 2].
     */
    static List<Integer> parseTasksPerNode(String var, String value) {
        List<Integer> out = new ArrayList<>();
        for (String part : value.split(",")) {
            String p = part.trim();
            Matcher m = Pattern.compile("(\\d+)(?:\\(x(\\d+)\\))?").matcher(p);
            if (!m.matches()) {
                throw new IllegalArgumentException(var + "='" + value + "' is not a tasks-per-node list like 4 or 4(x2),2: "
                        + "run the step with srun, or set JCCL_LOCAL_RANK/JCCL_LOCAL_WORLD_SIZE");
            }
            int count;
            int times;
            try {
                count = Integer.parseInt(m.group(1));
                times = m.group(2) != null ? Integer.parseInt(m.group(2)) : 1;
            } catch (NumberFormatException ex) {
                throw new IllegalArgumentException(var + "='" + value + "' has a number too large");
            }
            if (count < 1 || times < 1 || out.size() + (long) times > MAX_HOSTS) {
                throw new IllegalArgumentException(var + "='" + value + "' has a count below 1 or too many nodes");
            }
            for (int i = 0; i < times; i++) {
                out.add(count);
            }
        }
        return out;
    }

    /** The first host of a Slurm host list. */
    static String firstHost(String var, String list) {
        List<String> hosts = expandHostList(var, list, 1);
        if (hosts.isEmpty()) {
            throw new IllegalArgumentException(var + "='" + list + "' names no host: set JCCL_STORE=host:port");
        }
        return hosts.get(0);
    }

    /**
     * Expands a Slurm host list: {@code "gpu[01-04,07],cpu3"} is gpu01, gpu02, gpu03, gpu04, gpu07,
     * cpu3. Several bracket groups multiply ({@code "r[1-2]n[1-2]"} is r1n1, r1n2, r2n1, r2n2);
     * zero padding follows the width of the lower bound. Stops after {@code limit} hosts.
     */
    public static List<String> expandHostList(String var, String list, int limit) {
        List<String> out = new ArrayList<>();
        for (String item : splitTopLevel(var, list)) {
            expandItem(var, list, item, 0, "", out, limit);
            if (out.size() >= limit) {
                break;
            }
        }
        return out;
    }

    private static List<String> splitTopLevel(String var, String list) {
        List<String> items = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < list.length(); i++) {
            char c = list.charAt(i);
            if (c == '[') {
                if (depth++ > 0) {
                    throw badHostList(var, list);
                }
            } else if (c == ']') {
                if (--depth < 0) {
                    throw badHostList(var, list);
                }
            } else if (c == ',' && depth == 0) {
                items.add(list.substring(start, i).trim());
                start = i + 1;
            }
        }
        if (depth != 0) {
            throw badHostList(var, list);
        }
        items.add(list.substring(start).trim());
        items.removeIf(String::isEmpty);
        return items;
    }

    private static void expandItem(String var, String list, String item, int from, String prefix, List<String> out, int limit) {
        int open = item.indexOf('[', from);
        if (open < 0) {
            out.add(prefix + item.substring(from));
            return;
        }
        int close = item.indexOf(']', open);
        String head = prefix + item.substring(from, open);
        for (String range : item.substring(open + 1, close).split(",")) {
            String r = range.trim();
            int dash = r.indexOf('-');
            String lo = dash < 0 ? r : r.substring(0, dash);
            String hi = dash < 0 ? r : r.substring(dash + 1);
            if (!lo.matches("\\d{1,9}") || !hi.matches("\\d{1,9}")) {
                throw badHostList(var, list);
            }
            int a = Integer.parseInt(lo);
            int b = Integer.parseInt(hi);
            if (b < a) {
                throw badHostList(var, list);
            }
            int width = lo.length();
            for (int n = a; n <= b; n++) {
                String num = Integer.toString(n);
                if (num.length() < width) {
                    num = "0".repeat(width - num.length()) + num;
                }
                expandItem(var, list, item, close + 1, head + num, out, limit);
                if (out.size() >= limit) {
                    return;
                }
            }
        }
    }

    private static IllegalArgumentException badHostList(String var, String list) {
        return new IllegalArgumentException(var + "='" + list + "' is not a Slurm host list like gpu[01-04,07],cpu3: "
                + "set JCCL_STORE=host:port (or MASTER_ADDR) to rank 0's host");
    }
}
