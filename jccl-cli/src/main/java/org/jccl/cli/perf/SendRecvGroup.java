package org.jccl.cli.perf;

import org.jccl.Communicator;

/**
 * The send and the receive of one send/recv step, issued together: on NCCL inside one group
 * ({@code ncclGroupStart}/{@code ncclGroupEnd}, as nccl-tests does), since NCCL runs ungrouped
 * sends and receives in stream order, and a ring of ranks that each send before they receive
 * waits forever once a message outgrows NCCL's buffers. Other backends progress both by
 * themselves: nothing to open.
 */
final class SendRecvGroup {
    private SendRecvGroup() {
    }

    /** Opens the group for {@code comm}'s backend (close it once both calls are issued). */
    static AutoCloseable open(Communicator comm) {
        // by name: jccl-cuda's classes are loaded only for an NCCL communicator
        if (comm.getClass().getName().equals("org.jccl.cuda.NcclCommunicator")) {
            return org.jccl.cuda.NcclGroup.start();
        }
        return NONE;
    }

    /** Closes {@code g}, rethrowing what it throws unchecked. */
    static void close(AutoCloseable g) {
        try {
            g.close();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static final AutoCloseable NONE = () -> {
    };
}
