package org.jccl.cuda;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

/**
 * The full collective matrix ({@link Matrix}) with one process driving every GPU: one
 * communicator per GPU from {@link NcclCommunicator#initAll}, every case issued from one thread
 * inside an {@link NcclGroup}. Plus the 256 MiB subset.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NcclThreadsMatrixTest {
    private List<CudaDevice> devs;
    private List<NcclCommunicator> comms;

    @BeforeAll
    void init() {
        Gpu.assume(2);
        devs = Gpu.openAll();
        comms = NcclCommunicator.initAll(devs, Duration.ofSeconds(120));
    }

    @AfterAll
    void shut() {
        Gpu.closeAll(comms, devs);
    }

    @TestFactory
    Stream<DynamicTest> everyCollectiveTypeOpSizeAndPlacement() {
        boolean fp8 = devs.get(0).supportsFp8();
        return Matrix.cases(comms.size(), fp8, Matrix.SIZES).stream()
                .map(c -> dynamicTest(c.name(), () -> assertNull(Matrix.run(c, comms), c.name())));
    }

    @TestFactory
    Stream<DynamicTest> buffersOf256MiB() {
        return Matrix.largeCases(comms.size()).stream()
                .map(c -> dynamicTest(c.name(), () -> assertNull(Matrix.run(c, comms), c.name())));
    }
}
