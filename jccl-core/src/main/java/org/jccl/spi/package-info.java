/**
 * Service interface backends implement to plug into {@link org.jccl.Jccl#init(org.jccl.Options)}
 * ({@link org.jccl.spi.Backend}), and the {@link org.jccl.spi.Liveness} of a job's ranks that the
 * store's heartbeats maintain for them.
 */
package org.jccl.spi;
