package org.jccl.cli.perf;

/**
 * One line of the table: a size of one collective, type, operator and root, measured out of
 * place and in place.
 *
 * @param collective the collective's name ("allreduce"; other names for imported runs)
 * @param dtype      type name as the table prints it ("float")
 * @param op         operator ("sum", "premulsum"), or "none"
 * @param root       root rank, or -1
 * @param bytes      size in bytes (the larger of send and receive buffers)
 * @param count      elements handed to the collective (per rank for the blocked collectives)
 * @param oop        out-of-place measurement, or null when absent (imported runs)
 * @param ip         in-place measurement, or null when absent
 */
public record Row(String collective, String dtype, String op, int root, long bytes, long count,
                  Measurement oop, Measurement ip) {
}
