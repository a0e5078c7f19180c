package org.jccl.host;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Runs a test class with every pair of ranks over TCP: sets {@code jccl.transport=tcp} (the system
 * property that stands for {@code JCCL_TRANSPORT=tcp}) before its tests and clears it after them.
 * Use as {@code @ExtendWith(OverTcp.class)}.
 */
final class OverTcp implements BeforeAllCallback, AfterAllCallback {
    @Override
    public void beforeAll(ExtensionContext context) {
        System.setProperty("jccl.transport", "tcp");
    }

    @Override
    public void afterAll(ExtensionContext context) {
        System.clearProperty("jccl.transport");
    }
}
