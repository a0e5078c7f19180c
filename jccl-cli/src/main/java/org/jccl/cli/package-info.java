/** The {@code jccl} command line: run, perf, info. */
package org.jccl.cli;
