import java.util.Arrays;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.ReduceOp;

public class Hello {
    public static void main(String[] args) {
        try (Communicator comm = Jccl.init()) {  // rank, size, store: from ./jccl run, torchrun, Slurm or mpirun
            float[] x = new float[1024];
            Arrays.fill(x, comm.rank() + 1);
            comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);  // in place: 1 + 2 + ... + size everywhere

            long[] pid = {ProcessHandle.current().pid()};
            long[] pids = new long[comm.size()];
            comm.allGather(HostBuffer.of(pid), HostBuffer.of(pids));  // every rank's pid, in rank order

            System.out.println("rank " + comm.rank() + " of " + comm.size() + ": sum " + x[0]
                    + ", pids " + Arrays.toString(pids));
        }
    }
}
