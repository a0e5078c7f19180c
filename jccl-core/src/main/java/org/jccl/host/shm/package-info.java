/** The shared-memory transport: segment layout, mapping, control words and waits. */
package org.jccl.host.shm;
