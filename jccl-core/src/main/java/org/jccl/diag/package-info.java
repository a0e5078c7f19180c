/**
 * Diagnosis: the per-communicator {@link org.jccl.diag.FlightRecorder} of recent operations, and
 * the {@link org.jccl.diag.Doctor} that reads every rank's dump and names where ranks diverged.
 */
package org.jccl.diag;
