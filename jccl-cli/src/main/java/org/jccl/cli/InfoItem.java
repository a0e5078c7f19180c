package org.jccl.cli;

/**
 * One line of {@code jccl info}: something looked for, and whether it was found.
 *
 * @param section the group ("JDK", "CUDA", ...)
 * @param name    what was looked for ("vector API")
 * @param found   whether it is there and usable
 * @param detail  what was found (version, size, path), or why it was not
 */
public record InfoItem(String section, String name, boolean found, String detail) {

    /** A found item. */
    static InfoItem found(String section, String name, String detail) {
        return new InfoItem(section, name, true, detail);
    }

    /** An item not found, with the reason. */
    static InfoItem missing(String section, String name, String reason) {
        return new InfoItem(section, name, false, reason);
    }
}
