package org.jccl.internal;

import java.util.Map;

/**
 * {@code JCCL_CHECK}, read the same way by every backend that honours it (the NCCL backend's
 * fingerprint exchange, the TCP transport's round-trip checks): the system property {@code
 * jccl.check} wins, then the environment (a communicator's own setting, {@link Settings#with}, wins over both); {@code 1/true/yes/on} or {@code 0/false/no/off}; any
 * other value is an error naming the setting.
 */
public final class CheckSetting {
    private CheckSetting() {
    }

    /** Whether {@code env} (or the system property {@code jccl.check}) turns the checks on. */
    public static boolean enabled(Map<String, String> env) {
        String p = Settings.bound().get("JCCL_CHECK");
        String source = "the communicator setting JCCL_CHECK";
        if (p == null) {
            p = System.getProperty("jccl.check");
            source = "system property jccl.check";
        }
        if (p == null || p.isBlank()) {
            p = env.get("JCCL_CHECK");
            source = "JCCL_CHECK";
        }
        return Settings.flag(source, p, "1 (check) or 0 (don't)");
    }
}
