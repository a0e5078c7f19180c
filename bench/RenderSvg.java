import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jccl.cli.perf.PerfJson;
import org.jccl.cli.perf.Run;
import org.jccl.cli.perf.SvgChart;

/**
 * Draws one chart of a collective from perf JSON files already written (jccl perf --json,
 * bench/mpi/mpi_coll --json, bench/gloo/gloo_bench.py --json), e.g. those of compare-host.sh:
 *
 * <pre>
 * CP=$(ls jccl-cli/target/jccl-cli-*.jar):$(ls jccl-cli/target/lib/*.jar | tr '\n' ':')
 * java -cp "$CP" bench/RenderSvg.java allreduce "title" out.svg jccl.json mpi.json gloo.json
 * </pre>
 */
public class RenderSvg {
    public static void main(String[] a) throws Exception {
        if (a.length < 4) {
            System.err.println("usage: RenderSvg COLLECTIVE TITLE OUT.svg RUN.json...");
            System.exit(2);
        }
        String collective = a[0];
        List<Run> runs = new ArrayList<>();
        for (int i = 3; i < a.length; i++) {
            for (Run r : PerfJson.read(Path.of(a[i]))) {
                runs.add(new Run(r.info(), r.rows().stream().filter(x -> x.collective().equals(collective)).toList()));
            }
        }
        Files.writeString(Path.of(a[2]), SvgChart.render(runs, a[1]));
    }
}
