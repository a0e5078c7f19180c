package org.jccl.cli;

import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.ReduceOp;

/** A rank of {@link LoggingTest}: an all-reduce whose count differs between the ranks (8 on rank 0, 9 elsewhere). */
public final class MismatchRankMain {
    private MismatchRankMain() {
    }

    public static void main(String[] args) {
        try (Communicator comm = Jccl.init()) {
            comm.allReduce(HostBuffer.of(new float[comm.rank() == 0 ? 8 : 9]), ReduceOp.SUM);
        }
    }
}
