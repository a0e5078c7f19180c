package org.jccl;

import java.util.Objects;

/**
 * A reduction operator. The plain operators are constants; {@link #preMulSum(double)} builds
 * NCCL's PreMulSum (the sum of {@code scalar * x} over ranks).
 *
 * @param kind   which operator
 * @param scalar the multiplier of {@link Kind#PREMUL_SUM}; 1 for every other operator
 */
public record ReduceOp(Kind kind, double scalar) {

    /** The operator families. */
    public enum Kind {
        /** Sum. */
        SUM(0),
        /** Product. */
        PROD(1),
        /** Maximum (NaN propagates for floating point). */
        MAX(2),
        /** Minimum (NaN propagates for floating point). */
        MIN(3),
        /** Sum divided once by the number of ranks. */
        AVG(4),
        /** Sum of {@code scalar * x}; NCCL creates it with ncclRedOpCreatePreMulSum. */
        PREMUL_SUM(-1),
        /** Bitwise and (integer types; host and mpi backends). */
        BAND(-1),
        /** Bitwise or (integer types; host and mpi backends). */
        BOR(-1),
        /** Bitwise exclusive or (integer types; host and mpi backends). */
        BXOR(-1);

        private final int ncclValue;

        Kind(int ncclValue) {
            this.ncclValue = ncclValue;
        }

        /** The built-in {@code ncclRedOp_t} value, or -1 where NCCL has none built in. */
        public int ncclValue() {
            return ncclValue;
        }
    }

    /** Sum. */
    public static final ReduceOp SUM = new ReduceOp(Kind.SUM, 1);
    /** Product. */
    public static final ReduceOp PROD = new ReduceOp(Kind.PROD, 1);
    /** Minimum. */
    public static final ReduceOp MIN = new ReduceOp(Kind.MIN, 1);
    /** Maximum. */
    public static final ReduceOp MAX = new ReduceOp(Kind.MAX, 1);
    /**
     * Average: sum, then divide once by the rank count. On integer types the (wrapping) sum is
     * divided truncating toward zero, as C and NCCL's {@code ncclAvg} do: the average of 1 and 2
     * is 1; convert to a float type first where the fraction matters.
     */
    public static final ReduceOp AVG = new ReduceOp(Kind.AVG, 1);
    /** Bitwise and. */
    public static final ReduceOp BAND = new ReduceOp(Kind.BAND, 1);
    /** Bitwise or. */
    public static final ReduceOp BOR = new ReduceOp(Kind.BOR, 1);
    /** Bitwise xor. */
    public static final ReduceOp BXOR = new ReduceOp(Kind.BXOR, 1);

    /** Validates the record. */
    public ReduceOp {
        Objects.requireNonNull(kind, "kind");
        if (kind != Kind.PREMUL_SUM && scalar != 1) {
            throw new IllegalArgumentException("scalar " + scalar + " given for " + kind
                    + ": only PREMUL_SUM takes a scalar; use ReduceOp.preMulSum(scalar)");
        }
        if (Double.isNaN(scalar)) {
            throw new IllegalArgumentException("scalar is NaN: give PREMUL_SUM a number");
        }
    }

    /** NCCL's PreMulSum: each rank's input is multiplied by {@code scalar}, then summed. */
    public static ReduceOp preMulSum(double scalar) {
        return new ReduceOp(Kind.PREMUL_SUM, scalar);
    }

    /** True for the bitwise operators. */
    public boolean isBitwise() {
        return kind == Kind.BAND || kind == Kind.BOR || kind == Kind.BXOR;
    }

    /** Whether this operator is defined for {@code type} (bitwise ops need an integer type). */
    public boolean supports(DataType type) {
        return !isBitwise() || type.isInteger();
    }

    /**
     * Throws an IllegalArgumentException naming the operator and type when this operator does
     * not apply to {@code type}.
     */
    public void checkSupports(DataType type) {
        if (!supports(type)) {
            throw new IllegalArgumentException("op " + this + " is not defined for " + type
                    + ": bitwise ops need an integer type (INT8..UINT64)");
        }
    }

    /**
     * Parses a name: sum, prod, min, max, avg, band, bor, bxor, or premulsum (scalar 2, as
     * nccl-tests uses) / premulsum:SCALAR.
     */
    public static ReduceOp parse(String name) {
        String n = name.trim().toLowerCase(java.util.Locale.ROOT);
        if (n.startsWith("premulsum")) {
            if (n.equals("premulsum")) {
                return preMulSum(2);
            }
            if (n.startsWith("premulsum:")) {
                return preMulSum(Double.parseDouble(n.substring("premulsum:".length())));
            }
        }
        return switch (n) {
            case "sum" -> SUM;
            case "prod" -> PROD;
            case "min" -> MIN;
            case "max" -> MAX;
            case "avg" -> AVG;
            case "band" -> BAND;
            case "bor" -> BOR;
            case "bxor" -> BXOR;
            default -> throw new IllegalArgumentException("unknown reduction op '" + name
                    + "': use one of sum, prod, min, max, avg, premulsum[:scalar], band, bor, bxor");
        };
    }

    /** Short lower-case name, as in nccl-tests tables. */
    public String shortName() {
        return kind == Kind.PREMUL_SUM ? "premulsum" : kind.name().toLowerCase(java.util.Locale.ROOT);
    }

    @Override
    public String toString() {
        return kind == Kind.PREMUL_SUM ? "PREMUL_SUM(" + scalar + ")" : kind.name();
    }
}
