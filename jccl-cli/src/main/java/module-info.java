/** jccl-cli: the {@code jccl} command (run, perf, info). */
module org.jccl.cli {
    requires org.jccl;
    requires org.jccl.cuda;
    requires info.picocli;
}
