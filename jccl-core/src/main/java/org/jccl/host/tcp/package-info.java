/**
 * The host engine across hosts: a TCP transport ({@link org.jccl.host.tcp.TcpTransport}: java.nio
 * socket channels, framed and fingerprinted messages, token-proved connections, several sockets
 * per peer), the collective algorithms over it (one file each: pipelined ring, recursive
 * halving-doubling, one-shot, trees, chains, pairwise exchanges), {@link
 * org.jccl.host.tcp.TcpCommunicator} (every rank over TCP) and {@link
 * org.jccl.host.tcp.HierarchicalCommunicator} (shared memory inside each host, TCP between one
 * leader per host).
 */
package org.jccl.host.tcp;
