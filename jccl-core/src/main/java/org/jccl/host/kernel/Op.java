package org.jccl.host.kernel;

/**
 * The element operations the kernels implement. {@link org.jccl.ReduceOp.Kind} maps onto these;
 * MIN and MAX compare unsigned for the unsigned types, AVG and PREMUL occur only for floating
 * point (Reductions rewrites them for integer types as an ADD followed by a divide or scale pass,
 * which is bitwise the same in wrapping arithmetic).
 */
enum Op {
    /** Sum. */
    ADD,
    /** Product. */
    MUL,
    /** Minimum (NaN propagates, -0.0 below +0.0: {@link Math#min(float, float)}). */
    MIN,
    /** Maximum (NaN propagates, +0.0 above -0.0: {@link Math#max(float, float)}). */
    MAX,
    /** Sum, then one division by the divisor in the accumulation precision. */
    AVG,
    /** Sum of {@code scalar * x} in the accumulation precision. */
    PREMUL,
    /** Bitwise and. */
    AND,
    /** Bitwise or. */
    OR,
    /** Bitwise exclusive or. */
    XOR
}
