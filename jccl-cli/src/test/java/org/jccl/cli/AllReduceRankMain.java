package org.jccl.cli;

import java.lang.management.ManagementFactory;
import java.util.Collections;
import java.util.List;
import org.jccl.Communicator;
import org.jccl.HostBuffer;
import org.jccl.Jccl;
import org.jccl.ReduceOp;

/**
 * A rank of {@link RunJavaTest}: one all-reduce (SUM of rank + 1), then a line with the result,
 * the JDK's feature version and how often each of jccl's JVM flags reached this JVM.
 */
public final class AllReduceRankMain {
    private AllReduceRankMain() {
    }

    public static void main(String[] args) throws Exception {
        try (Communicator comm = Jccl.init()) {
            float[] x = {comm.rank() + 1, 10 * (comm.rank() + 1)};
            comm.allReduce(HostBuffer.of(x), ReduceOp.SUM);
            int n = comm.size();
            float want = n * (n + 1) / 2f;
            if (x[0] != want || x[1] != 10 * want) {
                System.err.println("wrong sum: " + x[0] + ", " + x[1] + " (want " + want + ")");
                System.exit(3);
            }
            List<String> jvm = ManagementFactory.getRuntimeMXBean().getInputArguments();
            long nativeAccess = jvm.stream().filter(a -> a.startsWith("--enable-native-access")).count();
            // The JVM lists --add-modules X as --add-modules=X.
            long vector = jvm.stream().filter(a -> a.startsWith("--add-modules") && a.contains("jdk.incubator.vector")).count();
            System.out.println("rank " + comm.rank() + " ok sum=" + x[0] + " java=" + Runtime.version().feature()
                    + " nativeAccess=" + nativeAccess + " vector=" + vector
                    + " vectorModule=" + ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
                    + " args=" + String.join(",", args.length == 0 ? Collections.<String>emptyList() : List.of(args)));
        }
    }
}
