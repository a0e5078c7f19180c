package org.jccl.mpi;

import org.jccl.Buffer;
import org.jccl.HostBuffer;

/** The argument checks of the mpi backend, made before any MPI call (the messages name the argument and the fix). */
final class MpiArgs {
    private MpiArgs() {
    }

    static HostBuffer host(Buffer b, String name) {
        return org.jccl.Checks.hostBuffer(b, name, "this communicator runs the mpi backend, which moves host memory: "
                + "pass a HostBuffer");
    }

    /** send and recv of the same type and count ({@code why} in the message); an overlap must be in place. */
    static void sameShape(HostBuffer s, HostBuffer r, String why) {
        org.jccl.Checks.sameType(s, "send", r, "recv");
        org.jccl.Checks.count(r, "recv", s.count(), why);
        org.jccl.Checks.noPartialOverlap(s, "send", r, "recv");
    }

    /** A buffer MPI writes into: MPI writes through the address, so a read-only view is refused here. */
    static HostBuffer writable(HostBuffer b, String name) {
        if (b.segment().isReadOnly()) {
            throw new IllegalArgumentException(name + " is a read-only segment but the collective writes into it: "
                    + "pass a writable buffer");
        }
        return b;
    }

    /** An MPI count: elements per call argument are C ints. */
    static int count(long n, String name) {
        if (n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(name + " has " + n + " elements per rank but MPI counts are 32-bit: "
                    + "the mpi backend moves at most " + Integer.MAX_VALUE + " elements per rank and call; split it");
        }
        return (int) n;
    }
}
