/**
 * GPU collectives: the CUDA driver ({@code libcuda.so.1}) and NCCL
 * ({@code libnccl.so.2}) bound through the Foreign Function and Memory API (no JNI, no C shim),
 * device memory ({@link org.jccl.cuda.DeviceBuffer}), streams and events, and
 * {@link org.jccl.cuda.NcclCommunicator}, the {@link org.jccl.Communicator} of the "nccl" backend.
 *
 * <p>Nothing here loads a native library until a GPU is asked for: {@link org.jccl.cuda.Cuda} and
 * {@link org.jccl.cuda.Nccl} say whether the libraries are usable and why not.
 */
package org.jccl.cuda;
