/**
 * The engine of {@code jccl perf}: the collectives' counts and bandwidth rules ({@link
 * org.jccl.cli.perf.Collective}), the checked test data ({@link org.jccl.cli.perf.TestData}), the
 * sweep ({@link org.jccl.cli.perf.PerfRunner}) and its outputs: the nccl-tests table ({@link
 * org.jccl.cli.perf.Table}), JSON and CSV ({@link org.jccl.cli.perf.PerfJson}) and the SVG chart
 * ({@link org.jccl.cli.perf.SvgChart}).
 */
package org.jccl.cli.perf;
