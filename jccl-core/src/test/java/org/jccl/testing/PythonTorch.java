package org.jccl.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Whether this machine's /usr/bin/python3 imports torch.distributed (Debian's python3-torch), for {@link Require}'s {@code torch}. */
public final class PythonTorch {
    /** The interpreter the torch tests run. */
    public static final String PYTHON = "/usr/bin/python3";

    private static volatile String cached;

    private PythonTorch() {
    }

    /** Why torch cannot be used here, or null when it can (checked once). */
    public static String unavailable() {
        String c = cached;
        if (c != null) {
            return c.isEmpty() ? null : c;
        }
        String why = probe();
        cached = why == null ? "" : why;
        return why;
    }

    private static String probe() {
        if (!Files.isExecutable(Path.of(PYTHON))) {
            return "no " + PYTHON + " (apt-get install python3-torch)";
        }
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", "import torch.distributed as d; assert d.is_available(); print(d.TCPStore)")
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                return PYTHON + " cannot import torch.distributed (apt-get install python3-torch): " + out.strip();
            }
            return null;
        } catch (IOException e) {
            return PYTHON + " failed: " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while probing " + PYTHON;
        }
    }
}
