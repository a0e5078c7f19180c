#!/usr/bin/env bash
# jccl-cuda on a GPU machine: the GPU tests, NcclBench and the torch.distributed reference, in one go.
#
#   bench/gpu/run-gpu.sh stage [DEST]   here (JDK 25 + Maven): builds the jccl-core/jccl-cuda jars, the
#                                       jccl-bench jar (NcclBench) and the test classes, fetches JUnit's
#                                       console launcher, and puts them with this script in DEST/.gpu
#                                       (DEST defaults to the repository root).
#                                       DEST/.jre must exist: run ../shared/device/make-jre.sh in DEST once.
#   bash .gpu/run.sh                    on the GPU machine (it has no Java: .jre travels), from DEST:
#                                       probes the machine, runs the GPU tests, the benchmark and torch.
#
# With the device tool: run(command="bash .gpu/run.sh", carry=[".jre", ".gpu"], kind="nvidia-h100-x2").
# Phases (JCCL_GPU_PHASES, comma separated): probe, classes (JCCL_GPU_CLASSES: test classes alone), anchors (nccl-tests
# against jccl perf for every collective, cold and steady: anchors-summary.txt), p2p (jccl perf sendrecv on NCCL to 256 MiB, threads and processes,
# async and blocking, and -G 10), cold (cold -n 20 -w 5 against steady, with and without
# JCCL_WARMUP, threads and processes: cold-summary.txt; JCCL_GPU_COLD_MAX, default 256M), graph (CUDA graphs: CudaGraphTest, jccl perf -G and nccl-tests -G
# side by side, on request), tests (then the conformance kit, NcclConformanceTest: kit.log), tests-nb (the feature and fault tests again with
# JCCL_NCCL_NONBLOCKING=1), bench, torch, matrix; on request car (CustomAllReduceTest), carbench (NCCL vs jccl's all-reduce
# kernels, JCCL_ALGO each way, JCCL_CAR_GPUS="2 4"), faults, overhead (jccl's host cost per call, and that
# of the JCCL_GPU_BASE build when staged with one; JCCL_GPU_OVERHEAD_REPS runs, default 2; JCCL_GPU_GC=<JVM flag> adds a
# run under that collector; JCCL_GPU_OVERHEAD_LIBS: the builds under .gpu to measure, default "lib-base lib") and profile (async-profiler over that path; JCCL_GPU_PROFILE_INTERVAL, default 100us). Logs go to $OUT (the
# device tool's) or .gpu/out. NCCL_NVLS_ENABLE=0 is forced: NVLink multicast must stay off there.
# launchcost (NcclLaunchCostBench: a small op's time on a plain NCCL communicator, on jccl's data communicator and
# through jccl; JCCL_LAUNCHCOST_GPUS, default all), perfloop (jccl perf's small sizes with -n 100..5000 and -z 1, and
# NcclLaunchCostBench with batches of 200 and 1000), versus (NcclBench --versus: the tuner's all-reduce against NCCL's,
# rounds interleaved).
# JCCL_GPU_TEST_WARMUP: JCCL_WARMUP of the JUnit runs (default 0, as under Maven; the benchmarks keep jccl's default).
# The device half exits 1 when any phase failed or timed out (a failed test, a non-zero exit, no GPU found by the
# probe), after running every phase asked for; its last line names them.
set -uo pipefail

mode=${1:-device}

if [ "$mode" = stage ]; then
  set -e
  src=$(cd "$(dirname "$0")/../.." && pwd)
  dest=$(cd "${2:-$src}" && pwd)
  export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
  (cd "$src" && mvn -q -pl jccl-core,jccl-cuda,jccl-bench -am -DskipTests package 2>&1 | grep -v WARNING || true)
  (cd "$src" && mvn -q -pl jccl-core,jccl-cuda test-compile 2>&1 | grep -v WARNING || true)
  # jccl perf (the graph phase): jccl-cli and its runtime dependencies (picocli, jccl-mpi)
  (cd "$src" && mvn -q -pl jccl-core,jccl-cuda,jccl-mpi,jccl-cli -DskipTests package 2>&1 | grep -v WARNING || true)
  rm -rf "$dest/.gpu" && mkdir -p "$dest/.gpu/lib"
  cp "$src"/jccl-core/target/jccl-core-*-SNAPSHOT.jar "$dest/.gpu/lib/jccl-core.jar"
  # the conformance kit (org.jccl.kit) that NcclConformanceTest runs: jccl-core's test jar
  cp "$src"/jccl-core/target/jccl-core-*-tests.jar "$dest/.gpu/lib/jccl-core-tests.jar"
  cp "$src"/jccl-cuda/target/jccl-cuda-*-SNAPSHOT.jar "$dest/.gpu/lib/jccl-cuda.jar"
  # NcclBench (module jccl-bench, outside the library jars)
  cp "$src"/jccl-bench/target/jccl-bench-*-SNAPSHOT.jar "$dest/.gpu/lib/jccl-bench.jar"
  cp -r "$src/jccl-cuda/target/test-classes" "$dest/.gpu/test-classes"
  mkdir -p "$dest/.gpu/cli-lib"
  cp "$src"/jccl-cli/target/jccl-cli-*-SNAPSHOT.jar "$dest/.gpu/cli-lib/jccl-cli.jar"
  cp "$src"/jccl-cli/target/lib/picocli-*.jar "$src"/jccl-cli/target/lib/jccl-mpi-*.jar "$dest/.gpu/cli-lib/"
  (cd "$src" && mvn -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:6.1.3 \
      -DoutputDirectory="$dest/.gpu/lib" 2>&1 | grep -v WARNING || true)
  mv "$dest"/.gpu/lib/junit-platform-console-standalone-*.jar "$dest/.gpu/lib/junit-console.jar"
  # async-profiler (Maven Central) for the profile phase: Java and native frames of the enqueue path
  (cd "$src" && mvn -q dependency:copy -Dartifact=tools.profiler:async-profiler:4.2 -DoutputDirectory="$dest/.gpu/lib" \
      2>&1 | grep -v WARNING || true)
  (cd "$dest/.gpu/lib" && unzip -q -j -o async-profiler-4.2.jar linux-x64/libasyncProfiler.so && rm -f async-profiler-4.2.jar)
  # JCCL_GPU_BASE=<commit>: that commit's jars go to .gpu/lib-base, and the overhead phase measures both with this
  # tree's NcclBench (.gpu/lib/jccl-bench.jar, first on the class path: it wins over the NcclBench that a base's
  # jccl-cuda.jar from before jccl-bench still holds)
  if [ -n "${JCCL_GPU_BASE:-}" ]; then
    wt=$(mktemp -d /tmp/jccl-base-XXXX)
    (cd "$src" && git worktree add -q --detach "$wt" "$JCCL_GPU_BASE")
    (cd "$wt" && mvn -q -o -Djccl.build=-base -pl jccl-core,jccl-cuda -DskipTests package 2>&1 | grep -v WARNING || true)
    mkdir -p "$dest/.gpu/lib-base"
    cp "$wt"/jccl-core/target-base/jccl-core-*-SNAPSHOT.jar "$dest/.gpu/lib-base/jccl-core.jar" # not its -tests.jar
    cp "$wt"/jccl-cuda/target-base/jccl-cuda-*.jar "$dest/.gpu/lib-base/jccl-cuda.jar"
    (cd "$src" && git worktree remove --force "$wt")
  fi
  # JCCL_GPU_NCCL_TESTS=<nccl-tests source tree>: the anchors phase builds it there (the GPU machine has no nccl-tests)
  if [ -n "${JCCL_GPU_NCCL_TESTS:-}" ]; then
    mkdir -p "$dest/.gpu/nccl-tests" && cp -r "$JCCL_GPU_NCCL_TESTS"/src "$JCCL_GPU_NCCL_TESTS"/Makefile "$dest/.gpu/nccl-tests/"
    for d in os verifiable; do [ -d "$JCCL_GPU_NCCL_TESTS/$d" ] && cp -r "$JCCL_GPU_NCCL_TESTS/$d" "$dest/.gpu/nccl-tests/"; done
  fi
  # a SIGABRT backtrace (glibc's heap checks abort without an hs_err file): preloaded into the device half's JVMs
  gcc -O1 -shared -fPIC -o "$dest/.gpu/lib/abrt_trace.so" "$src/bench/gpu/abrt/abrt_trace.c"
  cp "$src/bench/gpu/run-gpu.sh" "$src/bench/gpu/torch_allreduce.py" "$dest/.gpu/"
  printf '#!/usr/bin/env bash\nexec bash "$(dirname "$0")/run-gpu.sh" device "$@"\n' > "$dest/.gpu/run.sh"
  [ -x "$dest/.jre/bin/java" ] || echo "note: $dest/.jre is missing: run ../shared/device/make-jre.sh in $dest" >&2
  du -sh "$dest/.gpu" "$dest/.jre" 2>/dev/null
  exit 0
fi

# ---- device half: run from the directory that holds .jre and .gpu
cd "$(dirname "$0")/.."
OUT=${OUT:-.gpu/out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
JAVA=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -Djccl.test.dir=/tmp/jccl-gpu)
# an abort (e.g. glibc's "double free or corruption") prints the aborting thread and its native stack (JCCL_GPU_ABRT_TRACE=0: off)
[ -f .gpu/lib/abrt_trace.so ] && [ "${JCCL_GPU_ABRT_TRACE:-1}" != 0 ] && JAVA=(env LD_PRELOAD="$PWD/.gpu/lib/abrt_trace.so" "${JAVA[@]}")
# JCCL_GPU_JAVA_OPTS: more JVM options for every java run here (e.g. -Djccl.bench.extraVariants=true)
[ -n "${JCCL_GPU_JAVA_OPTS:-}" ] && JAVA+=($JCCL_GPU_JAVA_OPTS)
CP=.gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/lib/jccl-bench.jar:.gpu/test-classes:.gpu/lib/jccl-core-tests.jar:.gpu/lib/junit-console.jar
PY=python3
[ -x /opt/torch/.venv/bin/python ] && PY=/opt/torch/.venv/bin/python
# the torch tests (TorchStoreTest, TorchNcclTest, ...) run this machine's torch
export JCCL_TEST_PYTHON=${JCCL_TEST_PYTHON:-$PY}
# torch's own NCCL, which Java ranks of a mixed torch/jccl job load too (TorchNcclTest)
TORCH_NCCL=$(ls /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2 2>/dev/null | head -1)
PHASES=${JCCL_GPU_PHASES:-probe,tests,kit,tests-nb,bench,torch,matrix}
has() { [[ ",$PHASES," == *",$1,"* ]]; }
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c GPU)
start=$(date +%s)
failed=()
check() { # check NAME RC: a phase (or one run of it) that exited non-zero goes in the final summary
  case $2 in
    0) ;;
    124|137) failed+=("$1 (timed out)") ;;
    *) failed+=("$1 (exit $2)") ;;
  esac
}
# The test JVMs run without the JIT warm-up at creation, as under Maven (pom.xml: tests create many communicators;
# NcclWarmupTest turns it on per communicator). JCCL_GPU_TEST_WARMUP=3 (or any JCCL_WARMUP value) runs them with it.
junit() { # junit NAME SECONDS SELECTORS...   (flat details: progress survives a timeout; the JRE has no java.xml)
  local name=$1 secs=$2 rc; shift 2
  JCCL_WARMUP=${JCCL_GPU_TEST_WARMUP:-0} timeout -k 10 "$secs" "${JAVA[@]}" -cp "$CP" org.junit.platform.console.ConsoleLauncher execute \
    --disable-banner --details=flat --disable-ansi-colors "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  check "$name" "$rc"
  echo "[$name] exit $rc after $(( $(date +%s) - start )) s; $(grep -c '^Finished:' "$OUT/$name.log") finished"
  awk '/^Finished:/ {n=$0; sub(/ \(\[engine.*/, "", n)} /=> Exception:/ {print "  " n " :: " substr($0, 1, 500)}' \
    "$OUT/$name.log" | grep -v 'TestAbortedException' | head -60
  grep -c 'TestAbortedException' "$OUT/$name.log" | sed 's/^/  skipped (aborted): /'
  grep -E '^\[ +[0-9]+ tests (found|successful|failed|aborted)' "$OUT/$name.log" | tr -s ' ' | tr '\n' ' '; echo
}

if has probe; then
  {
    echo "== $(date -u) host $(hostname), $NGPU GPU(s)"
    nvidia-smi -L; nvidia-smi topo -m
    echo "== nccl.h"; grep -n 'NCCL_MAJOR\|NCCL_MINOR\|NCCL_PATCH' /usr/include/nccl.h
    sed -n '/typedef struct ncclConfig_v/,/} ncclConfig_t;/p' /usr/include/nccl.h
    grep -n -A12 'define NCCL_CONFIG_INITIALIZER' /usr/include/nccl.h
    grep -n 'ncclAlltoAll(\|ncclGather(\|ncclScatter(\|ncclCommShrink(\|ncclRedOpCreatePreMulSum(' /usr/include/nccl.h
    echo "== libcuda symbols"
    nm -D /usr/lib/libcuda.so.1 2>/dev/null | grep -E 'cuMemAlloc|cuCtx|cuStream|cuEvent|cuMemcpy|cuIpc|cuDevicePrimary' | awk '{print $3}' | tr '\n' ' '
    echo; echo "== libnccl symbols"
    nm -D /usr/lib/x86_64-linux-gnu/libnccl.so.2 2>/dev/null | awk '$2=="T" && $3 ~ /^nccl/ {print $3}' | tr '\n' ' '
    echo; echo "== python: $($PY -c 'import torch; print(torch.__version__, torch.cuda.device_count(), torch.cuda.nccl.version())' 2>&1)"
    .jre/bin/java -version 2>&1 | head -1
  } > "$OUT/probe.log" 2>&1
  grep -E '^==|GPU [0-9]|ncclConfig|size;|magic|blocking|commName' "$OUT/probe.log" | head -40
  [ "$NGPU" -gt 0 ] || { echo "[probe] nvidia-smi found no GPU"; check probe 1; }
fi

if has tests; then
  junit tests 390 --select-class org.jccl.cuda.BindingLayoutTest --select-class org.jccl.cuda.NumberFormatsTest \
    --select-class org.jccl.cuda.CudaBasicsTest --select-class org.jccl.cuda.NcclFeaturesTest --select-class org.jccl.cuda.NcclStreamLifetimeTest \
    --select-class org.jccl.cuda.CudaGraphTest --select-class org.jccl.cuda.SymmetricMemoryTest \
    --select-class org.jccl.cuda.NcclWarmupPlanTest --select-class org.jccl.cuda.NcclWarmupTest \
    --select-class org.jccl.cuda.NcclWorldsTest \
    --select-method 'org.jccl.cuda.NcclProcessTest#killedPeerFailsPendingWorkByTheDeadlineAndTheSurvivorRecovers' \
    --select-method 'org.jccl.cuda.NcclProcessTest#jcclCheckFailsMismatchesOnEveryRankAndNamesTheMissingRank' \
    --select-method 'org.jccl.cuda.NcclProcessTest#survivorsShrinkExcludingTheKilledRankAndAllReduceCorrectly' \
    --select-method 'org.jccl.cuda.NcclProcessTest#heartbeatsNameTheKilledRankWithinTwoIntervalsAndTheSurvivorsShrink' \
    --select-method 'org.jccl.cuda.NcclProcessTest#abortOnOneRankFailsTheOthersWaitNamingIt'
  # a mixed torch/jccl NCCL job: both sides on torch's NCCL
  JCCL_NCCL_LIBRARY=${TORCH_NCCL:-${JCCL_NCCL_LIBRARY:-}} junit torch-nccl 300 --select-class org.jccl.cuda.TorchNcclTest
fi

if has graph; then # CUDA graphs: CudaGraphTest (also nonblocking), jccl perf -G next to -G 0 and nccl-tests' -G
  junit graph-tests 240 --select-class org.jccl.cuda.CudaGraphTest
  JCCL_NCCL_NONBLOCKING=1 junit graph-tests-nb 150 --select-class org.jccl.cuda.CudaGraphTest
  cli=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector
       -cp ".gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/cli-lib/*" org.jccl.cli.Main perf allreduce
       --backend nccl -g "$NGPU" -b 8 -e 1G -f 8 -n 20 -w 5)
  nt=$(command -v all_reduce_perf || find /opt /usr/local /root /workspace -name all_reduce_perf -type f 2>/dev/null | head -1)
  for G in 0 10; do
    timeout -k 10 120 "${cli[@]}" -G $G > "$OUT/perf-G$G.log" 2>&1
    rc=$?; check "perf-G$G" $rc
    echo "[jccl perf -G $G] exit $rc after $(( $(date +%s) - start )) s"; grep -v '^#  Rank' "$OUT/perf-G$G.log" | tail -14
    if [ -n "$nt" ]; then
      timeout -k 10 120 "$nt" -g "$NGPU" -b 8 -e 1G -f 8 -n 20 -w 5 -G $G > "$OUT/nccl-tests-G$G.log" 2>&1
      rc=$?; check "nccl-tests-G$G" $rc
      echo "[nccl-tests -G $G: $nt] exit $rc"; grep -E '^ +[0-9]' "$OUT/nccl-tests-G$G.log"
    fi
  done
  [ -n "$nt" ] || echo "[graph] nccl-tests (all_reduce_perf) is not on this machine: no nccl-tests -G reference"
fi

if has cold; then # item 4: cold (nccl-tests' -n 20 -w 5) against steady (-n 1000 -w 200), with jccl's warm-up at creation
  # (JCCL_WARMUP default) and without (0), threads (-g N) and processes (--ranks N): cold-*.json, cold-summary.txt
  cli=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector
       -cp ".gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/cli-lib/*" org.jccl.cli.Main perf allreduce
       --backend nccl -b 8 -e ${JCCL_GPU_COLD_MAX:-256M} -f 8)
  for how in "-g $NGPU" "--ranks $NGPU"; do
    tag=$(echo "$how" | tr -d ' -')
    for run in "cold-def:-n 20 -w 5" "cold-w0:-n 20 -w 5" "steady:-n 1000 -w 200"; do
      name=${run%%:*}; iters=${run#*:}
      w=(); [ "$name" = cold-w0 ] && w=(env JCCL_WARMUP=0)
      t0=$(date +%s)
      timeout -k 10 180 "${w[@]}" "${cli[@]}" $how $iters --json "$OUT/cold-$tag-$name.json" > "$OUT/cold-$tag-$name.log" 2>&1
      rc=$?; check "cold-$tag-$name" $rc
      echo "[cold $how $name: $iters] exit $rc, $(( $(date +%s) - t0 )) s wall"
    done
  done
  $PY - "$OUT" <<'PYEOF' | tee "$OUT/cold-summary.txt"
import json, sys, os
out = sys.argv[1]
def rows(f):
    try: return {r["bytes"]: r for run in json.load(open(f))["runs"] for r in run["rows"]}
    except Exception as e: return {}
for tag in sorted({f.split("-")[1] for f in os.listdir(out) if f.startswith("cold-") and f.endswith(".json")}):
    d = {n: rows(f"{out}/cold-{tag}-{n}.json") for n in ("cold-def", "cold-w0", "steady")}
    print(f"== all-reduce float sum, {tag}: time (us) out of place / in place; ratio = cold / steady")
    print(f"{'bytes':>10} {'steady':>15} {'cold':>15} {'ratio':>11} {'cold w=0':>15} {'ratio':>11} {'first':>9} {'first w=0':>9}")
    for b in sorted(d["steady"]):
        s, c, z = d["steady"][b], d["cold-def"].get(b), d["cold-w0"].get(b)
        f = lambda r, k: r[k]["time_us"] if r else float("nan")
        print(f"{b:>10} {f(s,'oop'):7.1f}/{f(s,'ip'):<7.1f} {f(c,'oop'):7.1f}/{f(c,'ip'):<7.1f} "
              f"{f(c,'oop')/f(s,'oop'):5.2f}/{f(c,'ip')/f(s,'ip'):<5.2f} {f(z,'oop'):7.1f}/{f(z,'ip'):<7.1f} "
              f"{f(z,'oop')/f(s,'oop'):5.2f}/{f(z,'ip')/f(s,'ip'):<5.2f} "
              f"{(c['oop'].get('first_us') or 0) if c else 0:9.0f} {(z['oop'].get('first_us') or 0) if z else 0:9.0f}")
PYEOF
fi

if has p2p; then # jccl perf sendrecv on NCCL (a ring: each rank sends to the next, receives from the previous) to 256 MiB
  cli=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector
       -cp ".gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/cli-lib/*" org.jccl.cli.Main perf sendrecv --backend nccl)
  for how in "-g $NGPU" "--ranks $NGPU"; do
    tag=$(echo "$how" | tr -d ' -')
    for z in 0 1; do
      timeout -k 10 90 "${cli[@]}" $how -b 8 -e 256M -f 8 -z $z > "$OUT/p2p-$tag-z$z.log" 2>&1
      rc=$?; check "p2p-$tag-z$z" $rc
      echo "[jccl perf sendrecv --backend nccl $how -z $z] exit $rc"; grep -E '^ +[0-9]+ +[0-9]+ +float|Out of bounds' "$OUT/p2p-$tag-z$z.log" | tail -4
    done
  done
  # the send/recv group inside a CUDA graph capture (-G)
  timeout -k 10 90 "${cli[@]}" -g "$NGPU" -b 8 -e 64M -f 8 -G 10 > "$OUT/p2p-graph.log" 2>&1
  rc=$?; check "p2p-graph" $rc
  echo "[jccl perf sendrecv --backend nccl -g $NGPU -G 10] exit $rc"; grep -E '^ +[0-9]+ +[0-9]+ +float|Out of bounds' "$OUT/p2p-graph.log" | tail -3
fi

if has classes; then # JCCL_GPU_CLASSES="NcclFeaturesTest NcclWarmupTest": those test classes of org.jccl.cuda alone
  # (a name with a dot is a full class name: org.jccl.bootstrap.TorchStoreTest)
  sel=(); for c in ${JCCL_GPU_CLASSES:-NcclFeaturesTest}; do [[ $c == *.* ]] || c=org.jccl.cuda.$c; sel+=(--select-class "$c"); done
  junit classes 300 "${sel[@]}"
fi

if has launchcost; then # where a small NCCL op's time goes: bare calls on an ncclCommInitAll communicator, bare calls
  # on jccl's data communicator, jccl's calls (NcclLaunchCostBench; JCCL_ALGO=nccl so all-reduce is NCCL's in all three)
  for g in ${JCCL_LAUNCHCOST_GPUS:-$NGPU}; do
    JCCL_ALGO=nccl timeout -k 5 240 "${JAVA[@]}" -cp "$CP" org.jccl.cuda.bench.NcclLaunchCostBench -g "$g" \
      > "$OUT/launchcost-g$g.log" 2>&1
    check "launchcost -g $g" $?
    grep -v '^WARNING' "$OUT/launchcost-g$g.log" | tail -30
  done
fi

if has perfloop; then # what jccl perf's loop adds on NCCL: the same small sizes with -n 100..5000 (async), -z 1, and
  # NcclLaunchCostBench with batches of 200 and 1000 (the library's calls without perf)
  cli=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector
       -cp ".gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/cli-lib/*" org.jccl.cli.Main perf)
  for op in ${JCCL_PERFLOOP_OPS:-allgather sendrecv}; do
    for it in "n100:-n 100" "n200:-n 200" "n1000:-n 1000" "n5000:-n 5000" "z1n1000:-z 1 -n 1000"; do
      timeout -k 5 90 "${cli[@]}" $op --backend nccl -g "$NGPU" -b 64 -e 4096 -f 64 -w 200 ${it#*:} \
        > "$OUT/perfloop-$op-${it%%:*}.log" 2>&1
      rc=$?; check "perfloop-$op-${it%%:*}" $rc
      echo "[perfloop $op ${it#*:}] exit $rc: $(grep -E '^ +[0-9]+ +[0-9]+ +float' "$OUT/perfloop-$op-${it%%:*}.log" | awk '{printf "%s B %s us / %s us; ", $1, $6, $10}')"
    done
  done
  for ops in 200 1000; do
    JCCL_ALGO=nccl timeout -k 5 240 "${JAVA[@]}" -cp "$CP" org.jccl.cuda.bench.NcclLaunchCostBench -g "$NGPU" --ops $ops \
      > "$OUT/perfloop-launchcost-ops$ops.log" 2>&1
    check "perfloop-launchcost-ops$ops" $?
    echo "[launchcost --ops $ops]"; grep -v '^WARNING' "$OUT/perfloop-launchcost-ops$ops.log" | grep -E '^  [a-z]' | tail -22
  done
fi

if has perfprofile; then # async-profiler (cpu time) over jccl perf's timed loop (-g N, 64 B, long -n) and the launch-cost
  # bench's: where perf's time per small op goes beyond the library's (collapsed stacks, perfprofile-*.txt)
  ap=$PWD/.gpu/lib/libasyncProfiler.so
  cli=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector
       -agentpath:$ap=start,event=ctimer,interval=${JCCL_GPU_PROFILE_INTERVAL:-100us},cstack=vm,ann,collapsed,file=$OUT/perfprofile-perf-%p.txt
       -cp ".gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/cli-lib/*" org.jccl.cli.Main perf)
  for op in ${JCCL_PERFLOOP_OPS:-allgather}; do
    timeout -k 5 90 "${cli[@]}" $op --backend nccl -g "$NGPU" -b 64 -e 64 -w 200 -n 20000 > "$OUT/perfprofile-perf-$op.log" 2>&1
    rc=$?; check "perfprofile-perf-$op" $rc
    echo "[perfprofile perf $op] exit $rc: $(grep -E '^ +[0-9]+ +[0-9]+ +float' "$OUT/perfprofile-perf-$op.log")"
  done
  JCCL_ALGO=nccl timeout -k 5 240 "${JAVA[@]}" \
    -agentpath:$ap=start,event=ctimer,interval=${JCCL_GPU_PROFILE_INTERVAL:-100us},cstack=vm,ann,collapsed,file=$OUT/perfprofile-bench.txt \
    -cp "$CP" org.jccl.cuda.bench.NcclLaunchCostBench -g "$NGPU" --ops 1000 > "$OUT/perfprofile-bench.log" 2>&1
  check perfprofile-bench $?
  ls -la "$OUT"/perfprofile-*.txt
fi

if has versus; then # the tuner's all-reduce against NCCL's, both through jccl, rounds interleaved (NcclBench --versus);
  # JCCL_VERSUS_GPUS (default: 2 and all), JCCL_VERSUS_ALGOS (default nccl,auto,oneshot), JCCL_VERSUS_ROUNDS (default 9),
  # JCCL_VERSUS_RANGE (default "-b 8 -e 2M -f 2"); JCCL_VERSUS_RUNS: runs, each "TAG:JVM-OPTIONS" separated by ";" (e.g.
  # "t128:-Djccl.car.threads=128"; default one run, no tag, no options): logs versus-gN[-TAG].log
  IFS=';' read -r -a vruns <<< "${JCCL_VERSUS_RUNS:-:}"
  for vr in "${vruns[@]}"; do
    tag=${vr%%:*}; vopts=${vr#*:}
    for g in ${JCCL_VERSUS_GPUS:-$( [ "$NGPU" -gt 2 ] && echo 2 $NGPU || echo $NGPU )}; do
      log="$OUT/versus-g$g${tag:+-$tag}.log"
      # shellcheck disable=SC2086
      timeout -k 5 200 "${JAVA[@]}" $vopts -cp "$CP" org.jccl.cuda.bench.NcclBench -o allreduce ${JCCL_VERSUS_RANGE:--b 8 -e 2M -f 2} \
        -w 100 -g "$g" --versus "${JCCL_VERSUS_ALGOS:-nccl,auto,oneshot}" --rounds "${JCCL_VERSUS_ROUNDS:-9}" > "$log" 2>&1
      rc=$?; check "versus-g$g${tag:+-$tag}" $rc
      echo "[versus -g $g ${tag}] exit $rc after $(( $(date +%s) - start )) s"; grep -v '^WARNING' "$log" | grep -v '^#   ' | tail -22
    done
  done
fi

if has anchors; then # item 5: nccl-tests (-t N -g 1 and -g N, built here from .gpu/nccl-tests) against jccl perf
  # (-g N and --ranks N) for every collective nccl-tests has a perf binary for, cold (-n 20 -w 5) and steady
  # (-n 1000 -w 200), JCCL_GPU_ANCHOR_MAX (default 256M): anchors-summary.txt; JCCL_GPU_ANCHOR_STEADY_OPTS: more jccl perf
  # flags for the steady runs (e.g. --settle 2: perf's own timed loop compiled before it is timed)
  NT=/tmp/nt
  if [ -d .gpu/nccl-tests/src ]; then
    t0=$(date +%s)
    ( cd .gpu/nccl-tests && timeout -k 5 240 make -s -j"$(nproc)" -C src MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/usr \
        BUILDDIR=$NT NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 $NT/all_reduce_perf $NT/all_gather_perf \
        $NT/reduce_scatter_perf $NT/broadcast_perf $NT/alltoall_perf $NT/sendrecv_perf ) > "$OUT/nt-build.log" 2>&1
    rc=$?; check nt-build $rc; echo "[nccl-tests build] exit $rc, $(( $(date +%s) - t0 )) s"
  else
    echo "[anchors] .gpu/nccl-tests is missing (stage with JCCL_GPU_NCCL_TESTS=<nccl-tests tree>): jccl perf only"
  fi
  cli=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector
       -cp ".gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/cli-lib/*" org.jccl.cli.Main perf)
  A=(-b 8 -e "${JCCL_GPU_ANCHOR_MAX:-256M}" -f 8)
  for op in ${JCCL_GPU_ANCHOR_OPS:-all_reduce all_gather reduce_scatter broadcast alltoall sendrecv}; do
    jop=${op//_/}
    for it in "cold:-n 20 -w 5" "steady:-n 1000 -w 200"; do
      n=${it%%:*}; iters=${it#*:}
      if [ -x $NT/${op}_perf ]; then
        for how in "t${NGPU}g1:-t $NGPU -g 1" "g${NGPU}:-g $NGPU"; do
          [ "$n" = steady ] && [ "${how%%:*}" = "g${NGPU}" ] && continue
          timeout -k 5 90 $NT/${op}_perf ${how#*:} "${A[@]}" $iters > "$OUT/an-$op-nt-${how%%:*}-$n.log" 2>&1
          rc=$?; check "an-$op-nt-${how%%:*}-$n" $rc
        done
      fi
      for how in "g${NGPU}:-g $NGPU" "ranks${NGPU}:--ranks $NGPU"; do
        [ "$n" = steady ] && [ "${how%%:*}" = "ranks${NGPU}" ] && continue
        extra=(); [ "$n" = steady ] && extra=(${JCCL_GPU_ANCHOR_STEADY_OPTS:-})
        timeout -k 5 120 "${cli[@]}" $jop --backend nccl ${how#*:} "${A[@]}" $iters "${extra[@]}" > "$OUT/an-$op-jccl-${how%%:*}-$n.log" 2>&1
        rc=$?; check "an-$op-jccl-${how%%:*}-$n" $rc
      done
      echo "[anchors $op $n] done after $(( $(date +%s) - start )) s"
    done
  done
  $PY - "$OUT" "$NGPU" <<'PYEOF' | tee "$OUT/anchors-summary.txt"
import sys, os, re
out, g = sys.argv[1], sys.argv[2]
def rows(f):
    d = {}
    try:
        for line in open(f):
            w = line.split()
            if len(w) >= 9 and w[0].isdigit() and w[1].isdigit():
                try: d[int(w[0])] = (float(w[5]), w[8])  # out-of-place time (us), #wrong
                except ValueError: pass
    except OSError: pass
    return d
ops = sorted({f.split("-")[1] for f in os.listdir(out) if f.startswith("an-")})
cols = [("nt", f"t{g}g1", "cold"), ("nt", f"g{g}", "cold"), ("jccl", f"g{g}", "cold"), ("jccl", f"ranks{g}", "cold"),
        ("nt", f"t{g}g1", "steady"), ("jccl", f"g{g}", "steady")]
for op in ops:
    d = {c: rows(f"{out}/an-{op}-{c[0]}-{c[1]}-{c[2]}.log") for c in cols}
    print(f"== {op}, float, out of place, time (us); ratio = jccl / nccl-tests -t {g} -g 1 (same iterations)")
    print(f"{'bytes':>10} " + " ".join(f"{c[0]+' '+c[1]+' '+c[2]:>18}" for c in cols) + f" {'cold -g':>8} {'cold ranks':>10} {'steady -g':>9}")
    for b in sorted(set().union(*[set(v) for v in d.values()])):
        t = [d[c].get(b, (float('nan'), '-'))[0] for c in cols]
        wrong = [d[c].get(b, (0, '0'))[1] for c in cols if c[0] == "jccl"]
        flag = "" if all(w in ("0", "N/A", "-") for w in wrong) else "  WRONG " + ",".join(wrong)
        print(f"{b:>10} " + " ".join(f"{x:>18.2f}" for x in t) + f" {t[2]/t[0]:>8.2f} {t[3]/t[0]:>10.2f} {t[5]/t[4]:>9.2f}" + flag)
PYEOF
fi

if has kit; then # the conformance kit on 2 and 4 GPUs (threads and processes; JCCL_CHECK=1 mismatches): kit.log
  junit kit 540 --select-class org.jccl.cuda.NcclConformanceTest
fi

if has car; then # jccl's own all-reduce kernels (CustomAllReduce): correctness, graphs, a missing peer
  junit car 150 --select-class org.jccl.cuda.CustomAllReduceTest
fi

if has carbench; then # all-reduce through jccl: NCCL vs jccl's kernels (JCCL_ALGO) in the same call; JCCL_CAR_GPUS="2 4";
  # JCCL_CAR_VARIANTS="512:32 256:64": kernel grids to compare (threads per block : most blocks, -Djccl.car.*)
  tmp=$(mktemp -d)
  variants=${JCCL_CAR_VARIANTS:-512:32}
  for g in ${JCCL_CAR_GPUS:-2}; do
    [ "$g" -le "$NGPU" ] || continue
    for run in $(seq 1 "${JCCL_CAR_RUNS:-2}"); do
      logs=(); heads=()
      for job in nccl:- auto:- $(for v in $variants; do for a in ${JCCL_CAR_ALGOS:-oneshot twoshot ll}; do echo $a:$v; done; done); do
        algo=${job%%:*}; v=${job#*:}; props=()
        [ "$v" != - ] && props=(-Djccl.car.threads=${v%%:*} -Djccl.car.maxBlocks=${v#*:})
        name=$algo${v/:/x}; name=${name//-/}
        JCCL_ALGO=$algo timeout -k 5 60 "${JAVA[@]}" "${props[@]}" -cp "$CP" org.jccl.cuda.bench.NcclBench -o allreduce -b 8 -e 1M -f 2 \
          -w 100 -g "$g" --no-overhead > "$tmp/$name.log" 2>&1
        rc=$?; check "carbench-g$g-$name-$run" $rc
        { echo "==== JCCL_ALGO=$algo ${props[*]}, $g GPUs, run $run (exit $rc)"; cat "$tmp/$name.log"; } >> "$OUT/carbench-g$g.log"
        logs+=("$tmp/$name.log"); heads+=("$name")
      done
      echo "== all-reduce float sum, $g GPUs (one thread each), run $run: time (us) per JCCL_ALGO[threads x max blocks]; /n = ratio to nccl"
      awk -v heads="${heads[*]}" 'FNR==1 {f++} /^ +[0-9]+ +[0-9]+ +float/ {t[f, $1]=$5; if (f==1) sizes[++n]=$1}
           END {k=split(heads, h, " "); printf "%10s", "bytes"; for (j=1;j<=k;j++) printf " %13s", h[j];
                for (j=2;j<=k;j++) printf " %8s", "/n"; printf "\n";
                for (i=1;i<=n;i++) {s=sizes[i]; printf "%10d", s; for (j=1;j<=k;j++) printf " %13.2f", t[j,s];
                  for (j=2;j<=k;j++) printf " %8.2f", t[j,s]/t[1,s]; printf "\n"}}' \
        "${logs[@]}" | tee -a "$OUT/carbench-summary.txt"
    done
  done
  rm -rf "$tmp"
fi

if has faults; then # the fault and JCCL_CHECK process tests alone
  junit faults 240 --select-method 'org.jccl.cuda.NcclProcessTest#killedPeerFailsPendingWorkByTheDeadlineAndTheSurvivorRecovers' \
    --select-method 'org.jccl.cuda.NcclProcessTest#jcclCheckFailsMismatchesOnEveryRankAndNamesTheMissingRank' \
    --select-method 'org.jccl.cuda.NcclProcessTest#survivorsShrinkExcludingTheKilledRankAndAllReduceCorrectly' \
    --select-method 'org.jccl.cuda.NcclProcessTest#heartbeatsNameTheKilledRankWithinTwoIntervalsAndTheSurvivorsShrink' \
    --select-method 'org.jccl.cuda.NcclProcessTest#abortOnOneRankFailsTheOthersWaitNamingIt'
  # a mixed torch/jccl NCCL job: both sides on torch's NCCL
  JCCL_NCCL_LIBRARY=${TORCH_NCCL:-${JCCL_NCCL_LIBRARY:-}} junit torch-nccl 300 --select-class org.jccl.cuda.TorchNcclTest
fi

if has overhead; then # jccl's host time per call against the bare NCCL call, alone (no sweep); base build too
  for rep in $(seq 1 "${JCCL_GPU_OVERHEAD_REPS:-2}"); do
    for lib in ${JCCL_GPU_OVERHEAD_LIBS:-lib-base lib}; do
      [ -d ".gpu/$lib" ] || continue
      cp=.gpu/lib/jccl-bench.jar:.gpu/$lib/jccl-core.jar:.gpu/$lib/jccl-cuda.jar # this tree's NcclBench for every build
      timeout -k 10 150 "${JAVA[@]}" -cp "$cp" org.jccl.cuda.bench.NcclBench -o none > "$OUT/overhead-$lib-$rep.log" 2>&1
      rc=$?; check "overhead-$lib-$rep" $rc
      echo "[overhead $lib run $rep] exit $rc after $(( $(date +%s) - start )) s"
      sed -n '/^# rank/,$p' "$OUT/overhead-$lib-$rep.log" | grep -v '^# jccl-'
    done
  done
  if [ -n "${JCCL_GPU_GC:-}" ]; then # the same with another collector (e.g. -XX:+UseParallelGC): GC barriers' share
    cp=.gpu/lib/jccl-bench.jar:.gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar
    timeout -k 10 150 "${JAVA[@]}" $JCCL_GPU_GC -cp "$cp" org.jccl.cuda.bench.NcclBench -o none > "$OUT/overhead-gc.log" 2>&1
    rc=$?; check overhead-gc $rc
    echo "[overhead lib $JCCL_GPU_GC] exit $rc after $(( $(date +%s) - start )) s"
    sed -n '/^# rank/,$p' "$OUT/overhead-gc.log" | grep -v '^# jccl-'
  fi
fi

if has profile; then # async-profiler (cpu time, 100 us) over jccl's enqueue and blocking paths: collapsed stacks
  ap=$PWD/.gpu/lib/libasyncProfiler.so
  timeout -k 10 150 "${JAVA[@]}" -Djccl.bench.profileBatches=400 \
    -agentpath:$ap=start,event=ctimer,interval=${JCCL_GPU_PROFILE_INTERVAL:-100us},cstack=vm,ann,file=$OUT/profile-collapsed.txt,collapsed \
    -cp "$CP" org.jccl.cuda.bench.NcclBench -o none > "$OUT/profile.log" 2>&1
  rc=$?; check profile $rc
  echo "[profile] exit $rc after $(( $(date +%s) - start )) s; $(wc -l < "$OUT/profile-collapsed.txt" 2>/dev/null) stacks"
  grep -i 'error\|warn' "$OUT/profile.log" | head -5
fi

if has tests-nb; then
  JCCL_NCCL_NONBLOCKING=1 junit tests-nb 200 --select-class org.jccl.cuda.NcclFeaturesTest \
    --select-method 'org.jccl.cuda.NcclProcessTest#killedPeerFailsPendingWorkByTheDeadlineAndTheSurvivorRecovers'
fi

if has bench; then
  timeout -k 10 200 "${JAVA[@]}" -cp "$CP" org.jccl.cuda.bench.NcclBench > "$OUT/bench.log" 2>&1
  rc=$?; check bench $rc
  echo "[bench] exit $rc after $(( $(date +%s) - start )) s"
fi

if has torch; then
  PYTHONUNBUFFERED=1 timeout -k 10 200 "$PY" .gpu/torch_allreduce.py > "$OUT/torch.log" 2>&1
  rc=$?; check torch $rc
  echo "[torch] exit $rc after $(( $(date +%s) - start )) s"
fi

if has matrix; then
  left=$(( 585 - ($(date +%s) - start) ))
  [ "$left" -lt 60 ] && left=60
  junit matrix "$left" --select-class org.jccl.cuda.NcclThreadsMatrixTest \
    --select-method 'org.jccl.cuda.NcclProcessTest#matrixWithOneProcessPerGpu'
fi

for f in bench torch; do
  [ -f "$OUT/$f.log" ] || continue
  echo "== $f: 8 B, 16 MiB, 1 GiB rows; host overhead"
  awk '/^# [a-z]/ {op=$2} /^# host time/ {ov=1}
       !ov && ($1=="8" || $1=="16777216" || $1=="1073741824") {print op, $0}
       ov && !/^#   / {print}
       /^# torch|^# jccl NcclBench/ {print}' "$OUT/$f.log"
done
echo "done after $(( $(date +%s) - start )) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED phases: ${failed[*]}"
  exit 1
fi
echo "all phases passed: ${PHASES}"
