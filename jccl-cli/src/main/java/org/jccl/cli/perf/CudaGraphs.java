package org.jccl.cli.perf;

import org.jccl.Communicator;
import org.jccl.Work;
import org.jccl.cuda.CudaGraph;
import org.jccl.cuda.NcclCommunicator;

/**
 * {@code jccl perf -G}: captures a block of iterations on the NCCL communicator's own stream (the
 * plain Communicator calls run there) into a CUDA graph and launches it, as nccl-tests does.
 */
public final class CudaGraphs implements PerfRunner.Graphs {
    private final NcclCommunicator comm;

    /**
     * Graphs for {@code comm}.
     *
     * @throws IllegalArgumentException when {@code comm} is not an NCCL communicator
     */
    public CudaGraphs(Communicator comm) {
        if (!(comm instanceof NcclCommunicator n)) {
            throw new IllegalArgumentException("-G needs the nccl backend's communicator, not " + comm.backend());
        }
        String why = CudaGraph.unavailabilityCause();
        if (why != null) {
            throw new org.jccl.JcclException("-G cannot run here: " + why);
        }
        this.comm = n;
    }

    @Override
    public PerfRunner.Replay capture(Runnable body) {
        CudaGraph g = CudaGraph.capture(comm.stream(), body);
        return new PerfRunner.Replay() {
            @Override
            public void launch(int times) {
                Work last = null;
                for (int i = 0; i < times; i++) {
                    last = g.launch(comm.stream());
                }
                if (last != null) {
                    last.await(); // launches on one stream run in order: the last one finishing ends them all
                }
            }

            @Override
            public void close() {
                g.close();
            }
        };
    }
}
