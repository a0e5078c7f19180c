package org.jccl.mpi;

import org.jccl.Jccl;
import org.jccl.JcclException;
import org.jccl.Options;

/** Prints what a fresh JVM makes of the MPI library it is pointed at, and what Jccl.init says. */
public final class MpiProbeMain {
    private MpiProbeMain() {
    }

    public static void main(String[] args) {
        System.out.println("available=" + Mpi.isAvailable());
        System.out.println("cause=" + Mpi.unavailabilityCause());
        try {
            Jccl.init(Options.of(0, 1).withBackend("mpi")).close();
            System.out.println("init=ok");
        } catch (JcclException e) {
            System.out.println("init=" + e.getMessage());
        }
    }
}
