/** jccl-cli: the {@code jccl} command (run, perf, info). */
module org.jccl.cli {
    requires org.jccl;
    requires org.jccl.cuda;
    requires info.picocli;
    requires java.management;
    requires jdk.management;

    exports org.jccl.cli;
    exports org.jccl.cli.perf;
    // picocli fills the annotated fields of the commands reflectively.
    opens org.jccl.cli to info.picocli;
}
