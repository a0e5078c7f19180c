package org.jccl.kit;

import java.util.List;
import org.jccl.HostBuffer;

/**
 * Failure lists of the process-world rank programs (the host engine's and MPI's): each check adds
 * a line naming what was wrong instead of throwing, so one run reports every failure. Here in the
 * kit's package so the other backends' tests see it through the test jar.
 */
public final class Failures {
    private Failures() {
    }

    /** Adds a failure when {@code wrong} elements of {@code what} were wrong. */
    public static void wrong(List<String> failures, String what, long wrong) {
        if (wrong != 0) {
            failures.add(what + ": " + wrong + " wrong");
        }
    }

    /** Adds a failure when {@code got} differs from {@code expected}, naming the first byte that differs. */
    public static void same(List<String> failures, String what, HostBuffer got, HostBuffer expected) {
        long at = got.segment().mismatch(expected.segment());
        if (at >= 0) {
            failures.add(what + ": differs at byte " + at);
        }
    }
}
