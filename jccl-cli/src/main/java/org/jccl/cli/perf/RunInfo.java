package org.jccl.cli.perf;

/**
 * What a run's numbers came from; every JSON and CSV row repeats it.
 *
 * @param hostname host of rank 0
 * @param cores    processors of rank 0's host
 * @param backend  backend name ("host", "nccl"; "openmpi", "gloo" for imported runs)
 * @param ranks    number of ranks
 * @param version  version of the library measured (jccl's, or the imported library's)
 * @param jdk      JDK version ("" for imported runs)
 * @param label    the series name in charts
 */
public record RunInfo(String hostname, int cores, String backend, int ranks, String version, String jdk, String label) {
    /** The default label: "jccl host 4 ranks". */
    public static String defaultLabel(String library, String backend, int ranks) {
        return library + " " + backend + " " + ranks + (ranks == 1 ? " rank" : " ranks");
    }
}
