package org.jccl.testing;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;

/**
 * Skip or fail: a test that needs something of the machine skips without it, unless the
 * environment variable {@value #VARIABLE} (a comma-separated list of {@link #CAPABILITIES}) names
 * it; then the test fails, so that a run that is meant to exercise it (CI sets
 * {@code JCCL_REQUIRE=mpi,netns,torch}) cannot pass by skipping. An unknown name in the variable is an
 * error in every test that asks.
 *
 * <p>Capabilities: {@code mpi} (a usable Open MPI and {@code mpirun}), {@code netns} (root and
 * iproute2: Linux network namespaces), {@code gpu} (CUDA, NCCL and as many GPUs as the test needs),
 * {@code torch} (/usr/bin/python3 that imports torch.distributed: PyTorch's TCPStore to interoperate with).
 *
 * <pre>{@code
 * Require.require("netns", Netns.unavailable());   // null: available, the test goes on
 * }</pre>
 *
 * <p>The other modules use it through jccl-core's test jar.
 */
public final class Require {
    /** The environment variable that lists the required capabilities. */
    public static final String VARIABLE = "JCCL_REQUIRE";
    /** The capability names {@value #VARIABLE} and {@link #require} accept. */
    public static final List<String> CAPABILITIES = List.of("mpi", "netns", "gpu", "torch", "torch-cuda");

    private Require() {
    }

    /**
     * Whether {@value #VARIABLE} names {@code capability}.
     *
     * @throws IllegalArgumentException if {@code capability} is not one of {@link #CAPABILITIES}
     * @throws AssertionError if {@value #VARIABLE} names an unknown capability
     */
    public static boolean required(String capability) {
        if (!CAPABILITIES.contains(capability)) {
            throw new IllegalArgumentException("unknown capability '" + capability + "': use one of " + CAPABILITIES);
        }
        return parse(System.getenv(VARIABLE)).contains(capability);
    }

    /**
     * Lets the test go on when {@code whyUnavailableOrNull} is null; otherwise fails it (an
     * {@link AssertionError} naming {@value #VARIABLE} and the reason) when {@code capability} is
     * required, and skips it with the reason when not.
     *
     * @param capability one of {@link #CAPABILITIES}
     * @param whyUnavailableOrNull why the capability is missing here, or null when it is there
     */
    public static void require(String capability, String whyUnavailableOrNull) {
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

    /** The capabilities {@code value} lists; blanks between commas are ignored. */
    static Set<String> parse(String value) {
        Set<String> names = new LinkedHashSet<>();
        if (value == null) {
            return names;
        }
        for (String s : value.split(",")) {
            String name = s.strip().toLowerCase(Locale.ROOT);
            if (name.isEmpty()) {
                continue;
            }
            if (!CAPABILITIES.contains(name)) {
                throw new AssertionError(VARIABLE + "=" + value + " names an unknown capability '" + s.strip()
                        + "': use a comma-separated list of " + String.join(", ", CAPABILITIES));
            }
            names.add(name);
        }
        return names;
    }
}
