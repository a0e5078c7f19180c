package org.jccl.cuda;

import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Assumptions;

/**
 * Skip or fail: a test that needs something of the machine skips without it, unless the
 * environment variable JCCL_REQUIRE (comma-separated: mpi, netns, gpu) names it; then it fails.
 * jccl-cuda's copy of jccl-core's {@code org.jccl.testing.Require} (test classes are not shared
 * between modules): keep the two alike.
 */
final class Require {
    static final String VARIABLE = "JCCL_REQUIRE";
    static final List<String> CAPABILITIES = List.of("mpi", "netns", "gpu");

    private Require() {
    }

    /** Whether JCCL_REQUIRE names {@code capability}; an unknown name in it is an AssertionError. */
    static boolean required(String capability) {
        if (!CAPABILITIES.contains(capability)) {
            throw new IllegalArgumentException("unknown capability '" + capability + "': use one of " + CAPABILITIES);
        }
        String value = System.getenv(VARIABLE);
        boolean found = false;
        for (String s : value == null ? new String[0] : value.split(",")) {
            String name = s.strip().toLowerCase(Locale.ROOT);
            if (!name.isEmpty() && !CAPABILITIES.contains(name)) {
                throw new AssertionError(VARIABLE + "=" + value + " names an unknown capability '" + s.strip()
                        + "': use a comma-separated list of " + String.join(", ", CAPABILITIES));
            }
            found |= name.equals(capability);
        }
        return found;
    }

    /** Goes on when {@code whyUnavailableOrNull} is null; else fails when {@code capability} is required, skips when not. */
    static void require(String capability, String whyUnavailableOrNull) {
        boolean required = required(capability);
        if (whyUnavailableOrNull == null) {
            return;
        }
        if (required) {
            throw new AssertionError(VARIABLE + "=" + System.getenv(VARIABLE) + " requires '" + capability
                    + "', but it is unavailable: " + whyUnavailableOrNull);
        }
        Assumptions.abort("skipped (no " + capability + "): " + whyUnavailableOrNull);
    }
}
