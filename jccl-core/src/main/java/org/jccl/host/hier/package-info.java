/**
 * The host engine over several hosts with several ranks on some: {@link
 * org.jccl.host.hier.HierarchicalCommunicator} runs shared memory inside each host and TCP between
 * one leader per host (its lowest rank); {@link org.jccl.host.hier.Placement} is which rank is on
 * which host, agreed through the store. It builds on {@code org.jccl.host.shm} and {@code
 * org.jccl.host.tcp}; neither depends on it.
 */
package org.jccl.host.hier;
