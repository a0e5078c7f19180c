package org.jccl.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What the loaded NCCL and a GPU can do, as {@code jccl info} shows it.
 *
 * @param ncclVersion         NCCL version, e.g. "2.28.3"
 * @param ncclVersionCode     NCCL_VERSION_CODE, e.g. 22803
 * @param libraryPath         the libnccl.so.2 file in use
 * @param device              the GPU ordinal
 * @param deviceName          the GPU name
 * @param computeCapability   compute capability, e.g. "9.0"
 * @param fp8                 FP8 collectives possible (sm_90+ and NCCL 2.24+)
 * @param nativeAllToAll      ncclAlltoAll / ncclGather / ncclScatter present (NCCL 2.28+); else jccl uses grouped send/recv
 * @param shrink              ncclCommShrink present (NCCL 2.27+)
 * @param multicastSupported  the GPU supports NVLink SHARP multicast (NVLS); reported only
 * @param nvlsAllowed         NVLS is supported and not disabled by NCCL_NVLS_ENABLE=0 (jccl never uses multicast itself)
 * @param peers               every other visible GPU and how this one reaches it
 */
public record NcclCapabilities(String ncclVersion, int ncclVersionCode, String libraryPath, int device,
                               String deviceName, String computeCapability, boolean fp8, boolean nativeAllToAll,
                               boolean shrink, boolean multicastSupported, boolean nvlsAllowed, List<PeerLink> peers) {

    /**
     * How a GPU reaches a peer GPU.
     *
     * @param ordinal         the peer's ordinal
     * @param peerAccess      direct load/store access (NVLink or PCIe P2P)
     * @param nvlink          all atomics native over the link, which in practice means NVLink
     * @param performanceRank the driver's relative link rank (lower is better), -1 without P2P
     */
    public record PeerLink(int ordinal, boolean peerAccess, boolean nvlink, int performanceRank) {
    }

    /** Copies the list. */
    public NcclCapabilities {
        peers = List.copyOf(peers);
    }

    /** Queries the loaded NCCL and {@code device}. */
    public static NcclCapabilities of(CudaDevice device) {
        Objects.requireNonNull(device, "device");
        device.ensureOpen();
        List<PeerLink> peers = new ArrayList<>();
        int n = CudaDriver.deviceCount();
        for (int o = 0; o < n; o++) {
            if (o == device.ordinal()) {
                continue;
            }
            int peer = CudaDriver.device(o);
            boolean access = CudaDriver.canAccessPeer(device.handle(), peer);
            boolean atomics = access
                    && CudaDriver.p2pAttribute(CudaDriver.P2P_NATIVE_ATOMIC_SUPPORTED, device.handle(), peer) != 0;
            int rankOfLink = access ? CudaDriver.p2pAttribute(CudaDriver.P2P_PERFORMANCE_RANK, device.handle(), peer) : -1;
            peers.add(new PeerLink(o, access, atomics, rankOfLink));
        }
        boolean mc = device.multicastSupported();
        boolean nvlsOff = "0".equals(System.getenv("NCCL_NVLS_ENABLE"));
        return new NcclCapabilities(Nccl.versionString(), Nccl.version(), Nccl.libraryPath(), device.ordinal(),
                device.name(), device.computeCapabilityMajor() + "." + device.computeCapabilityMinor(),
                device.supportsFp8(), Nccl.hasNativeAllToAll(), Nccl.hasShrink(), mc, mc && !nvlsOff, peers);
    }
}
