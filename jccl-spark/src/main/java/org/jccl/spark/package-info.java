/**
 * jccl inside Apache Spark: {@link org.jccl.spark.JcclSpark} forms a communicator over the tasks
 * of a barrier stage ({@code rdd.barrier().mapPartitions(...)}), rendezvous through the stage's
 * {@code BarrierTaskContext.allGather}; shared memory between the executors of one machine, TCP
 * between machines.
 */
package org.jccl.spark;
