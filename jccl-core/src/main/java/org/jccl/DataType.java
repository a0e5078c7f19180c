package org.jccl;

/**
 * Element types a collective can move and reduce.
 *
 * <p>Each constant knows its size in bytes and the value of the matching {@code ncclDataType_t}
 * enumerator, so a backend can pass it to NCCL unchanged.
 */
public enum DataType {
    /** Signed 8-bit integer; wraps on overflow. */
    INT8(1, 0, Kind.SIGNED),
    /** Unsigned 8-bit integer; wraps on overflow. */
    UINT8(1, 1, Kind.UNSIGNED),
    /** Signed 32-bit integer; wraps on overflow. */
    INT32(4, 2, Kind.SIGNED),
    /** Unsigned 32-bit integer; wraps on overflow. */
    UINT32(4, 3, Kind.UNSIGNED),
    /** Signed 64-bit integer; wraps on overflow. */
    INT64(8, 4, Kind.SIGNED),
    /** Unsigned 64-bit integer; wraps on overflow. */
    UINT64(8, 5, Kind.UNSIGNED),
    /** IEEE 754 binary16. Reductions accumulate in float and round once to nearest-even. */
    FLOAT16(2, 6, Kind.FLOAT),
    /** IEEE 754 binary32. */
    FLOAT32(4, 7, Kind.FLOAT),
    /** IEEE 754 binary64. */
    FLOAT64(8, 8, Kind.FLOAT),
    /** bfloat16 (the upper half of a binary32). Accumulates in float, rounds once. */
    BFLOAT16(2, 9, Kind.FLOAT),
    /** OCP FP8 E4M3 (no infinities, saturating to +-448). Accumulates in float, rounds once. */
    FLOAT8_E4M3(1, 10, Kind.FLOAT),
    /** OCP FP8 E5M2 (IEEE-like with inf and NaN). Accumulates in float, rounds once. */
    FLOAT8_E5M2(1, 11, Kind.FLOAT);

    /** Broad family of a type: decides which reduction operators apply. */
    public enum Kind {
        /** Two's complement signed integers. */
        SIGNED,
        /** Unsigned integers. */
        UNSIGNED,
        /** Floating point. */
        FLOAT
    }

    private final int byteSize;
    private final int ncclValue;
    private final Kind kind;

    DataType(int byteSize, int ncclValue, Kind kind) {
        this.byteSize = byteSize;
        this.ncclValue = ncclValue;
        this.kind = kind;
    }

    /** Size of one element in bytes. */
    public int byteSize() {
        return byteSize;
    }

    /** The {@code ncclDataType_t} value of this type. */
    public int ncclValue() {
        return ncclValue;
    }

    /** The family of this type. */
    public Kind kind() {
        return kind;
    }

    /** True for the integer types. */
    public boolean isInteger() {
        return kind != Kind.FLOAT;
    }

    /** True for the floating-point types. */
    public boolean isFloatingPoint() {
        return kind == Kind.FLOAT;
    }

    /**
     * Parses a type name as users write it on command lines: the enum name in any case, or
     * the nccl-tests spelling ({@code float}, {@code half}, {@code bf16}, {@code fp8e4m3}, ...).
     *
     * @throws IllegalArgumentException naming the valid spellings
     */
    public static DataType parse(String name) {
        String n = name.trim().toLowerCase(java.util.Locale.ROOT).replace("_", "");
        return switch (n) {
            case "int8", "char" -> INT8;
            case "uint8" -> UINT8;
            case "int32", "int" -> INT32;
            case "uint32" -> UINT32;
            case "int64" -> INT64;
            case "uint64" -> UINT64;
            case "float16", "half", "fp16" -> FLOAT16;
            case "float32", "float", "fp32" -> FLOAT32;
            case "float64", "double", "fp64" -> FLOAT64;
            case "bfloat16", "bf16" -> BFLOAT16;
            case "float8e4m3", "fp8e4m3", "e4m3" -> FLOAT8_E4M3;
            case "float8e5m2", "fp8e5m2", "e5m2" -> FLOAT8_E5M2;
            default -> throw new IllegalArgumentException("unknown data type '" + name
                    + "': use one of int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "
                    + "float32, float64, fp8e4m3, fp8e5m2");
        };
    }

    /** The short name used in tables (nccl-tests style). */
    public String shortName() {
        return switch (this) {
            case INT8 -> "int8";
            case UINT8 -> "uint8";
            case INT32 -> "int32";
            case UINT32 -> "uint32";
            case INT64 -> "int64";
            case UINT64 -> "uint64";
            case FLOAT16 -> "half";
            case FLOAT32 -> "float";
            case FLOAT64 -> "double";
            case BFLOAT16 -> "bfloat16";
            case FLOAT8_E4M3 -> "f8e4m3";
            case FLOAT8_E5M2 -> "f8e5m2";
        };
    }
}
