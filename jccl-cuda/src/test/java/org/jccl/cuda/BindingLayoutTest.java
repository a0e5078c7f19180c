package org.jccl.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.util.List;
import org.jccl.DataType;
import org.jccl.Jccl;
import org.jccl.JcclException;
import org.jccl.spi.Backend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * What can be checked without a GPU: the ncclConfig_t prefix layout against the C layout rules,
 * the availability reports, and that the backend is registered and refuses cleanly.
 */
class BindingLayoutTest {

    /** The C struct as nccl.h declares it (fields up to commName), laid out by FFM's alignment rules. */
    private static final StructLayout C_CONFIG = MemoryLayout.structLayout(
            JAVA_LONG.withName("size"), JAVA_INT.withName("magic"), JAVA_INT.withName("version"),
            JAVA_INT.withName("blocking"), JAVA_INT.withName("cgaClusterSize"), JAVA_INT.withName("minCTAs"),
            JAVA_INT.withName("maxCTAs"), ADDRESS.withName("netName"), JAVA_INT.withName("splitShare"),
            JAVA_INT.withName("trafficClass"), ADDRESS.withName("commName"));

    private static long off(String field) {
        return C_CONFIG.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    @Test
    void configPrefixMatchesTheCLayout() {
        assertEquals(C_CONFIG.byteSize(), NcclLibrary.CONFIG_SIZE);
        assertEquals(off("size"), NcclLibrary.CFG_SIZE);
        assertEquals(off("magic"), NcclLibrary.CFG_MAGIC);
        assertEquals(off("version"), NcclLibrary.CFG_VERSION);
        assertEquals(off("blocking"), NcclLibrary.CFG_BLOCKING);
        assertEquals(off("cgaClusterSize"), NcclLibrary.CFG_CGA);
        assertEquals(off("minCTAs"), NcclLibrary.CFG_MIN_CTAS);
        assertEquals(off("maxCTAs"), NcclLibrary.CFG_MAX_CTAS);
        assertEquals(off("netName"), NcclLibrary.CFG_NET_NAME);
        assertEquals(off("splitShare"), NcclLibrary.CFG_SPLIT_SHARE);
        assertEquals(off("trafficClass"), NcclLibrary.CFG_TRAFFIC_CLASS);
        assertEquals(off("commName"), NcclLibrary.CFG_COMM_NAME);
    }

    /** CUlaunchConfig and CUlaunchAttribute as cuda.h declares them, laid out by FFM's alignment rules. */
    private static final StructLayout C_LAUNCH_CONFIG = MemoryLayout.structLayout(
            JAVA_INT.withName("gridDimX"), JAVA_INT.withName("gridDimY"), JAVA_INT.withName("gridDimZ"),
            JAVA_INT.withName("blockDimX"), JAVA_INT.withName("blockDimY"), JAVA_INT.withName("blockDimZ"),
            JAVA_INT.withName("sharedMemBytes"), MemoryLayout.paddingLayout(4), ADDRESS.withName("hStream"),
            ADDRESS.withName("attrs"), JAVA_INT.withName("numAttrs"), MemoryLayout.paddingLayout(4));
    private static final StructLayout C_LAUNCH_ATTRIBUTE = MemoryLayout.structLayout(
            JAVA_INT.withName("id"), MemoryLayout.paddingLayout(4),
            MemoryLayout.sequenceLayout(64, java.lang.foreign.ValueLayout.JAVA_BYTE).withName("value"));

    @Test
    void launchConfigMatchesTheCLayout() {
        java.util.function.ToLongFunction<String> cfg =
                f -> C_LAUNCH_CONFIG.byteOffset(MemoryLayout.PathElement.groupElement(f));
        java.util.function.ToLongFunction<String> attr =
                f -> LaunchConfigDescriptor.ATTR + C_LAUNCH_ATTRIBUTE.byteOffset(MemoryLayout.PathElement.groupElement(f));
        assertEquals(cfg.applyAsLong("gridDimX"), LaunchConfigDescriptor.GRID_X);
        assertEquals(cfg.applyAsLong("gridDimY"), LaunchConfigDescriptor.GRID_Y);
        assertEquals(cfg.applyAsLong("gridDimZ"), LaunchConfigDescriptor.GRID_Z);
        assertEquals(cfg.applyAsLong("blockDimX"), LaunchConfigDescriptor.BLOCK_X);
        assertEquals(cfg.applyAsLong("blockDimY"), LaunchConfigDescriptor.BLOCK_Y);
        assertEquals(cfg.applyAsLong("blockDimZ"), LaunchConfigDescriptor.BLOCK_Z);
        assertEquals(cfg.applyAsLong("sharedMemBytes"), LaunchConfigDescriptor.SHARED_BYTES);
        assertEquals(cfg.applyAsLong("hStream"), LaunchConfigDescriptor.STREAM);
        assertEquals(cfg.applyAsLong("attrs"), LaunchConfigDescriptor.ATTRS);
        assertEquals(cfg.applyAsLong("numAttrs"), LaunchConfigDescriptor.NUM_ATTRS);
        assertEquals(C_LAUNCH_CONFIG.byteSize(), LaunchConfigDescriptor.ATTR, "the attribute follows the config");
        assertEquals(attr.applyAsLong("id"), LaunchConfigDescriptor.ATTR_ID);
        assertEquals(attr.applyAsLong("value"), LaunchConfigDescriptor.ATTR_VALUE);
        assertEquals(LaunchConfigDescriptor.ATTR + C_LAUNCH_ATTRIBUTE.byteSize(), LaunchConfigDescriptor.BYTES);
    }

    @Test
    void fillConfigWritesNonblockingWithMagicAndName() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cfg = a.allocate(C_CONFIG);
            MemorySegment name = a.allocateFrom("jccl-test");
            NcclLibrary.fillConfig(cfg, name);
            assertEquals(56L, cfg.get(JAVA_LONG, off("size")));
            assertEquals(0xcafebeef, cfg.get(JAVA_INT, off("magic")));
            assertEquals(0, cfg.get(JAVA_INT, off("blocking")), "nonblocking so abort can never hang");
            assertEquals(Integer.MIN_VALUE, cfg.get(JAVA_INT, off("cgaClusterSize")));
            assertEquals(Integer.MIN_VALUE, cfg.get(JAVA_INT, off("splitShare")));
            assertEquals(name.address(), cfg.get(JAVA_LONG, off("commName")));
        }
    }

    @ParameterizedTest
    @CsvSource({"22803, 2.28.3", "21900, 2.19.0", "2708, 2.7.8", "0, unknown"})
    void versionStrings(int code, String version) {
        assertEquals(version, NcclLibrary.versionString(code));
    }

    @Test
    void libraryCandidatesStartWithTheOverrideThenTheSoname() {
        List<String> c = NcclLibrary.candidates();
        assertEquals(System.getenv("JCCL_NCCL_LIBRARY"), c.get(0));
        assertEquals("libnccl.so.2", c.get(1));
    }

    @Test
    void availabilityIsReportedConsistently() {
        String cause = Cuda.unavailabilityCause();
        assertEquals(cause == null, Cuda.isAvailable());
        if (cause != null) {
            assertTrue(cause.contains("libcuda") || cause.contains("cuInit"), cause);
            assertEquals(0, CudaDevice.count());
            JcclException e = assertThrows(JcclException.class, () -> CudaDevice.open(0));
            assertTrue(e.getMessage().contains("CUDA driver unavailable"), e.getMessage());
            assertFalse(Nccl.isAvailable());
            assertTrue(Nccl.unavailabilityCause().startsWith("no CUDA driver"), Nccl.unavailabilityCause());
            assertThrows(JcclException.class, Nccl::newUniqueId);
            assertThrows(JcclException.class, () -> NcclCommunicator.create(null, 0, 1, new byte[128],
                    java.time.Duration.ofSeconds(1)));
        } else {
            assertTrue(CudaDevice.count() >= 0);
        }
        if (Nccl.isAvailable()) {
            assertTrue(Nccl.version() >= NcclLibrary.MIN_VERSION);
            assertNotNull(Nccl.libraryPath());
            assertNull(Nccl.unavailabilityCause());
        }
    }

    @Test
    void symmetricMemoryAvailabilityNamesWhyNot() {
        String why = Nccl.symmetricMemoryUnavailableCause();
        assertEquals(why == null, Nccl.hasSymmetricMemory());
        if (!Nccl.isAvailable()) {
            assertEquals(Nccl.unavailabilityCause(), why, "without NCCL the reason is NCCL's");
        } else if (Nccl.version() < NcclLibrary.WINDOW_VERSION) {
            assertNotNull(why);
            assertTrue(why.contains("2.27"), why);
        } else {
            assertNull(why, "NCCL " + Nccl.versionString() + " has the window calls");
            assertNotNull(NcclLibrary.ncclCommWindowRegister);
            assertNotNull(NcclLibrary.ncclCommWindowDeregister);
        }
        if (why != null && Cuda.isAvailable() && CudaDevice.count() > 0) {
            try (CudaDevice d = CudaDevice.open(0)) {
                org.jccl.InvalidUsageException e = assertThrows(org.jccl.InvalidUsageException.class,
                        () -> d.allocateSymmetric(DataType.FLOAT32, 16));
                assertTrue(e.getMessage().contains(why), e.getMessage());
            }
        }
    }

    @Test
    void backendIsRegisteredAndRefusesWithoutAGpu() {
        Backend nccl = Jccl.backends().stream().filter(b -> b.name().equals("nccl")).findFirst().orElseThrow(
                () -> new AssertionError("NcclBackend not found by ServiceLoader"));
        assertTrue(nccl instanceof NcclBackend);
        assertFalse(nccl.prefers(org.jccl.Options.of(0, 1)), "no device: the host engine is the default");
        if (!nccl.isAvailable()) {
            assertNotNull(nccl.unavailabilityCause());
        }
    }

    @Test
    void checkScalarIsUsedForPreMulSumOfIntegers() {
        // The communicator validates with NumberFormats.checkScalar before any native call.
        assertThrows(IllegalArgumentException.class, () -> NumberFormats.checkScalar(DataType.INT64, 1.5));
    }
}
