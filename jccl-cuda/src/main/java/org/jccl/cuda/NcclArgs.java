package org.jccl.cuda;

import java.time.Duration;
import java.util.Objects;
import org.jccl.Buffer;
import org.jccl.DataType;
import org.jccl.ReduceOp;

/**
 * The argument checks of {@link NcclCommunicator}, made in Java before NCCL sees a call: buffers
 * must be live {@link DeviceBuffer}s of the communicator's GPU with matching types and counts;
 * bitwise operators, FP8 without sm_90 + NCCL 2.24, overlaps other than the in-place layout and
 * ranks out of range are refused with an {@link IllegalArgumentException} that says what to pass
 * instead. Stateless: the checks that depend on a communicator take it as their first argument.
 */
final class NcclArgs {
    private NcclArgs() {
    }

    static DeviceBuffer dev(NcclCommunicator c, Buffer b, String what) {
        CudaDevice device = c.device;
        if (b == null) {
            throw new IllegalArgumentException(what + " is null: pass a DeviceBuffer of GPU " + device.ordinal());
        }
        if (!(b instanceof DeviceBuffer d)) {
            throw new IllegalArgumentException(what + " is a " + b.getClass().getSimpleName() + " in " + b.location()
                    + " memory: the nccl backend moves GPU memory; copy it into a DeviceBuffer (CudaDevice.allocate, "
                    + "DeviceBuffer.copyFrom) or use the host backend");
        }
        if (!d.isLive()) {
            throw new IllegalArgumentException(what + " " + d + " was closed or its memory freed: pass a live buffer");
        }
        if (d.device().ordinal() != device.ordinal()) {
            throw new IllegalArgumentException(what + " lives on GPU " + d.device().ordinal() + " but this communicator ("
                    + c.describe() + ") runs on GPU " + device.ordinal() + ": allocate it on GPU " + device.ordinal());
        }
        checkType(device, d.type(), what);
        return d;
    }

    /** A buffer that only the root reads or writes: null is fine elsewhere. */
    static DeviceBuffer devOrNull(NcclCommunicator c, Buffer b, String what, boolean needed) {
        if (b == null && !needed) {
            return null;
        }
        return dev(c, b, what);
    }

    private static void checkType(CudaDevice device, DataType t, String what) {
        if ((t == DataType.FLOAT8_E4M3 || t == DataType.FLOAT8_E5M2) && !device.supportsFp8()) {
            throw new IllegalArgumentException(what + " is " + t + ", but FP8 collectives need a GPU of compute capability 9.0+"
                    + " and NCCL 2.24+ (this is sm_" + device.computeCapabilityMajor() + device.computeCapabilityMinor()
                    + " with NCCL " + Nccl.versionString() + "): use FLOAT16 or BFLOAT16");
        }
    }

    static void checkOp(ReduceOp op, DataType type) {
        if (op == null) {
            throw new IllegalArgumentException("op is null: pass a ReduceOp such as ReduceOp.SUM");
        }
        if (op.isBitwise()) {
            throw new IllegalArgumentException("op " + op + " is not supported by NCCL (no bitwise reductions): use SUM, "
                    + "PROD, MIN, MAX, AVG or PREMUL_SUM, or the host backend for bitwise ops");
        }
        if (op.kind() == ReduceOp.Kind.PREMUL_SUM) {
            NumberFormats.checkScalar(type, op.scalar());
        }
    }

    static void sameShape(DeviceBuffer a, String an, DeviceBuffer b, String bn) {
        sameType(a, an, b, bn);
        if (a.count() != b.count()) {
            throw new IllegalArgumentException(an + " has " + a.count() + " elements but " + bn + " has " + b.count()
                    + ": both buffers must have the same count");
        }
    }

    static void sameType(DeviceBuffer a, String an, DeviceBuffer b, String bn) {
        if (a.type() != b.type()) {
            throw new IllegalArgumentException(an + " is " + a.type() + " but " + bn + " is " + b.type()
                    + ": both buffers must have the same data type");
        }
    }

    /**
     * Same start is in place; any other overlap is refused. {@code a} is the buffer that the
     * in-place {@code layout} puts at {@code expectedPtr} (send inside recv, or recv inside send).
     */
    static void inPlaceOrDisjoint(DeviceBuffer a, DeviceBuffer b, long expectedPtr, String layout) {
        if (a.overlaps(b) && a.rawPointer() != expectedPtr) {
            throw new IllegalArgumentException("send and recv overlap but are not the in-place layout (" + layout
                    + "): use that layout or disjoint buffers");
        }
    }

    /**
     * The layout of a collective whose {@code whole} buffer holds one {@code part}-sized slice per
     * rank (all-gather and gather: recv is the whole; reduce-scatter and scatter: send is): same
     * type, {@code size} slices, and in place only as {@code part} at slice {@code slot}
     * ({@code slotName} in messages).
     */
    static void sliced(DeviceBuffer part, DeviceBuffer whole, boolean wholeIsRecv, int size, int slot, String slotName,
                       String what) {
        String partName = wholeIsRecv ? "send" : "recv";
        String wholeName = wholeIsRecv ? "recv" : "send";
        if (wholeIsRecv) {
            sameType(part, "send", whole, "recv");
        } else {
            sameType(whole, "send", part, "recv");
        }
        if (whole.count() != part.count() * size) {
            throw new IllegalArgumentException(wholeName + " has " + whole.count() + " elements but " + what + " "
                    + part.count() + " per rank over " + size + " ranks needs " + part.count() * size);
        }
        inPlaceOrDisjoint(part, whole, whole.rawPointer() + scaled(slot * part.count(), whole.type()),
                partName + " == slice " + slotName + " of " + wholeName);
    }

    static long scaled(long count, DataType t) {
        return count * t.byteSize();
    }

    static void checkPeer(NcclCommunicator c, int peer, String what) {
        if (peer < 0 || peer >= c.size()) {
            throw new IllegalArgumentException(what + " is " + peer + " but the communicator has ranks 0.." + (c.size() - 1)
                    + ": pass a rank in that range");
        }
    }

    static void checkSelf(NcclCommunicator c, int peer) {
        if (peer == c.rank() && NcclGroup.current() == null) {
            throw new IllegalArgumentException("peer is this rank (" + c.rank() + "): a send to self only completes with its "
                    + "matching recv in the same NcclGroup");
        }
    }

    static void checkCreateArgs(int rank, int size, byte[] uniqueId, Duration timeout) {
        if (size < 1) {
            throw new IllegalArgumentException("size is " + size + ": a communicator needs at least one rank");
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank is " + rank + " but size is " + size + ": rank must be in [0, size)");
        }
        Objects.requireNonNull(uniqueId, "uniqueId");
        if (uniqueId.length != NcclLibrary.UNIQUE_ID_BYTES) {
            throw new IllegalArgumentException("uniqueId has " + uniqueId.length + " bytes: an ncclUniqueId has "
                    + NcclLibrary.UNIQUE_ID_BYTES + " (make it with Nccl.newUniqueId())");
        }
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout is " + timeout + ": give a positive duration");
        }
    }
}
