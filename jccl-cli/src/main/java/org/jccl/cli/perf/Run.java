package org.jccl.cli.perf;

import java.util.List;

/**
 * A run: where it came from and its rows.
 *
 * @param info the run's origin
 * @param rows its rows, in order
 */
public record Run(RunInfo info, List<Row> rows) {
    /** Copies the rows. */
    public Run {
        rows = List.copyOf(rows);
    }
}
