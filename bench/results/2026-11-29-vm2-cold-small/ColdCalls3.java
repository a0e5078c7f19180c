import java.lang.foreign.*;
import java.util.Arrays;
import org.jccl.*;
public class ColdCalls3 {
  public static void main(String[] a) throws Exception {
    int reps = Integer.parseInt(a[0]);
    String mode = a[1]; // barrier | allreduce | none
    try (Communicator comm = Jccl.init(); Arena arena = Arena.ofConfined()) {
      HostBuffer in = HostBuffer.allocate(DataType.FLOAT32, 2, arena);
      HostBuffer out = HostBuffer.allocate(DataType.FLOAT32, 2, arena);
      long[][] t = new long[reps][20];
      for (int r = 0; r < reps; r++) {
        if (mode.equals("barrier")) comm.barrier();
        else if (mode.equals("allreduce")) comm.allReduce(in, out, ReduceOp.SUM);
        for (int i = 0; i < 20; i++) {
          long t0 = System.nanoTime();
          comm.allReduce(in, out, ReduceOp.SUM);
          t[r][i] = System.nanoTime() - t0;
        }
      }
      if (comm.rank() == 0) {
        StringBuilder b = new StringBuilder(mode + " median ns by position: ");
        long tot = 0;
        for (int i = 0; i < 20; i++) {
          long[] col = new long[reps - reps / 4];
          for (int r = reps / 4; r < reps; r++) col[r - reps / 4] = t[r][i];
          Arrays.sort(col);
          b.append(col[col.length / 2]).append(' ');
          tot += col[col.length / 2];
        }
        System.out.println(b + " | mean of medians " + tot / 20);
        for (int r = 0; r < 4; r++) {
          StringBuilder c = new StringBuilder("rep " + r + ": ");
          long sum = 0;
          for (int i = 0; i < 20; i++) { c.append(t[r][i]).append(' '); sum += t[r][i]; }
          System.out.println(c + " | mean " + sum / 20);
        }
      }
    }
  }
}
