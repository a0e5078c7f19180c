package org.jccl.cuda;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jccl.CollectiveTimeoutException;
import org.jccl.InvalidUsageException;
import org.jccl.JcclException;
import org.jccl.Options;
import org.jccl.Work;

/**
 * A CUDA graph captured from a stream and instantiated: the collectives (and any other GPU work)
 * issued on the stream during the capture run again, with the same buffers and counts, every time
 * the graph is {@linkplain #launch launched}, for the cost of one driver call.
 *
 * <pre>{@code
 * try (CudaStream s = gpu.createStream();
 *      CudaGraph g = CudaGraph.capture(s, () -> comm.allReduceAsync(grads, grads, ReduceOp.SUM, s))) {
 *     for (int step = 0; step < steps; step++) {
 *         writeGradients(grads);          // new inputs, same buffer
 *         g.launch(s).await();            // the captured all-reduce runs; await has a deadline
 *     }
 * }
 * }</pre>
 *
 * <p><b>During a capture</b> only asynchronous operations may be issued on the capturing stream.
 * Their {@link NcclWork} is complete as soon as the operation is captured ({@link
 * NcclWork#isCaptured()}): nothing runs until the graph is launched, so {@code await()} returns at
 * once, and the launch's {@link Work} is what to wait for. jccl refuses, before any native call,
 * what cannot be captured: blocking collectives, {@link CudaStream#synchronize} and {@link
 * CudaStream#isIdle} on the capturing stream, in-place all-to-all (it stages through scratch memory
 * shared with later calls), and a capture on the legacy default stream. Captured works are not
 * watched by the communicator's watchdog (their events would fire only in a launch); a launch is
 * watched by its own {@link Work}.
 *
 * <p>As NCCL requires, whether a collective is captured, and every launch of a graph holding
 * collectives, is collective over the communicator's ranks: every rank captures the same
 * operations and launches its graph as often as the others. With one process driving several
 * GPUs, capture and launch each GPU's graph from its own thread ({@link CaptureMode#THREAD_LOCAL},
 * the default, lets those threads capture at the same time); a single thread launching every GPU's
 * graph can deadlock in the driver.
 *
 * <p>Not thread-safe for concurrent launches of the same graph from several threads; the graph,
 * its launch event and its executable are released by {@link #close()} (a launch still running
 * finishes first).
 */
public final class CudaGraph implements AutoCloseable {
    /**
     * How a capture limits other CUDA calls while it is open ({@code CUstreamCaptureMode}). Calls
     * that are "potentially unsafe" during a capture (allocations, synchronous copies, anything that
     * may synchronize implicitly) fail and invalidate the capture when made from a thread the mode
     * covers.
     */
    public enum CaptureMode {
        /** Unsafe calls fail on every thread while the capture is open (CUDA's default). */
        GLOBAL(CudaDriver.CAPTURE_MODE_GLOBAL),
        /** Unsafe calls fail only on the capturing thread (jccl's default; what nccl-tests uses). */
        THREAD_LOCAL(CudaDriver.CAPTURE_MODE_THREAD_LOCAL),
        /** No call is refused; the caller guarantees none of them races the capture. */
        RELAXED(CudaDriver.CAPTURE_MODE_RELAXED);

        final int code;

        CaptureMode(int code) {
            this.code = code;
        }
    }

    /** Captures begun through {@link #beginCapture}, by raw stream: collectives issued there report their communicator. */
    private static final ConcurrentHashMap<Long, Capture> ACTIVE = new ConcurrentHashMap<>();

    private final long context;
    private final long graph;
    private final long exec;
    private final long event;
    private final long nodes;
    private final List<NcclCommunicator> comms;
    private final int collectives;
    private volatile boolean closed;

    private CudaGraph(long context, long graph, long exec, long event, long nodes, List<NcclCommunicator> comms,
                      int collectives) {
        this.context = context;
        this.graph = graph;
        this.exec = exec;
        this.event = event;
        this.nodes = nodes;
        this.comms = comms;
        this.collectives = collectives;
    }

    /** Null when this driver can capture and launch graphs, else why not. */
    public static String unavailabilityCause() {
        String c = Cuda.unavailabilityCause();
        return c != null ? "no CUDA driver: " + c : CudaDriver.graphsUnavailable();
    }

    /** Whether this driver can capture and launch graphs. */
    public static boolean isAvailable() {
        return unavailabilityCause() == null;
    }

    /** {@link #capture(CudaStream, CaptureMode, Runnable)} in {@link CaptureMode#THREAD_LOCAL} mode. */
    public static CudaGraph capture(CudaStream stream, Runnable body) {
        return capture(stream, CaptureMode.THREAD_LOCAL, body);
    }

    /**
     * Captures what {@code body} issues on {@code stream} and instantiates it. When {@code body}
     * throws, the capture is ended and discarded and the exception propagates.
     *
     * @throws IllegalArgumentException for the legacy default stream, or a null argument
     * @throws InvalidUsageException    when the stream is already capturing, or a call in {@code
     *                                  body} invalidated the capture (the message names the cause)
     */
    public static CudaGraph capture(CudaStream stream, CaptureMode mode, Runnable body) {
        Objects.requireNonNull(body, "body");
        Capture c = beginCapture(stream, mode);
        try {
            body.run();
        } catch (RuntimeException | Error e) {
            try {
                c.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        return c.end();
    }

    /** {@link #beginCapture(CudaStream, CaptureMode)} in {@link CaptureMode#THREAD_LOCAL} mode. */
    public static Capture beginCapture(CudaStream stream) {
        return beginCapture(stream, CaptureMode.THREAD_LOCAL);
    }

    /**
     * Starts capturing {@code stream}: until {@link Capture#end()}, work issued on it is recorded,
     * not run. End it on the same thread (except in {@link CaptureMode#RELAXED} mode).
     *
     * @throws IllegalArgumentException for the legacy default stream (CUDA cannot capture it) or a
     *                                  null argument
     * @throws InvalidUsageException    when {@code stream} is already being captured
     */
    public static Capture beginCapture(CudaStream stream, CaptureMode mode) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(mode, "mode");
        long h = stream.handle();
        if (h == 0 || h == CudaDriver.STREAM_LEGACY) {
            throw new IllegalArgumentException("stream is the legacy default stream, which CUDA cannot capture: "
                    + "capture a stream of CudaDevice.createStream() (or another library's non-default stream)");
        }
        String why = unavailabilityCause();
        if (why != null) {
            throw new JcclException("CUDA graphs are unavailable: " + why);
        }
        if (stream.device() != null) {
            stream.device().makeCurrent();
        }
        long ctx = CudaDriver.getCurrent();
        if (ctx == 0) {
            throw new InvalidUsageException("no CUDA context is current on this thread for wrapped stream " + stream
                    + ": call CudaDevice.makeCurrent() for its GPU first");
        }
        if (CudaDriver.captureStatus(h) != CudaDriver.CAPTURE_NONE) {
            throw new InvalidUsageException(stream + " is already being captured: end that capture first");
        }
        Capture c = new Capture(stream, h, ctx, mode);
        if (ACTIVE.putIfAbsent(h, c) != null) {
            throw new InvalidUsageException(stream + " is already being captured: end that capture first");
        }
        try {
            CudaDriver.streamBeginCapture(h, mode.code);
        } catch (RuntimeException e) {
            ACTIVE.remove(h, c);
            throw e;
        }
        return c;
    }

    /** Called by a launch that captured an operation of {@code comm} on raw stream {@code stream}. */
    static void noteCaptured(long stream, NcclCommunicator comm) {
        Capture c = ACTIVE.get(stream);
        if (c != null) {
            c.note(comm);
        }
    }

    /**
     * Launches the graph on {@code stream} (any stream of the graph's GPU) and returns a work that
     * completes when this launch has finished. Its {@code await()} polls with a deadline: the
     * longest timeout of the communicators whose operations the graph holds (or {@link
     * Options#DEFAULT_TIMEOUT} without any); past it those communicators are aborted (their kernels
     * stop) and it throws {@link CollectiveTimeoutException}. The work shares one event with later
     * launches of this graph: after a later launch it may wait for that one too, never less.
     *
     * @throws InvalidUsageException when the graph is closed, or a communicator it captured is
     *                               closed or aborted (its captured kernels could never finish)
     */
    public Work launch(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        if (closed) {
            throw new InvalidUsageException("this CudaGraph is closed: capture a new one");
        }
        for (NcclCommunicator c : comms) {
            if (c.state.get() != NcclCommunicator.OPEN) {
                throw new InvalidUsageException("the graph holds operations of " + c.describe() + ", which is "
                        + (c.failure() != null ? "aborted (" + c.failure().getMessage() + ")" : "closed")
                        + ": capture a new graph on a new communicator");
            }
        }
        long h = stream.handle();
        ensureCurrent();
        CudaDriver.graphLaunch(exec, h);
        CudaDriver.eventRecord(event, h);
        long budget = Options.DEFAULT_TIMEOUT.toNanos();
        if (!comms.isEmpty()) {
            budget = 0;
            for (NcclCommunicator c : comms) {
                budget = Math.max(budget, c.timeout().toNanos());
            }
        }
        return new Launch(System.nanoTime() + budget, Duration.ofNanos(budget), stream.toString());
    }

    /** Nodes of the graph (kernels, copies, event records...), or -1 when the driver cannot tell. */
    public long nodeCount() {
        return nodes;
    }

    /** The jccl collectives captured into this graph through {@link #beginCapture} (0 for other captures). */
    public int collectiveCount() {
        return collectives;
    }

    private void ensureCurrent() {
        if (!CudaDriver.isCurrent(context)) {
            CudaDriver.setCurrent(context);
        }
    }

    /** Releases the executable graph, the graph and its event; a launch in flight finishes first. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        ensureCurrent();
        CudaDriver.graphExecDestroy(exec);
        CudaDriver.graphDestroy(graph);
        CudaDriver.eventDestroy(event);
    }

    @Override
    public String toString() {
        return "CudaGraph[" + nodes + " nodes, " + collectives + " collectives" + (closed ? ", closed" : "") + "]";
    }

    /** An open capture of one stream ({@link #beginCapture}); {@link #end()} turns it into a graph. */
    public static final class Capture implements AutoCloseable {
        private final CudaStream stream;
        private final long handle;
        private final long context;
        private final CaptureMode mode;
        private final Thread owner = Thread.currentThread();
        private final Set<NcclCommunicator> comms = ConcurrentHashMap.newKeySet();
        private final java.util.concurrent.atomic.AtomicInteger collectives = new java.util.concurrent.atomic.AtomicInteger();
        private boolean ended;

        private Capture(CudaStream stream, long handle, long context, CaptureMode mode) {
            this.stream = stream;
            this.handle = handle;
            this.context = context;
            this.mode = mode;
        }

        void note(NcclCommunicator c) {
            comms.add(c);
            collectives.incrementAndGet();
        }

        /** The stream being captured. */
        public CudaStream stream() {
            return stream;
        }

        /**
         * Ends the capture and instantiates the graph.
         *
         * @throws InvalidUsageException when already ended, called from another thread than the one
         *                               that began it (outside RELAXED mode), or when a call made
         *                               during the capture invalidated it
         */
        public CudaGraph end() {
            if (ended) {
                throw new InvalidUsageException("this capture of " + stream + " already ended");
            }
            if (mode != CaptureMode.RELAXED && Thread.currentThread() != owner) {
                throw new InvalidUsageException("a " + mode + " capture must end on the thread that began it ("
                        + owner.getName() + ")");
            }
            ended = true;
            ACTIVE.remove(handle, this);
            if (!CudaDriver.isCurrent(context)) {
                CudaDriver.setCurrent(context);
            }
            long[] g = new long[1];
            int r = CudaDriver.streamEndCapture(handle, g);
            if (r != CudaDriver.SUCCESS) {
                if (g[0] != 0) {
                    CudaDriver.graphDestroy(g[0]);
                }
                if (r == CudaDriver.STREAM_CAPTURE_INVALIDATED) {
                    InvalidUsageException e = new InvalidUsageException("the capture of " + stream + " was "
                            + "invalidated by a call that cannot be captured (a synchronous copy or allocation, a "
                            + "stream or device synchronize, a query of the capturing stream): nothing was captured; "
                            + "issue only asynchronous work on the stream during a capture");
                    e.initCause(CudaDriver.error(r, "cuStreamEndCapture"));
                    throw e;
                }
                throw CudaDriver.error(r, "cuStreamEndCapture");
            }
            long exec;
            try {
                exec = CudaDriver.graphInstantiate(g[0]);
            } catch (RuntimeException e) {
                CudaDriver.graphDestroy(g[0]);
                throw e;
            }
            long nodes = CudaDriver.graphNodeCount(g[0]);
            long ev = CudaDriver.eventCreate(CudaDriver.EVENT_DISABLE_TIMING);
            return new CudaGraph(context, g[0], exec, ev, nodes, new ArrayList<>(comms), collectives.get());
        }

        /** Ends the capture if {@link #end()} was not called, and discards what it captured. */
        @Override
        public void close() {
            if (!ended) {
                end().close();
            }
        }
    }

    /** One launch of the graph: complete when the graph's event recorded after it fires. */
    private final class Launch implements Work {
        private final long deadline;
        private final Duration budget;
        private final String where;
        private volatile boolean done;
        private volatile JcclException failure;

        Launch(long deadline, Duration budget, String where) {
            this.deadline = deadline;
            this.budget = budget;
            this.where = where;
        }

        @Override
        public boolean isDone() {
            return done || failure != null || poll();
        }

        private boolean poll() {
            if (closed) {
                return false;
            }
            ensureCurrent();
            if (CudaDriver.ready(CudaDriver.eventQuery(event), "cuEventQuery")) {
                for (NcclCommunicator c : comms) {
                    JcclException f = c.failure();
                    if (f != null) {
                        failure = new JcclException("a launch of " + CudaGraph.this + " on " + where + " failed: "
                                + f.getMessage(), f);
                        return true;
                    }
                }
                done = true;
                return true;
            }
            return false;
        }

        @Override
        public void await() {
            waitUntil(deadline, true);
        }

        @Override
        public boolean await(Duration timeout) {
            Objects.requireNonNull(timeout, "timeout");
            return waitUntil(System.nanoTime() + Math.max(0, timeout.toNanos()), false);
        }

        private boolean waitUntil(long until, boolean isDeadline) {
            org.jccl.spi.TimedIdleStrategy b = CudaDevice.gpuWait();
            while (true) {
                if (failure != null) {
                    throw failure;
                }
                if (done) {
                    return true;
                }
                if (closed) {
                    throw new InvalidUsageException(CudaGraph.this + " was closed before its launch was awaited");
                }
                if (poll()) {
                    continue;
                }
                for (NcclCommunicator c : comms) {
                    JcclException f = c.failure();
                    if (f != null) {
                        failure = new JcclException("a launch of " + CudaGraph.this + " on " + where + " failed: "
                                + f.getMessage(), f);
                    }
                }
                long now = System.nanoTime();
                if (failure == null && now - deadline > 0) {
                    CollectiveTimeoutException e = new CollectiveTimeoutException("a launch of " + CudaGraph.this
                            + " on " + where + " did not finish within " + budget + " (did every rank launch its graph?)"
                            + (comms.isEmpty() ? "" : ": aborting the communicators it holds"), List.of());
                    for (NcclCommunicator c : comms) {
                        NcclHealth.abortWith(c, e);
                    }
                    failure = e;
                    continue;
                }
                if (!isDeadline && now - until > 0) {
                    return false;
                }
                b.idle();
            }
        }

        @Override
        public JcclException exception() {
            return failure;
        }

        @Override
        public String toString() {
            return "CudaGraph.Launch[" + where + ", " + (done ? "done" : failure != null ? "failed" : "pending") + "]";
        }
    }
}
