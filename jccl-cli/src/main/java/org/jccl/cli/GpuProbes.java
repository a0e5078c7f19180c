package org.jccl.cli;

import java.util.ArrayList;
import java.util.List;
import org.jccl.cli.perf.Sizes;
import org.jccl.cuda.Cuda;
import org.jccl.cuda.CudaDevice;
import org.jccl.cuda.Nccl;

/**
 * The GPU sections of {@code jccl info}, through jccl-cuda: the CUDA driver, each GPU, the peer
 * links between GPUs, and NCCL. Nothing here throws: a missing jccl-cuda module, driver or
 * library becomes a "not found" line with the reason.
 */
final class GpuProbes {
    private GpuProbes() {
    }

    /** The CUDA driver, the GPUs and their peer links. */
    static List<InfoItem> cuda() {
        List<InfoItem> out = new ArrayList<>();
        try {
            String why = Cuda.unavailabilityCause();
            if (why != null) {
                out.add(InfoItem.missing("CUDA", "driver", why));
                out.add(InfoItem.missing("CUDA", "GPUs", "no usable CUDA driver"));
                return out;
            }
            int v = Cuda.driverVersion();
            out.add(InfoItem.found("CUDA", "driver", "CUDA " + v / 1000 + "." + (v % 1000) / 10 + " ("
                    + Cuda.libraryName() + ")"));
            int n = CudaDevice.count();
            if (n == 0) {
                out.add(InfoItem.missing("CUDA", "GPUs", "the driver sees no GPU (check CUDA_VISIBLE_DEVICES)"));
                return out;
            }
            List<CudaDevice> devices = new ArrayList<>();
            try {
                for (int i = 0; i < n; i++) {
                    CudaDevice d = CudaDevice.open(i);
                    devices.add(d);
                    out.add(InfoItem.found("CUDA", "GPU " + i, d.name() + ", " + Sizes.human(d.totalMemory())
                            + " memory, compute capability " + d.computeCapabilityMajor() + "."
                            + d.computeCapabilityMinor() + ", " + d.multiprocessorCount() + " SMs, PCI "
                            + d.pciBusId()));
                }
                out.add(peerLinks(devices));
            } finally {
                for (CudaDevice d : devices) {
                    d.close();
                }
            }
        } catch (LinkageError e) {
            out.add(InfoItem.missing("CUDA", "driver", "jccl-cuda is not on the class path (" + e + ")"));
        } catch (RuntimeException e) {
            out.add(InfoItem.missing("CUDA", "GPUs", "querying the GPUs failed: " + Main.describe(e)));
        }
        return out;
    }

    /** Which pairs of GPUs reach each other directly (P2P), and over what kind of link. */
    static InfoItem peerLinks(List<CudaDevice> devices) {
        if (devices.size() < 2) {
            return InfoItem.missing("CUDA", "peer links", "one GPU: no peers");
        }
        StringBuilder sb = new StringBuilder();
        int p2p = 0;
        for (int i = 0; i < devices.size(); i++) {
            for (int j = i + 1; j < devices.size(); j++) {
                CudaDevice a = devices.get(i);
                CudaDevice b = devices.get(j);
                sb.append(sb.isEmpty() ? "" : "; ").append(i).append("-").append(j).append(" ");
                if (a.canAccessPeer(b)) {
                    p2p++;
                    // Native atomics over the link are NVLink's signature; PCIe P2P lacks them.
                    sb.append(a.nativeAtomicsWith(b) ? "P2P (native atomics: NVLink)" : "P2P (PCIe)")
                            .append(" rank ").append(a.linkPerformanceRank(b));
                } else {
                    sb.append("no P2P");
                }
            }
        }
        return p2p > 0 ? InfoItem.found("CUDA", "peer links", sb.toString())
                : InfoItem.missing("CUDA", "peer links", "no pair of GPUs has direct access: " + sb);
    }

    /** NCCL: version and where it was loaded from, or why not. */
    static List<InfoItem> nccl() {
        try {
            String why = Nccl.unavailabilityCause();
            if (why != null) {
                return List.of(InfoItem.missing("NCCL", "library", why));
            }
            return List.of(InfoItem.found("NCCL", "library", "NCCL " + Nccl.versionString() + " ("
                    + Nccl.libraryPath() + ")"));
        } catch (LinkageError e) {
            return List.of(InfoItem.missing("NCCL", "library", "jccl-cuda is not on the class path (" + e + ")"));
        } catch (RuntimeException e) {
            return List.of(InfoItem.missing("NCCL", "library", "probing NCCL failed: " + Main.describe(e)));
        }
    }
}
