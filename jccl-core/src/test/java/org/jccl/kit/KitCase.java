package org.jccl.kit;

/**
 * One case of the kit: a body every rank runs with the same arguments.
 *
 * @param name  unique name (select cases with {@code -Djccl.kit.cases=<regex>})
 * @param fresh runs on a communicator of its own (split from the world's), because it breaks it
 *              (mismatches, timeouts) or closes it
 * @param body  the case
 */
public record KitCase(String name, boolean fresh, Body body) {

    /** A case body. */
    @FunctionalInterface
    public interface Body {
        /** Runs the case on this rank; checks report through {@code ctx}, exceptions fail the case. */
        void run(Ctx ctx) throws Exception;
    }

    /** A case on the world's communicator. */
    public static KitCase of(String name, Body body) {
        return new KitCase(name, false, body);
    }

    /** A case on a communicator of its own. */
    public static KitCase fresh(String name, Body body) {
        return new KitCase(name, true, body);
    }
}
