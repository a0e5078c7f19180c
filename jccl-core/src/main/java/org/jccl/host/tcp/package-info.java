/**
 * The host engine across hosts: a TCP transport ({@link org.jccl.host.tcp.TcpTransport}: java.nio
 * socket channels, framed and fingerprinted messages, token-proved connections, several sockets
 * per peer) and {@link org.jccl.host.tcp.TcpCommunicator} (every rank over TCP); the leaders of
 * {@link org.jccl.host.hier.HierarchicalCommunicator} use it between hosts. The collective algorithms over the transport, one file each, are in {@link
 * org.jccl.host.tcp.algo}.
 */
package org.jccl.host.tcp;
