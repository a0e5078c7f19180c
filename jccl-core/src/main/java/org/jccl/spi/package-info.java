/**
 * Service interface backends implement to plug into {@link org.jccl.Jccl#init(org.jccl.Options)}
 * ({@link org.jccl.spi.Backend}), and the {@link org.jccl.spi.Liveness} of a job's ranks that the
 * store's heartbeats maintain for them, and the {@link org.jccl.spi.IdleStrategy} every wait of
 * every backend idles with ({@link org.jccl.spi.BackoffIdleStrategy}, {@link
 * org.jccl.spi.TimedIdleStrategy}).
 */
package org.jccl.spi;
