/** GPU collectives: CUDA driver and NCCL bindings (FFM) and the NCCL communicator. */
package org.jccl.cuda;
