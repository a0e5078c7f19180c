/**
 * jccl's API: {@link org.jccl.Communicator}, {@link org.jccl.DataType}, {@link org.jccl.ReduceOp},
 * {@link org.jccl.Buffer}, {@link org.jccl.Work}, the exceptions and {@link org.jccl.Jccl#init()}.
 */
package org.jccl;
