package org.jccl.kit;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.jccl.Communicator;

/**
 * Runs the conformance kit on one rank. Every rank of the world calls {@link #run} with the same
 * arguments; cases run in the same order everywhere. A case's checks collect failures; an
 * exception fails the case and, when it broke the world's communicator, ends the run.
 *
 * <p>Reproduce a failure with {@code -Djccl.kit.seed=<seed printed> -Djccl.kit.cases=<regex>}
 * (or {@code JCCL_KIT_SEED} / {@code JCCL_KIT_CASES} for process worlds).
 */
public final class Kit {
    private Kit() {
    }

    /** Every case, in the order they run. */
    public static List<KitCase> cases() {
        List<KitCase> all = new ArrayList<>(List.of(
                // the collectives (CollectiveCases)
                KitCase.of("allReduce", CollectiveCases::allReduce),
                KitCase.of("reduce", CollectiveCases::reduce),
                KitCase.of("broadcast", CollectiveCases::broadcast),
                KitCase.of("allGather", CollectiveCases::allGather),
                KitCase.of("reduceScatter", CollectiveCases::reduceScatter),
                KitCase.of("allToAll", CollectiveCases::allToAll),
                KitCase.of("gather", CollectiveCases::gather),
                KitCase.of("scatter", CollectiveCases::scatter),
                KitCase.of("rootedRunAhead", CollectiveCases::rootedRunAhead),
                KitCase.of("barrier", CollectiveCases::barrier),
                KitCase.of("bitwiseIdentity", CollectiveCases::bitwiseIdentity),
                // the variable-size collectives (VarSizeCases)
                KitCase.of("allGatherV", VarSizeCases::allGatherV),
                KitCase.of("reduceScatterV", VarSizeCases::reduceScatterV),
                KitCase.of("allToAllV", VarSizeCases::allToAllV),
                KitCase.of("gatherV", VarSizeCases::gatherV),
                KitCase.of("scatterV", VarSizeCases::scatterV),
                KitCase.of("errors.varSizeArguments", VarSizeCases::badArguments),
                // point to point (P2pCases)
                KitCase.of("p2p.pairs", P2pCases::pairs),
                KitCase.of("p2p.ringShift", P2pCases::ringShift),
                KitCase.of("p2p.severalOutstandingPerPair", P2pCases::severalOutstanding),
                KitCase.of("p2p.longAsyncStream", P2pCases::longAsyncStream),
                KitCase.of("p2p.sendRecv", P2pCases::sendRecv),
                KitCase.of("p2p.allPairsAsync", P2pCases::allPairs),
                KitCase.of("p2p.self", P2pCases::self),
                KitCase.of("p2p.withCollectives", P2pCases::withCollectives),
                // split, async, shrink, flight recorder, close (LifecycleCases)
                KitCase.of("split.ordering", LifecycleCases::splitOrdering),
                KitCase.of("split.noColor", LifecycleCases::splitNoColor),
                KitCase.of("split.disjointAtOnce", LifecycleCases::disjointAtOnce),
                KitCase.of("close.whilePeersFinish", LifecycleCases::closeWhilePeersFinish),
                KitCase.of("async.outOfOrder", LifecycleCases::asyncOutOfOrder),
                KitCase.of("async.thenBlocking", LifecycleCases::asyncThenBlocking),
                KitCase.of("async.progressWithoutAwait", LifecycleCases::asyncProgressWithoutAwait),
                KitCase.of("async.awaitedByAnotherThread", LifecycleCases::asyncAwaitedByAnotherThread),
                KitCase.fresh("shrink.excludingTheLast", LifecycleCases::shrinkExcludingTheLast),
                KitCase.of("flightRecord.dump", LifecycleCases::flightRecordDump),
                KitCase.fresh("close.callsAfterClose", LifecycleCases::callsAfterClose)));
        all.addAll(ErrorCases.cases());
        return all;
    }

    /**
     * What one rank saw.
     *
     * @param failures one line per failed check or case
     * @param ran      names of the cases that ran, with their time in ms
     */
    public record Report(List<String> failures, List<String> ran) {
    }

    /** The seed of this run: {@code jccl.kit.seed} / {@code JCCL_KIT_SEED}, else a random one. */
    public static long seed() {
        String s = setting("jccl.kit.seed", "JCCL_KIT_SEED");
        return s != null ? Long.parseLong(s) : new java.util.Random().nextLong() & 0xffff_ffffL;
    }

    /** The case selection: {@code jccl.kit.cases} / {@code JCCL_KIT_CASES} (a regex), else every case. */
    public static Predicate<String> selection() {
        String s = setting("jccl.kit.cases", "JCCL_KIT_CASES");
        if (s == null) {
            return n -> true;
        }
        Pattern p = Pattern.compile(s);
        return n -> p.matcher(n).find();
    }

    private static String setting(String property, String env) {
        String v = System.getProperty(property);
        if (v == null || v.isBlank()) {
            v = System.getenv(env);
        }
        return v == null || v.isBlank() ? null : v.trim();
    }

    /**
     * Runs the selected cases on this rank.
     *
     * @param world  this rank's communicator of the world (healthy on entry)
     * @param mems   where buffers live; one Mem per case, closed after it
     * @param traits what the backend promises
     * @param seed   the same on every rank
     * @param full   every type x op x threshold count (else the quick subset)
     * @param select which cases run (the same on every rank)
     */
    public static Report run(Communicator world, Supplier<Mem> mems, Traits traits, long seed, boolean full,
                             Predicate<String> select) {
        List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        List<String> ran = new ArrayList<>();
        for (KitCase kc : cases()) {
            if (!select.test(kc.name())) {
                continue;
            }
            long caseSeed = seed * 1_000_003L + kc.name().hashCode();
            long t0 = System.nanoTime();
            Communicator comm = kc.fresh() ? world.split(0, world.rank()) : world;
            boolean broken = false;
            try (Mem mem = mems.get()) {
                Ctx ctx = new Ctx(comm, world, mem, traits, caseSeed, full, kc.name(), failures);
                try {
                    kc.body().run(ctx);
                } catch (Throwable e) {
                    java.io.StringWriter sw = new java.io.StringWriter();
                    e.printStackTrace(new java.io.PrintWriter(sw));
                    ctx.fail("threw " + sw);
                    broken = !kc.fresh();
                } finally {
                    ctx.close();
                }
            } finally {
                if (kc.fresh()) {
                    comm.close();
                }
            }
            ran.add(kc.name() + " " + (System.nanoTime() - t0) / 1_000_000 + " ms");
            if (broken) {
                failures.add("the cases after " + kc.name() + " did not run: it broke the world's communicator on rank "
                        + world.rank());
                break;
            }
        }
        return new Report(new ArrayList<>(failures), ran);
    }
}
