/**
 * Collective algorithms of the host engine over {@link org.jccl.host.tcp.TcpTransport}: one file
 * per algorithm (pipelined ring, recursive halving-doubling, one-shot, binomial tree, chains,
 * direct and pairwise exchanges, dissemination barrier, send/recv), and {@code Parts}, the element
 * arithmetic, message tags and steps they share. The package names the transport, so the classes
 * do not: {@code RingAllReduce} here is the TCP ring. They live apart from the transport so that
 * {@code org.jccl.host.tcp} holds the sockets, frames and failure handling only: an algorithm
 * depends on the transport's public posting and waiting methods, never the reverse (only the
 * communicators, {@link org.jccl.host.tcp.TcpCommunicator} and {@link
 * org.jccl.host.hier.HierarchicalCommunicator}, which select algorithms, import this package).
 */
package org.jccl.host.tcp.algo;
