package org.jccl.kit;

import org.jccl.Communicator;
import org.jccl.Jccl;

/**
 * One rank of a process world: forms the communicator from the environment ({@code Jccl.init()}:
 * JCCL_*, torchrun, Slurm or Open MPI variables), runs the kit on host memory and prints one
 * {@code KIT-FAIL} line per failure, one {@code KIT-RAN} line per case and {@code KIT-DONE
 * failures=N} at the end; {@code KIT-CASE name} as each case starts (so a hang shows where). Arguments: the traits' name, then {@code full} or {@code quick}, then optionally {@code registered}
 * (buffers from {@code comm.allocate}); the
 * seed and selection come from {@code JCCL_KIT_SEED} / {@code JCCL_KIT_CASES}.
 */
public final class KitMain {
    private KitMain() {
    }

    /** Runs one rank. */
    public static void main(String[] args) {
        String name = args.length > 0 ? args[0] : "host";
        boolean full = args.length > 1 && args[1].equals("full");
        long seed = Kit.seed();
        try (Communicator comm = Jccl.init()) {
            Traits traits = traitsOf(comm, name);
            // "registered": buffers from comm.allocate (registered memory on shared memory)
            Mem registered = args.length > 2 && args[2].equals("registered") ? Mem.registered(comm, rank -> true) : null;
            Kit.Report r = Kit.run(comm, registered != null ? () -> registered : Mem::host, traits, seed, full,
                    announced(Kit.selection()));
            print(r, seed);
        }
        System.out.flush();
        System.exit(0);
    }

    /** Prints {@code r}: a KIT-FAIL line per failure (its newlines as '|'), a KIT-RAN line per case, then KIT-DONE. */
    public static void print(Kit.Report r, long seed) {
        for (String f : r.failures()) {
            System.out.println("KIT-FAIL " + f.replace('\n', '|'));
        }
        for (String c : r.ran()) {
            System.out.println("KIT-RAN " + c);
        }
        System.out.println("KIT-DONE failures=" + r.failures().size() + " seed=" + seed);
    }

    /** The failures the KIT-FAIL lines of {@code output} report (their newlines back), in order. */
    public static java.util.List<String> failures(String output) {
        java.util.List<String> failures = new java.util.ArrayList<>();
        for (String line : output.split("\n")) {
            if (line.startsWith("KIT-FAIL ")) {
                failures.add(line.substring(9).replace('|', '\n'));
            }
        }
        return failures;
    }

    /** How many ranks' KIT-DONE lines {@code output} holds. */
    public static int done(String output) {
        int done = 0;
        for (String line : output.split("\n")) {
            if (line.startsWith("KIT-DONE")) {
                done++;
            }
        }
        return done;
    }

    /**
     * {@code select}, printing {@code KIT-CASE name} for each selected case (the kit asks just
     * before it runs the case): a killed rank's output shows which case it hung in.
     */
    public static java.util.function.Predicate<String> announced(java.util.function.Predicate<String> select) {
        return n -> {
            boolean run = select.test(n);
            if (run) {
                System.out.println("KIT-CASE " + n);
                System.out.flush();
            }
            return run;
        };
    }

    /** The traits of the communicator's backend; another module's backend registers its own through the name. */
    static Traits traitsOf(Communicator comm, String name) {
        return switch (comm.backend()) {
            // the name's first word is the transport (shm, tcp, hier): what a mismatch costs to detect
            case "host" -> Traits.host(name.split(" ")[0], "1".equals(System.getenv("JCCL_CHECK"))).named(name);
            case "mpi" -> Traits.mpi().named(name);
            default -> throw new IllegalArgumentException("KitMain runs host-memory backends; " + comm.backend()
                    + " has a main of its own");
        };
    }
}
