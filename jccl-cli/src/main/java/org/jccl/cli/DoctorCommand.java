package org.jccl.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.jccl.diag.Doctor;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code jccl doctor DIR}: one verdict from every rank's flight recorder dump. */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = {"Reads every rank's flight recorder dump (jccl-trace-*.json, written to JCCL_TRACE_DIR on a "
                + "timeout, failure or abort, or by Communicator.dumpFlightRecord) and prints one verdict per "
                + "communicator: the first collective where the ranks diverge, which ranks never reached it or called "
                + "something else, and what each rank was doing."})
final class DoctorCommand implements Callable<Integer> {
    @CommandLine.ParentCommand
    Main parent;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Parameters(index = "0", paramLabel = "DIR", description = "Directory holding the dumps (JCCL_TRACE_DIR).")
    Path dir;

    @Override
    public Integer call() throws Exception {
        if (!Files.isDirectory(dir)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "invalid value for DIR: " + dir
                    + " is not a directory (give the JCCL_TRACE_DIR of the job)");
        }
        parent.out.print(Doctor.diagnose(dir));
        parent.out.flush();
        return 0;
    }
}
