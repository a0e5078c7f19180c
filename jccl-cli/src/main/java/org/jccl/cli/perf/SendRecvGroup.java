package org.jccl.cli.perf;

import org.jccl.Communicator;

/**
 * The send and the receive of one send/recv step, issued together: on NCCL inside one group
 * ({@code ncclGroupStart}/{@code ncclGroupEnd}, as nccl-tests does), since NCCL runs ungrouped
 * sends and receives in stream order, and a ring of ranks that each send before they receive
 * waits forever (on 2x H100, from 8 B on). Other backends progress both by themselves: no group.
 */
final class SendRecvGroup {
    private SendRecvGroup() {
    }

    /** Runs {@code calls} (the sends and receives of one step) inside an NCCL group when {@code comm} is NCCL's. */
    static void issue(Communicator comm, Runnable calls) {
        // by name: jccl-cuda's classes are loaded only for an NCCL communicator
        if (comm.getClass().getName().equals("org.jccl.cuda.NcclCommunicator")) {
            try (org.jccl.cuda.NcclGroup g = org.jccl.cuda.NcclGroup.start()) {
                calls.run();
            }
        } else {
            calls.run();
        }
    }
}
