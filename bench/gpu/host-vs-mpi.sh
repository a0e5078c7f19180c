#!/usr/bin/env bash
# jccl's host engine against Open MPI (default, and each of its other shared-memory configurations)
# and Gloo, on the GPU machine's host CPUs, one run, every number written as perf JSON.
#
# Stage (here): bench/gpu/run-gpu.sh stage (it makes .gpu), then
#   mvn -o -q -DskipTests package -pl jccl-core,jccl-cli && mkdir -p .gpu/cli &&
#   cp jccl-cli/target/jccl-cli-*-SNAPSHOT.jar jccl-cli/target/lib/*.jar .gpu/cli/
# (a -sources/-javadoc jar there is harmless), then on the device, from the repository root:
#   HOSTCMP_PHASES=allreduce,twocore,others bash bench/gpu/host-vs-mpi.sh
# with carry [".jre", ".gpu"]. Everything lands in $OUT/hostcmp.tgz (JSON per run + logs);
# bench/host_report.py turns it into the tables of docs/BENCHMARKS.md.
#
# Phases (HOSTCMP_PHASES, comma separated; HOSTCMP_RANKS, default "2 4 8 16"):
#   allreduce  all-reduce float sum, 16 B..64 MiB (x4): jccl cold (nccl-tests' -n 20 -w 5) and
#              steady (-n 2000 -w 500 to 256 KiB, -n 40 -w 10 above); Open MPI cold (-n 20 -w 5) and
#              adaptive (~0.1 s per size) in every configuration below; Gloo (2 and 8 ranks)
#   sendrecv   a ring send/recv step (each rank sends to the next, receives from the previous), 8 B..64 MiB (x8),
#              HOSTCMP_SR_RANKS (default "2 4"): jccl cold and steady, blocking (-z 1: sendRecv) and async (-z 0);
#              Open MPI (MPI_Sendrecv) cold and adaptive in every configuration; 2 ranks on 2 cores, cold, 3 runs each
#   srsc       send/recv ring steps 4 KiB..16 MiB, steady (-n 200 -w 20): single copy (the default) against
#              JCCL_SHM_SINGLE_COPY_BYTES=off, interleaved twice, at HOSTCMP_SR_RANKS; Open MPI default and cma
#   cmacoll    all-gather, gather, broadcast, all-to-all, scatter 1..64 MiB: peers' unregistered native send buffers
#              read in place (process_vm_readv) against JCCL_SHM_SINGLE_COPY_BYTES=off, at HOSTCMP_CMA_RANKS; Open MPI
#   srab       send/recv ring steps 8 B..4 KiB, steady (-n 20000 -w 2000), the builds in HOSTCMP_SMALL_BUILDS (default
#              "cli-base cli") interleaved, three times, at HOSTCMP_SR_RANKS; Open MPI default and cma
#   twocore    2 ranks on 2 cores (taskset -c 0,1 for every process): jccl cold and Open MPI cold, 3 runs each
#              (HOSTCMP_TWOCORE_REPS)
#   others     the other collectives, 16 B..64 MiB (x16; HOSTCMP_OTHERS_MAX, HOSTCMP_OTHERS_RANKS, HOSTCMP_OTHERS_COLLS): jccl steady
#              (HOSTCMP_OTHERS_ITERS, default "-n 200 -w 20") and cold (HOSTCMP_OTHERS_COLD=0: steady only),
#              Open MPI default and best
#   registered all-reduce, all-gather, broadcast, reduce-scatter 1..64 MiB with buffers from comm.allocate
#              (-Djccl.perf.registered=true) next to plain ones (HOSTCMP_REG_RANKS, default "8 16")
#   algo       steady all-reduce 256 B..256 KiB (x2) with each shared-memory algorithm forced
#              (JCCL_ALGO=oneshot, rsag) at 2, 4, 8 and 16 ranks (HOSTCMP_ALGO_RANKS): where the tuner should switch
#   probe      what makes small all-reduces slow: 16 ranks steady 16 B..4 KiB with pinning on and off
#              (JCCL_AFFINITY), alternating, twice; 2 and 4 ranks 16 B alone at -n 2000 and -n 20000
#              (is the first size of a sweep slow because it is first?)
#   warmab     16 ranks, steady all-reduce 16 B..4 KiB, JCCL_WARMUP default (3 s) against 10, alternating, twice
#   async      steady all-reduce 16 B..1 MiB with async calls (-z 0, jccl perf's default) and blocking ones (-z 1),
#              HOSTCMP_ASYNC_RANKS (default "2 16")
#   asyncab    async all-reduce (-z 0) 16 B..64 KiB, steady and cold, .gpu/cli-base against .gpu/cli (HOSTCMP_ASYNC_BUILDS), interleaved, twice
#              (HOSTCMP_ASYNC_RANKS), and this build's blocking calls once
#   asynctwocore  every process on 2 cores (taskset -c 0,1), all-reduce 8 B..1 MiB (x8) cold: async (-z 0, jccl perf's
#              default) with .gpu/cli-base against .gpu/cli interleaved, this build blocking (-z 1), Open MPI (blocking);
#              HOSTCMP_A2C_RANKS (default "2 4"), HOSTCMP_TWOCORE_REPS rounds (default 3)
#   coldab     cold all-reduce 8 B..16 MiB (x8) as README's command runs it (-c 1): .gpu/cli-base against .gpu/cli
#              interleaved, blocking and async, 2 ranks on 2 cores (taskset -c 0,1) and 16 ranks on the host, with the
#              warm-ups' lengths (JCCL_DEBUG=INFO) and the first calls; Open MPI cold; tables by coldab-summary.py
#   readme2c   README's ./jccl perf allreduce --ranks 4 with its defaults, every process on 2 cores (taskset -c 0,1),
#              .gpu/cli-base against .gpu/cli interleaved, HOSTCMP_TWOCORE_REPS rounds; tables by coldab-summary.py
#   small2c    2 ranks on 2 cores (taskset -c 0,1), blocking all-reduce 8 B..4 KiB (x8), steady (-n 200000 -w 20000)
#              and cold (-n 20 -w 5, 8 B..16 MiB), the builds in HOSTCMP_ASYNC_BUILDS interleaved, Open MPI the same
#              way in each round, HOSTCMP_TWOCORE_REPS rounds; with .gpu/pp/PingPong.class, Java's floor for
#              the same exchange (two processes, one cache line each way) in each round
#   wutime     the JIT warm-up's length (JCCL_DEBUG=INFO's line in the run log): 2 ranks on 2 cores (taskset -c 0,1),
#              2 and 16 ranks on the whole host, each build in HOSTCMP_ASYNC_BUILDS, twice
#   calls2k    2 ranks, blocking 8 B all-reduce, -n 2000 and -n 20000 (-w 5: a caller's 2000th call falls in the timed
#              loop), on the whole host and on 2 cores (taskset -c 0,1), the builds in HOSTCMP_ASYNC_BUILDS interleaved,
#              HOSTCMP_TWOCORE_REPS rounds; with .gpu/line_rtt (bench/floor/line_rtt.c), the cache-line round trip
#              between CPUs 0 and 1 before each round
#   aot        JCCL_AOT=on against off, cold all-reduce 16 B..16 MiB (x4), 2 ranks on the whole host and on 2 cores
#              (taskset -c 0,1), alternating, HOSTCMP_AOT_REPS times (default 3), after one training run (a fresh cache)
#   jitpin     16 ranks, steady all-reduce 16 B..4 KiB and reduce-scatter 256 B..64 KiB: .gpu/cli-base against
#              .gpu/cli interleaved, twice, then cli-base with -XX:CICompilerCount=2
#   jitcc      16 ranks, steady all-reduce 16 B..4 KiB and reduce-scatter 256 B..64 KiB, rank JVMs with their default
#              JIT compiler threads against -XX:CICompilerCount=2, interleaved, twice
#   hostprof   where small rooted collectives spend their time: 4 ranks, 16 B, steady (-n 300000), every rank JVM under
#              async-profiler (ctimer, HOSTCMP_PROF_INTERVAL default 50us; .gpu/libasyncProfiler.so), collapsed stacks
#              per rank in prof-<coll>-<pid>.txt; HOSTCMP_PROF_COLLS (default "gather broadcast allgather")
#   smallab    small sizes (16 B, 256 B) of every collective at HOSTCMP_SMALL_RANKS (default 4), steady (-n 100000
#              -w 20000), the builds in HOSTCMP_SMALL_BUILDS (default "cli-base cli") interleaved, twice; Open MPI (default
#              and cma) once, for reference; HOSTCMP_SMALL_COLLS: which collectives (default all eight)
#   tosteady   all-reduce 16 B..16 MiB (x4), cold JVM, no warm-up calls (-w 0), -n 2000, --to-steady: each
#              size's time from its first call to steady state (JSON to_steady_us), 2, 4, 8, 16 ranks
#   bisect     cold all-reduce 16 B..4 MiB (x4) with each build in .gpu/cli-<name> (HOSTCMP_BUILDS="cli-<name> ..."),
#              this one (.gpu/cli) and this one with JCCL_ONESHOT_MAX_BYTES=32768, at HOSTCMP_BIS_RANKS (default
#              "2 8"), HOSTCMP_BIS_REPS times (default 2), then this build once more with the JIT's deoptimizations
#              logged (deopt-r<N>-<pid>.log: which compiled code the first calls of each size threw away)
#   ab         steady all-reduce 16 B..256 KiB and 1..16 MiB, 2 and 8 ranks, with the build in .gpu/cli-base
#              and this one (.gpu/cli), interleaved, twice: the regression check
#   envab      settings against each other (HOSTCMP_ENVAB: "TAG:VAR=VALUE VAR=VALUE;TAG:..."; default the slot ring
#              JCCL_SHM_SLOTS=4 x 256 KiB against 16 x 64 KiB, the same memory), this build, steady, in the ranges of
#              HOSTCMP_ENVAB_RANGES ("TAG:PERF FLAGS;..."; default small 16 B..4 KiB x16 -n 50000 -w 10000 and large
#              64 KiB..16 MiB x4 -n 100 -w 20), of HOSTCMP_ENVAB_COLLS (default "allreduce reduce broadcast gather
#              scatter") at HOSTCMP_ENVAB_RANKS (default "4 8"), interleaved, twice; HOSTCMP_ENVAB_MPI=1: Open MPI
#              (default and cma, adaptive) over the same collectives and ranks, 16 B..16 MiB x4 (HOSTCMP_ENVAB_MPI_RANGE), once (its files named
#              after HOSTCMP_ENVAB_LABEL); HOSTCMP_ENVAB_REPS rounds (default 2); HOSTCMP_ENVAB_PIN=1: N ranks (jccl's and
#              Open MPI's) on CPUs 0..N-1 only (taskset), so that every run has the same placement
#   status     where every collective stands: jccl perf all (every collective in one JVM), steady (-n 2000 -w 500),
#              16 B..HOSTCMP_STATUS_MAX (default 1M) x4, HOSTCMP_STATUS_REPS passes (default 2) over HOSTCMP_STATUS_RANKS
#              (default $RANKS); Open MPI (every configuration, adaptive, all nine calls) once; Gloo at 2 and 8 ranks
#              (HOSTCMP_STATUS_GLOO, "" for none); then one cold pass (-n 20 -w 5, a fresh JVM per rank count, the
#              calls in perf all's order) with Open MPI cold; the line round trip of CPUs 0-1 before each pass.
#              Tables by bench/gpu/status-summary.py
# Open MPI configurations: default (vader, its default single-copy mechanism); cma (vader with
# single_copy_mechanism cma); han (coll han preferred) when ompi_info lists it; xhc likewise.
cd "$(dirname "$0")/../.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
OUT=${OUT:-.gpu/out}
R="$OUT/hostcmp"
mkdir -p "$R"
PHASES=",${HOSTCMP_PHASES:-allreduce,twocore},"
RANKS=${HOSTCMP_RANKS:-2 4 8 16}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/run.log"; }
{
  echo "host $(hostname): $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "load at start: $(cat /proc/loadavg)"
  lscpu | grep -E 'NUMA|Socket|Thread|L3' ; mpirun --version 2>&1 | head -1
} | tee "$R/machine.txt"

# ---- Open MPI driver and configurations ----
MPIC=bench/mpi/mpi_coll
if command -v mpicc >/dev/null; then
  mpicc -O2 -o "$MPIC" bench/mpi/mpi_coll.c -lm 2>>"$R/run.log" || log "mpicc failed"
fi
[ -x "$MPIC" ] || { [ -x .gpu/mpi_coll ] && MPIC=.gpu/mpi_coll; }
ompi_info --param btl vader --level 9 2>/dev/null | grep -i single_copy > "$R/ompi-vader.txt"
ompi_info 2>/dev/null | grep -E "MCA coll" > "$R/ompi-coll.txt"
CONFIGS="default cma"
grep -q "coll: han" "$R/ompi-coll.txt" && CONFIGS="$CONFIGS han"
grep -q "coll: xhc" "$R/ompi-coll.txt" && CONFIGS="$CONFIGS xhc"
log "Open MPI configurations: $CONFIGS (driver $MPIC)"
mpiflags() { # CONFIG -> mpirun flags
  case $1 in
    default) echo "" ;;
    cma) echo "--mca btl_vader_single_copy_mechanism cma" ;;
    han) echo "--mca coll_han_priority 100" ;;
    xhc) echo "--mca coll_xhc_priority 100" ;;
  esac
}
mpi() { # mpi N CONFIG LABEL COLLS ARGS... ; extra leading "taskset -c 0,1" via $PIN
  local n=$1 cfg=$2 label=$3 colls=$4; shift 4
  # shellcheck disable=SC2046
  timeout 300 $PIN mpirun -np "$n" --bind-to none --oversubscribe $(mpiflags "$cfg") "$MPIC" "$colls" "$@" \
    --label "Open MPI $cfg" --json "$R/mpi-$label-$cfg-r$n.json" > "$R/mpi-$label-$cfg-r$n.log" 2>&1
  log "mpi $label $cfg ranks $n: exit $?"
}
jccl() { # jccl N LABEL COLL ARGS...
  local n=$1 label=$2 coll=$3; shift 3
  # shellcheck disable=SC2086 # JOPTS: extra JVM flags
  timeout 300 $PIN .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector ${JOPTS:-} -cp ".gpu/${CLI:-cli}/*" \
    org.jccl.cli.Main perf "$coll" --ranks "$n" -z "${ZMODE:-1}" -c "${CHECK:-0}" "$@" --json "$R/jccl-$label-r$n.json" > "$R/jccl-$label-r$n.log" 2>&1
  log "jccl $label ranks $n: exit $? $(grep -m1 -o 'JIT warm-up.*ms' "$R/jccl-$label-r$n.log")"
}
PIN=""
if [[ $PHASES == *,allreduce,* ]]; then
  for n in $RANKS; do
    jccl "$n" ar-cold allreduce -b 16 -e 64M -f 4
    jccl "$n" ar-steady-small allreduce -b 16 -e 256K -f 4 -n 2000 -w 500
    jccl "$n" ar-steady-large allreduce -b 1M -e 64M -f 4 -n 40 -w 10
    mpi "$n" default ar-cold allreduce -b 16 -e 64M -f 4 -n 20 -w 5 -c 0
    for cfg in $CONFIGS; do mpi "$n" "$cfg" ar allreduce -b 16 -e 64M -f 4 -T 0.1 -c 0; done
    if [ "$n" = 2 ] || [ "$n" = 8 ]; then
      timeout 300 python3 bench/gloo/gloo_bench.py allreduce --ranks "$n" -b 16 -e 64M -f 4 -T 0.1 -c 0 \
        --json "$R/gloo-ar-r$n.json" > "$R/gloo-ar-r$n.log" 2>&1
      log "gloo ar ranks $n: exit $?"
    fi
  done
fi
if [[ $PHASES == *,bisect,* ]]; then # cold all-reduce with the builds in .gpu/cli-* (HOSTCMP_BUILDS) and this one
  export JCCL_DEBUG=INFO
  for rep in $(seq 1 "${HOSTCMP_BIS_REPS:-2}"); do
    for b in ${HOSTCMP_BUILDS:-} cli cli-os32k; do
      for n in ${HOSTCMP_BIS_RANKS:-2 8}; do
        if [ "$b" = cli-os32k ]; then
          JCCL_ONESHOT_MAX_BYTES=32768 CLI=cli jccl "$n" "bis-$b-$rep" allreduce -b 16 -e 4M -f 4
        else
          CLI=$b jccl "$n" "bis-$b-$rep" allreduce -b 16 -e 4M -f 4
        fi
      done
    done
  done
  for n in ${HOSTCMP_BIS_RANKS:-2 8}; do JOPTS="-Xlog:deoptimization=debug:file=$R/deopt-r$n-%p.log:uptime" jccl $n bis-deopt allreduce -b 16 -e 4M -f 4; done
  JOPTS=""; unset JCCL_DEBUG
fi
if [[ $PHASES == *,twocore,* ]]; then
  PIN="taskset -c 0,1"
  for rep in $(seq 1 "${HOSTCMP_TWOCORE_REPS:-3}"); do
    jccl 2 twocore-cold$rep allreduce -b 8 -e 16M -f 8
    mpi 2 default twocore-cold$rep allreduce -b 8 -e 16M -f 8 -n 20 -w 5 -c 0
  done
  PIN=""
fi
if [[ $PHASES == *,sendrecv,* ]]; then # a ring send/recv step (sendRecv, MPI_Sendrecv), 8 B..64 MiB (x8)
  for n in ${HOSTCMP_SR_RANKS:-2 4}; do
    jccl "$n" sr-cold sendrecv -b 8 -e 64M -f 8
    ZMODE=0 jccl "$n" sr-cold-z0 sendrecv -b 8 -e 64M -f 8
    jccl "$n" sr-steady-small sendrecv -b 8 -e 256K -f 8 -n 2000 -w 500
    jccl "$n" sr-steady-large sendrecv -b 2M -e 64M -f 8 -n 40 -w 10
    ZMODE=0 jccl "$n" sr-steady-small-z0 sendrecv -b 8 -e 256K -f 8 -n 2000 -w 500
    mpi "$n" default sr-cold sendrecv -b 8 -e 64M -f 8 -n 20 -w 5 -c 0
    for cfg in $CONFIGS; do mpi "$n" "$cfg" sr sendrecv -b 8 -e 64M -f 8 -T 0.1 -c 0; done
  done
  PIN="taskset -c 0,1"
  for rep in $(seq 1 "${HOSTCMP_TWOCORE_REPS:-3}"); do
    jccl 2 twocore-sr-cold$rep sendrecv -b 8 -e 16M -f 8
    mpi 2 default twocore-sr-cold$rep sendrecv -b 8 -e 16M -f 8 -n 20 -w 5 -c 0
  done
  PIN=""
fi
OTHERS_MAX=${HOSTCMP_OTHERS_MAX:-64M}
if [[ $PHASES == *,others,* ]]; then
  for n in ${HOSTCMP_OTHERS_RANKS:-$RANKS}; do
    for c in ${HOSTCMP_OTHERS_COLLS:-allgather reducescatter broadcast reduce alltoall gather scatter}; do
      # shellcheck disable=SC2086 # HOSTCMP_OTHERS_ITERS: the steady runs' -n/-w
      jccl "$n" "$c-steady" "$c" -b 16 -e "$OTHERS_MAX" -f 16 ${HOSTCMP_OTHERS_ITERS:--n 200 -w 20}
      [ "${HOSTCMP_OTHERS_COLD:-1}" = 0 ] || jccl "$n" "$c-cold" "$c" -b 16 -e "$OTHERS_MAX" -f 16
    done
    for cfg in $CONFIGS; do
      colls=${HOSTCMP_OTHERS_COLLS:-allgather reducescatter broadcast reduce alltoall gather scatter}
      mpi "$n" "$cfg" others "${colls// /,}" -b 16 -e "$OTHERS_MAX" -f 16 -T 0.05 -c 0
    done
  done
fi
if [[ $PHASES == *,registered,* ]]; then
  for n in ${HOSTCMP_REG_RANKS:-8 16}; do
    jccl "$n" reg-plain allreduce -b 1M -e 64M -f 4 -n 40 -w 10
    JOPTS=-Djccl.perf.registered=true jccl "$n" reg-registered allreduce -b 1M -e 64M -f 4 -n 40 -w 10
    for c in allgather broadcast reducescatter; do
      jccl "$n" "reg-plain-$c" "$c" -b 1M -e 64M -f 4 -n 40 -w 10
      JOPTS=-Djccl.perf.registered=true jccl "$n" "reg-registered-$c" "$c" -b 1M -e 64M -f 4 -n 40 -w 10
    done
  done
fi
if [[ $PHASES == *,algo,* ]]; then
  for n in ${HOSTCMP_ALGO_RANKS:-2 4 8 16}; do
    for a in oneshot rsag; do
      JCCL_ALGO=$a jccl "$n" "algo-$a" allreduce -b 256 -e 256K -f 2 -n 1000 -w 200
    done
  done
fi
if [[ $PHASES == *,probe,* ]]; then
  for rep in 1 2; do
    jccl 16 "probe-pin-$rep" allreduce -b 16 -e 4K -f 4 -n 2000 -w 500
    JCCL_AFFINITY=off jccl 16 "probe-nopin-$rep" allreduce -b 16 -e 4K -f 4 -n 2000 -w 500
  done
  for n in 2 4; do
    jccl "$n" probe-alone-2k allreduce -b 16 -e 16 -n 2000 -w 500
    jccl "$n" probe-alone-20k allreduce -b 16 -e 16 -n 20000 -w 500
  done
fi
if [[ $PHASES == *,warmab,* ]]; then # 16 ranks' first sizes: the warm-up's default 3 s bound against 10 s
  for rep in 1 2; do
    JCCL_DEBUG=INFO jccl 16 "warmab-w3-$rep" allreduce -b 16 -e 4K -f 4 -n 2000 -w 500
    JCCL_DEBUG=INFO JCCL_WARMUP=10 jccl 16 "warmab-w10-$rep" allreduce -b 16 -e 4K -f 4 -n 2000 -w 500
  done
fi
if [[ $PHASES == *,async,* ]]; then # async calls (-z 0, jccl perf's default) against blocking (-z 1), steady
  for n in ${HOSTCMP_ASYNC_RANKS:-2 16}; do
    for z in 0 1; do
      ZMODE=$z jccl "$n" "async-z$z" allreduce -b 16 -e 1M -f 4 -n 2000 -w 500
    done
  done
fi
if [[ $PHASES == *,asyncab,* ]]; then # async calls (-z 0): the build in .gpu/cli-base against this one, interleaved
  for rep in 1 2; do
    for n in ${HOSTCMP_ASYNC_RANKS:-2 16}; do
      for v in ${HOSTCMP_ASYNC_BUILDS:-cli-base cli}; do
        ZMODE=0 CLI=$v jccl "$n" "asyncab-$v-$rep" allreduce -b 16 -e 64K -f 4 -n 2000 -w 500
        ZMODE=0 CLI=$v jccl "$n" "asyncab-cold-$v-$rep" allreduce -b 16 -e 64K -f 4
      done
      [ "$rep" = 1 ] && jccl "$n" "asyncab-z1" allreduce -b 16 -e 64K -f 4 -n 2000 -w 500
    done
  done
fi
if [[ $PHASES == *,asynctwocore,* ]]; then # jccl perf's default async calls (-z 0) with every process on 2 cores:
  # .gpu/cli-base against .gpu/cli (HOSTCMP_ASYNC_BUILDS), interleaved, this build's blocking calls (-z 1) and Open MPI
  # (blocking, nccl-tests' counts) in the same round; 2 and 4 ranks (HOSTCMP_A2C_RANKS), HOSTCMP_TWOCORE_REPS rounds
  PIN="taskset -c 0,1"
  for rep in $(seq 1 "${HOSTCMP_TWOCORE_REPS:-3}"); do
    for n in ${HOSTCMP_A2C_RANKS:-2 4}; do
      for v in ${HOSTCMP_ASYNC_BUILDS:-cli-base cli}; do
        ZMODE=0 CLI=$v jccl "$n" "a2c-$v-$rep" allreduce -b 8 -e 1M -f 8
      done
      jccl "$n" "a2c-z1-$rep" allreduce -b 8 -e 1M -f 8
      mpi "$n" default "a2c-$rep" allreduce -b 8 -e 1M -f 8 -n 20 -w 5 -c 0
    done
  done
  PIN=""
fi
if [[ $PHASES == *,coldab,* ]]; then # cold all-reduce as README's command runs it (the check on, -c 1): .gpu/cli-base
  # against .gpu/cli interleaved, blocking (-z 1) and async (-z 0), 2 ranks on 2 cores (taskset -c 0,1) and 16 ranks on
  # the host; Open MPI cold in the same round; HOSTCMP_TWOCORE_REPS rounds (16 ranks: the first two)
  export JCCL_DEBUG=INFO
  for rep in $(seq 1 "${HOSTCMP_TWOCORE_REPS:-3}"); do
    PIN="taskset -c 0,1"
    for v in ${HOSTCMP_ASYNC_BUILDS:-cli-base cli}; do
      for z in 1 0; do CHECK=1 ZMODE=$z CLI=$v jccl 2 "cab2c-$v-z$z-$rep" allreduce -b 8 -e 16M -f 8; done
    done
    mpi 2 default "cab2c-$rep" allreduce -b 8 -e 16M -f 8 -n 20 -w 5 -c 0
    PIN=""
    if [ "$rep" -le 2 ]; then
      for v in ${HOSTCMP_ASYNC_BUILDS:-cli-base cli}; do CHECK=1 CLI=$v jccl 16 "cab16-$v-z1-$rep" allreduce -b 8 -e 16M -f 8; done
      mpi 16 default "cab16-$rep" allreduce -b 8 -e 16M -f 8 -n 20 -w 5 -c 0
    fi
  done
  unset JCCL_DEBUG
fi
if [[ $PHASES == *,readme2c,* ]]; then # README's command as a user on a 2-core machine runs it: ./jccl perf allreduce
  # --ranks 4 with its defaults (async, -c 1, -n 20 -w 5, 8 B..32 MiB), every process under taskset -c 0,1; .gpu/cli-base
  # against .gpu/cli interleaved, HOSTCMP_TWOCORE_REPS rounds; tables by coldab-summary.py
  export JCCL_DEBUG=INFO
  PIN="taskset -c 0,1"
  for rep in $(seq 1 "${HOSTCMP_TWOCORE_REPS:-3}"); do
    # shellcheck disable=SC2086 # HOSTCMP_README_ARGS: extra perf flags (e.g. -b 4M -e 16M for the large sizes alone)
    for v in ${HOSTCMP_ASYNC_BUILDS:-cli-base cli}; do CHECK=1 ZMODE=0 CLI=$v jccl 4 "rd2c-$v-z0-$rep" allreduce ${HOSTCMP_README_ARGS:-}; done
  done
  PIN=""
  unset JCCL_DEBUG
fi
if [[ $PHASES == *,small2c,* ]]; then # 2 ranks on 2 cores, blocking: small sizes steady, every size cold;
  # the builds interleaved, Open MPI in each round, Java's floor (PingPong) where staged
  PIN="taskset -c 0,1"
  for rep in $(seq 1 "${HOSTCMP_TWOCORE_REPS:-3}"); do
    if [ -f .gpu/pp/PingPong.class ]; then
      rm -f /dev/shm/pp0 /dev/shm/pp1
      $PIN .jre/bin/java -cp .gpu/pp PingPong 1 3000000 pause > /dev/null 2>&1 &
      $PIN .jre/bin/java -cp .gpu/pp PingPong 0 3000000 pause > "$R/floor-$rep.log" 2>&1
      wait
      rm -f /dev/shm/pp0 /dev/shm/pp1
      log "floor $rep: $(tail -1 "$R/floor-$rep.log")"
    fi
    for v in ${HOSTCMP_ASYNC_BUILDS:-cli-base cli}; do
      CLI=$v jccl 2 "s2c-steady-$v-$rep" allreduce -b 8 -e 4K -f 8 -n 200000 -w 20000
      CLI=$v jccl 2 "s2c-cold-$v-$rep" allreduce -b 8 -e 16M -f 8
    done
    mpi 2 default "s2c-steady-$rep" allreduce -b 8 -e 4K -f 8 -n 200000 -w 20000 -c 0
    mpi 2 default "s2c-cold-$rep" allreduce -b 8 -e 16M -f 8 -n 20 -w 5 -c 0
  done
  PIN=""
fi
if [[ $PHASES == *,calls2k,* ]]; then # a caller's 2000th call: the builds interleaved, whole host and 2 cores
  for rep in $(seq 1 "${HOSTCMP_TWOCORE_REPS:-3}"); do
    [ -x .gpu/line_rtt ] && log "calls2k $rep: line round trip CPUs 0-1 $(.gpu/line_rtt 0 1) ns"
    for v in ${HOSTCMP_ASYNC_BUILDS:-cli-base cli}; do
      for n in 2000 20000; do
        PIN="" CLI=$v jccl 2 "c2k-$v-n$n-$rep" allreduce -b 8 -e 8 -n "$n" -w 5
        PIN="taskset -c 0,1" CLI=$v jccl 2 "c2k2c-$v-n$n-$rep" allreduce -b 8 -e 8 -n "$n" -w 5
      done
    done
  done
  PIN=""
fi
if [[ $PHASES == *,wutime,* ]]; then # how long the JIT warm-up of a new communicator takes, cold JVMs
  for rep in 1 2; do
    for v in ${HOSTCMP_ASYNC_BUILDS:-cli-base cli}; do
      PIN="taskset -c 0,1" CLI=$v JCCL_DEBUG=INFO jccl 2 "wu2c-$v-$rep" allreduce -b 8 -e 64K -f 8
      PIN="" CLI=$v JCCL_DEBUG=INFO jccl 2 "wu-$v-$rep" allreduce -b 8 -e 64K -f 8
      PIN="" CLI=$v JCCL_DEBUG=INFO jccl 16 "wu-$v-$rep" allreduce -b 8 -e 64K -f 8
    done
  done
  PIN=""
fi
if [[ $PHASES == *,aot,* ]]; then # JCCL_AOT=on against off, cold, alternating; the first run trains the cache
  export XDG_CACHE_HOME
  XDG_CACHE_HOME=$(mktemp -d /tmp/jccl-aot-XXXX)
  JCCL_AOT=on jccl 2 aot-train allreduce -b 16 -e 16M -f 4
  ls -la "$XDG_CACHE_HOME"/jccl/aot >> "$R/run.log" 2>&1
  for rep in $(seq 1 "${HOSTCMP_AOT_REPS:-3}"); do
    for a in off on; do
      JCCL_AOT=$a jccl 2 "aot-$a-$rep" allreduce -b 16 -e 16M -f 4
      PIN="taskset -c 0,1" JCCL_AOT=$a jccl 2 "aot2c-$a-$rep" allreduce -b 16 -e 16M -f 4
    done
  done
  PIN=""
fi
if [[ $PHASES == *,hostprof,* ]]; then # async-profiler in every rank JVM, small rooted collectives at 4 ranks
  for c in ${HOSTCMP_PROF_COLLS:-gather broadcast allgather}; do
    JOPTS="-agentpath:$PWD/.gpu/libasyncProfiler.so=start,event=ctimer,interval=${HOSTCMP_PROF_INTERVAL:-50us},file=$R/prof-$c-%p.txt,collapsed" \
      jccl 4 "prof-$c" "$c" -b 16 -e 16 -n 300000 -w 20000
    jccl 4 "noprof-$c" "$c" -b 16 -e 16 -n 300000 -w 20000
  done
fi
if [[ $PHASES == *,envab,* ]]; then # settings against each other, interleaved, twice
  IFS=';' read -r -a envruns <<< "${HOSTCMP_ENVAB:-k4:JCCL_SHM_SLOTS=4 JCCL_SHM_SLOT_BYTES=262144;k16s64:JCCL_SHM_SLOTS=16 JCCL_SHM_SLOT_BYTES=65536}"
  IFS=';' read -r -a ranges <<< "${HOSTCMP_ENVAB_RANGES:-small:-b 16 -e 4K -f 16 -n 50000 -w 10000;large:-b 64K -e 16M -f 4 -n 100 -w 20}"
  for n in ${HOSTCMP_ENVAB_RANKS:-4 8}; do
    PIN=""; [ "${HOSTCMP_ENVAB_PIN:-0}" = 1 ] && PIN="taskset -c 0-$((n - 1))"
    for rep in $(seq 1 "${HOSTCMP_ENVAB_REPS:-2}"); do
      for c in ${HOSTCMP_ENVAB_COLLS:-allreduce reduce broadcast gather scatter}; do
        for er in "${envruns[@]}"; do
          tag=${er%%:*}
          for rg in "${ranges[@]}"; do
            # shellcheck disable=SC2086 # the settings are words VAR=VALUE, the range perf's flags
            ( export ${er#*:}; jccl "$n" "envab-$c-$tag-${rg%%:*}-$rep" "$c" ${rg#*:} )
          done
        done
      done
    done
    if [ "${HOSTCMP_ENVAB_MPI:-0}" = 1 ]; then
      for cfg in default cma; do
        mpi "$n" "$cfg" "envab${HOSTCMP_ENVAB_LABEL:-}" "$(echo "${HOSTCMP_ENVAB_COLLS:-allreduce reduce broadcast gather scatter}" | tr ' ' ',')" \
          ${HOSTCMP_ENVAB_MPI_RANGE:--b 16 -e 16M -f 4} -T 0.1 -c 0
      done
    fi
    PIN=""
  done
fi
if [[ $PHASES == *,smallab,* ]]; then # small sizes of every collective: builds interleaved, and Open MPI
  for n in ${HOSTCMP_SMALL_RANKS:-4}; do
    for rep in 1 2; do
      for c in ${HOSTCMP_SMALL_COLLS:-allreduce gather broadcast scatter reduce allgather alltoall reducescatter}; do
        for v in ${HOSTCMP_SMALL_BUILDS:-cli-base cli}; do
          CLI=$v jccl "$n" "small-$c-$v-$rep" "$c" -b 16 -e 256 -f 16 -n 100000 -w 20000
        done
      done
    done
    for cfg in default cma; do
      mpi "$n" "$cfg" small "$(echo "${HOSTCMP_SMALL_COLLS:-allreduce gather broadcast scatter reduce allgather alltoall reducescatter}" | tr ' ' ',')" -b 16 -e 256 -f 16 -T 0.1 -c 0
    done
  done
fi
if [[ $PHASES == *,srab,* ]]; then # send/recv ring steps 8 B..4 KiB, steady: builds interleaved (HOSTCMP_SMALL_BUILDS), and Open MPI
  for n in ${HOSTCMP_SR_RANKS:-2 4}; do
    for rep in 1 2 3; do
      for v in ${HOSTCMP_SMALL_BUILDS:-cli-base cli}; do
        CLI=$v jccl "$n" "srab-$v-$rep" sendrecv -b 8 -e 4096 -f 8 -n 20000 -w 2000 ${HOSTCMP_SR_SETTLE:-}
      done
    done
    for cfg in default cma; do mpi "$n" "$cfg" srab sendrecv -b 8 -e 4096 -f 8 -T 0.1 -c 0; done
  done
fi
if [[ $PHASES == *,srsc,* ]]; then # send/recv 4 KiB..16 MiB, steady: single copy (default) against
  # JCCL_SHM_SINGLE_COPY_BYTES=off (the mailboxes), interleaved twice, at HOSTCMP_SR_RANKS; Open MPI default and cma
  for n in ${HOSTCMP_SR_RANKS:-2 4}; do
    for rep in 1 2; do
      jccl "$n" "srsc-on-$rep" sendrecv -b 4K -e 16M -f 4 -n 200 -w 20 ${HOSTCMP_SR_SETTLE:-}
      ( export JCCL_SHM_SINGLE_COPY_BYTES=off; jccl "$n" "srsc-off-$rep" sendrecv -b 4K -e 16M -f 4 -n 200 -w 20 ${HOSTCMP_SR_SETTLE:-} )
    done
    for cfg in default cma; do mpi "$n" "$cfg" srsc sendrecv -b 4K -e 16M -f 4 -T 0.1 -c 0; done
  done
fi
if [[ $PHASES == *,cmacoll,* ]]; then # all-gather, gather, broadcast, all-to-all, scatter 1..64 MiB, steady:
  # peers' native send buffers read in place (default) against JCCL_SHM_SINGLE_COPY_BYTES=off (the slots), at
  # HOSTCMP_CMA_RANKS (default "4 8") and HOSTCMP_CMA_COLLS (default all five); Open MPI default and cma
  for n in ${HOSTCMP_CMA_RANKS:-4 8}; do
    for c in ${HOSTCMP_CMA_COLLS:-allgather gather broadcast alltoall scatter}; do
      jccl "$n" "cma-$c-on" "$c" -b 1M -e 64M -f 4 -n 50 -w 5 ${HOSTCMP_SR_SETTLE:-}
      ( export JCCL_SHM_SINGLE_COPY_BYTES=off; jccl "$n" "cma-$c-off" "$c" -b 1M -e 64M -f 4 -n 50 -w 5 ${HOSTCMP_SR_SETTLE:-} )
      for cfg in default cma; do mpi "$n" "$cfg" "cma-$c" "$c" -b 1M -e 64M -f 4 -T 0.1 -c 0; done
    done
  done
fi
if [[ $PHASES == *,jitcc,* ]]; then # 16 ranks' first sizes: the JVM's default compiler threads against 2
  for rep in 1 2; do
    for cc in default 2; do
      o=""; [ "$cc" = default ] || o="-XX:CICompilerCount=$cc"
      JOPTS="$o" jccl 16 "jitcc-ar-$cc-$rep" allreduce -b 16 -e 4K -f 4 -n 2000 -w 500
      JOPTS="$o" jccl 16 "jitcc-rs-$cc-$rep" reducescatter -b 256 -e 64K -f 16 -n 2000 -w 500
    done
  done
fi
if [[ $PHASES == *,jitpin,* ]]; then # 16 ranks' first sizes: .gpu/cli-base against .gpu/cli, and cli-base with 2 JIT threads
  for rep in 1 2; do
    for v in cli-base cli; do
      CLI=$v jccl 16 "jitpin-ar-$v-$rep" allreduce -b 16 -e 4K -f 4 -n 2000 -w 500
      CLI=$v jccl 16 "jitpin-rs-$v-$rep" reducescatter -b 256 -e 64K -f 16 -n 2000 -w 500
    done
  done
  JOPTS="-XX:CICompilerCount=2" CLI=cli-base jccl 16 "jitpin-ar-cc2" allreduce -b 16 -e 4K -f 4 -n 2000 -w 500
  JOPTS="-XX:CICompilerCount=2" CLI=cli-base jccl 16 "jitpin-rs-cc2" reducescatter -b 256 -e 64K -f 16 -n 2000 -w 500
fi
if [[ $PHASES == *,tosteady,* ]]; then
  for n in $RANKS; do
    jccl "$n" tosteady allreduce -b 16 -e 16M -f 4 -n 2000 -w 0 --to-steady
  done
fi
if [[ $PHASES == *,ab,* ]]; then
  for rep in 1 2; do
    for n in 2 8; do
      for v in cli-base cli; do
        CLI=$v jccl "$n" "ab-small-$v-$rep" allreduce -b 16 -e 256K -f 4 -n 2000 -w 500
        CLI=$v jccl "$n" "ab-large-$v-$rep" allreduce -b 1M -e 16M -f 4 -n 40 -w 10
      done
    done
  done
fi
if [[ $PHASES == *,status,* ]]; then # every collective, steady and cold, against Open MPI and Gloo
  SMAX=${HOSTCMP_STATUS_MAX:-1M}
  SRANKS=${HOSTCMP_STATUS_RANKS:-$RANKS}
  for rep in $(seq 1 "${HOSTCMP_STATUS_REPS:-2}"); do
    [ -x .gpu/line_rtt ] && log "status $rep: line round trip CPUs 0-1 $(.gpu/line_rtt 0 1) ns"
    for n in $SRANKS; do jccl "$n" "status-steady-$rep" all -b 16 -e "$SMAX" -f 4 -n 2000 -w 500; done
    if [ "$rep" = 1 ]; then
      for n in $SRANKS; do
        for cfg in $CONFIGS; do mpi "$n" "$cfg" status all -b 16 -e "$SMAX" -f 4 -T 0.05 -c 0; done
      done
    fi
  done
  for n in ${HOSTCMP_STATUS_GLOO-2 8}; do
    timeout 300 python3 bench/gloo/gloo_bench.py all --ranks "$n" -b 16 -e "$SMAX" -f 4 -T 0.05 -c 0 \
      --json "$R/gloo-status-r$n.json" > "$R/gloo-status-r$n.log" 2>&1
    log "gloo status ranks $n: exit $?"
  done
  [ -x .gpu/line_rtt ] && log "status cold: line round trip CPUs 0-1 $(.gpu/line_rtt 0 1) ns"
  for n in $SRANKS; do
    jccl "$n" status-cold all -b 16 -e "$SMAX" -f 4
    mpi "$n" default status-cold all -b 16 -e "$SMAX" -f 4 -n 20 -w 5 -c 0
  done
fi
if [[ $PHASES == *,variants,* ]]; then
  # What each of this build's changes costs: warm-up off, pinning off, both, against the base build.
  for rep in 1 2; do
    for n in ${HOSTCMP_VAR_RANKS:-2 8}; do
      CLI=cli-base jccl "$n" "var-base-$rep" allreduce -b 16 -e 16M -f 4 -n 500 -w 100
      jccl "$n" "var-new-$rep" allreduce -b 16 -e 16M -f 4 -n 500 -w 100
      JCCL_WARMUP=0 jccl "$n" "var-nowarm-$rep" allreduce -b 16 -e 16M -f 4 -n 500 -w 100
      if [ -z "${HOSTCMP_VAR_SHORT:-}" ]; then
        JCCL_AFFINITY=off jccl "$n" "var-nopin-$rep" allreduce -b 16 -e 16M -f 4 -n 500 -w 100
        JCCL_WARMUP=0 JCCL_AFFINITY=off jccl "$n" "var-neither-$rep" allreduce -b 16 -e 16M -f 4 -n 500 -w 100
      fi
    done
  done
fi
log "load at end: $(cat /proc/loadavg)"
tar czf "$OUT/hostcmp.tgz" -C "$OUT" hostcmp
# A short table last: all-reduce out-of-place times (us) per rank count.
for n in $RANKS; do
  for f in "$R/jccl-ar-cold-r$n.json" "$R/jccl-ar-steady-small-r$n.json" "$R/mpi-ar-default-r$n.json"; do
    [ -f "$f" ] && python3 - "$f" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for run in d["runs"]:
    cells = " ".join(f"{r['bytes']}:{(r.get('oop') or {}).get('time_us', float('nan')):.4g}" for r in run["rows"])
    print(f"{sys.argv[1].split('/')[-1]}: {cells}")
EOF
  done
done
exit 0 # the phases log their own exit codes; the loop above ends on a missing file
