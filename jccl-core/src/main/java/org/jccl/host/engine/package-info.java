/**
 * The host engine's one runtime, under every host transport: {@link
 * org.jccl.host.engine.EngineCommunicator} owns the rank, the call sequence, deadlines, the
 * worker thread of async calls, failure state and its propagation, the flight recorder, split
 * and shrink; shared memory ({@link org.jccl.host.HostCommunicator}), TCP and hierarchical
 * communicators supply only their collectives and transport hooks. {@link
 * org.jccl.host.engine.OpCode} is the one numbering of operations (fingerprints, frames, flight
 * recorder). For transports, not applications: applications use {@link org.jccl.Communicator}.
 */
package org.jccl.host.engine;
