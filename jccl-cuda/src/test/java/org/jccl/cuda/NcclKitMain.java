package org.jccl.cuda;

import java.time.Duration;
import org.jccl.Communicator;
import org.jccl.Jccl;
import org.jccl.Options;
import org.jccl.kit.Kit;
import org.jccl.kit.KitMain;
import org.jccl.kit.Traits;

/**
 * One rank of a process-per-GPU world for the conformance kit, started by {@link
 * NcclConformanceTest}: {@code NcclKitMain RANK SIZE STORE_PORT JOB LABEL quick|full [check]}.
 * Opens GPU RANK, forms its communicator through {@link Jccl#init} with a TCP store on
 * 127.0.0.1:STORE_PORT, runs the kit on GPU memory ({@link DeviceMem}) and prints what {@link
 * KitMain} prints ({@code KIT-CASE}, {@code KIT-FAIL}, {@code KIT-RAN}, {@code KIT-DONE}).
 * {@code check}: the parent set {@code JCCL_CHECK=1}, so mismatches count as detected in the call
 * ({@code Traits.nccl(fp8, true)}). Seed and selection: {@code JCCL_KIT_SEED} / {@code
 * JCCL_KIT_CASES}.
 */
public final class NcclKitMain {
    private NcclKitMain() {
    }

    /** Entry point. */
    public static void main(String[] args) {
        int rank = Integer.parseInt(args[0]);
        int size = Integer.parseInt(args[1]);
        int port = Integer.parseInt(args[2]);
        String job = args[3];
        String label = args[4];
        boolean full = args[5].equals("full");
        boolean check = args.length > 6 && args[6].equals("check");
        long seed = Kit.seed();
        RankMain.runAndExit(rank, () -> {
            try (CudaDevice dev = CudaDevice.open(rank);
                 Communicator comm = Jccl.init(Options.of(rank, size).withDevice(dev).withStore("127.0.0.1", port)
                         .withJobId(job).withTimeout(Duration.ofSeconds(60)).withSetting("JCCL_STORE_SERVED", "1"))) {
                if (!comm.backend().equals("nccl")) {
                    throw new AssertionError("Jccl.init chose " + comm.backend() + ", expected nccl");
                }
                Traits traits = Traits.nccl(dev.supportsFp8(), check).named(label);
                Kit.Report r = Kit.run(comm, () -> new DeviceMem(dev), traits, seed, full, KitMain.announced(Kit.selection()));
                KitMain.print(r, seed);
            }
            return 0;
        });
    }
}
