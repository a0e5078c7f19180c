package org.jccl.cuda;

/**
 * The layout {@code cuLaunchKernelEx} reads (cuda.h, CUDA 12.0+): a {@code CUlaunchConfig} and, right
 * after it, its one {@code CUlaunchAttribute}. jccl's all-reduce kernels use it for programmatic
 * dependent launch (the attribute {@code CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION}).
 *
 * <pre>
 *  0               4               8               12              16
 *  +---------------+---------------+---------------+---------------+
 *  | gridDimX      | gridDimY      | gridDimZ      | blockDimX     |
 *  +---------------+---------------+---------------+---------------+  16
 *  | blockDimY     | blockDimZ     | sharedMemBytes| (pad)         |
 *  +---------------+---------------+---------------+---------------+  32
 *  | hStream (CUstream)            | attrs (CUlaunchAttribute *)   |
 *  +---------------+---------------+-------------------------------+  48
 *  | numAttrs      | (pad)         | attribute: id | (pad)         |  56: the attribute starts
 *  +---------------+---------------+---------------+---------------+  64
 *  | attribute: value, a union of 64 bytes (an int for the         |
 *  | stream serialization attribute)                               |
 *  +---------------------------------------------------------------+  128
 * </pre>
 */
final class LaunchConfigDescriptor {
    static final long GRID_X = 0, GRID_Y = 4, GRID_Z = 8;
    static final long BLOCK_X = 12, BLOCK_Y = 16, BLOCK_Z = 20;
    static final long SHARED_BYTES = 24;
    static final long STREAM = 32;
    static final long ATTRS = 40;
    static final long NUM_ATTRS = 48;
    /** The attribute, after the config (sizeof(CUlaunchConfig) is 56). */
    static final long ATTR = 56;
    static final long ATTR_ID = ATTR, ATTR_VALUE = ATTR + 8;
    /** The config and one attribute (sizeof(CUlaunchAttribute) is 72). */
    static final long BYTES = ATTR + 72;

    /** CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION. */
    static final int PROGRAMMATIC_STREAM_SERIALIZATION = 6;

    private LaunchConfigDescriptor() {
    }
}
