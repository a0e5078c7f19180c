package org.jccl.host.kernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.jccl.DataType;

/** Test data: element values with the hard cases mixed in, and segments of every kind. */
final class Cases {
    private Cases() {
    }

    private static final float[] FLOAT_SPECIALS = {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
        0f, -0f, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MIN_NORMAL, 0x1p-130f, -0x1.8p-140f, Float.MAX_VALUE,
        -Float.MAX_VALUE, 1f, -1f, 448f, 464f, -57344f, 61440f, 65504f, 65520f, 0x1p-9f, 0x1p-16f, 0x1p-24f,
        0x1.FEp127f, Float.intBitsToFloat(0xFFC0_0001)};

    private static final double[] DOUBLE_SPECIALS = {Double.NaN, Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY, 0d, -0d, Double.MIN_VALUE, -Double.MIN_VALUE, Double.MIN_NORMAL, 0x1p-1060,
        Double.MAX_VALUE, -Double.MAX_VALUE, 1d, -1d, 0x1p-149, 3.4028235677973366E38, 0x1p+1023,
        Double.longBitsToDouble(0xFFF8_0000_0000_0001L)};

    /** Raw bits (zero-extended to the type's width) of one random element of type t. */
    static long element(DataType t, SplittableRandom rnd) {
        int pick = rnd.nextInt(64);
        return switch (t) {
            case INT8, UINT8, INT32, UINT32, INT64, UINT64 -> {
                long v;
                if (pick < 4) {
                    long[] edges = {0, -1, 1, Long.MIN_VALUE >> (64 - t.byteSize() * 8),
                        Long.MAX_VALUE >>> (64 - t.byteSize() * 8), 1L << (t.byteSize() * 8 - 1)};
                    v = edges[rnd.nextInt(edges.length)];
                } else if (pick < 24) {
                    v = rnd.nextInt(-4, 5);
                } else {
                    v = rnd.nextLong();
                }
                yield mask(t, v);
            }
            case FLOAT32 -> Float.floatToRawIntBits(pick < 2 ? FLOAT_SPECIALS[rnd.nextInt(FLOAT_SPECIALS.length)]
                    : pick < 6 ? Float.intBitsToFloat(rnd.nextInt())
                    : (float) ((rnd.nextDouble() * 2 - 1) * scale(rnd))) & 0xFFFF_FFFFL;
            case FLOAT64 -> Double.doubleToRawLongBits(pick < 2 ? DOUBLE_SPECIALS[rnd.nextInt(DOUBLE_SPECIALS.length)]
                    : pick < 6 ? Double.longBitsToDouble(rnd.nextLong())
                    : (rnd.nextDouble() * 2 - 1) * scale(rnd));
            default -> {
                Ref.Format f = Ref.format(t);
                int codes = 1 << f.bits();
                if (pick < 6) {
                    yield rnd.nextInt(codes);   // any code, NaN and infinity included
                }
                // A random value of the format's range, as a code; NaN-free.
                double v = (rnd.nextDouble() * 2 - 1) * f.max() * (pick < 12 ? 1 : pick < 30 ? 1e-2 : 1e-4);
                yield f.encode(v) & (codes - 1);
            }
        };
    }

    private static double scale(SplittableRandom rnd) {
        return switch (rnd.nextInt(4)) {
            case 0 -> 1e-3;
            case 1 -> 1e3;
            default -> 1;
        };
    }

    static long mask(DataType t, long v) {
        return t.byteSize() == 8 ? v : v & ((1L << (t.byteSize() * 8)) - 1);
    }

    /** A segment of one of three kinds: native, heap byte[], heap long[] (typed, 8-byte units). */
    static MemorySegment segment(int kind, long bytes, Arena arena) {
        return switch (kind) {
            case 0 -> arena.allocate(Math.max(bytes, 1), 1);
            case 1 -> MemorySegment.ofArray(new byte[(int) bytes]);
            default -> MemorySegment.ofArray(new long[(int) ((bytes + 7) / 8)]);
        };
    }

    static void put(DataType t, MemorySegment seg, long off, long bits) {
        switch (t.byteSize()) {
            case 1 -> seg.set(ValueLayout.JAVA_BYTE, off, (byte) bits);
            case 2 -> seg.set(ValueLayout.JAVA_SHORT_UNALIGNED, off, (short) bits);
            case 4 -> seg.set(ValueLayout.JAVA_INT_UNALIGNED, off, (int) bits);
            default -> seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off, bits);
        }
    }

    static long get(DataType t, MemorySegment seg, long off) {
        return mask(t, switch (t.byteSize()) {
            case 1 -> seg.get(ValueLayout.JAVA_BYTE, off);
            case 2 -> seg.get(ValueLayout.JAVA_SHORT_UNALIGNED, off);
            case 4 -> seg.get(ValueLayout.JAVA_INT_UNALIGNED, off);
            default -> seg.get(ValueLayout.JAVA_LONG_UNALIGNED, off);
        });
    }

    static void fillRandom(MemorySegment seg, SplittableRandom rnd) {
        long i = 0;
        for (; i + 8 <= seg.byteSize(); i += 8) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
        for (; i < seg.byteSize(); i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
    }

    /** Whether actual matches expected bit for bit (NaN results are canonical, so exact too). */
    static boolean same(DataType t, long expected, long actual) {
        return mask(t, expected) == mask(t, actual);
    }
}
