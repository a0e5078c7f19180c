#!/usr/bin/env bash
# Host engine A/B on this machine: jccl perf all-reduce with the base build (cli-base) and the
# current one (cli), interleaved, 2 and 4 ranks; cold (nccl-tests' default -n 20 -w 5) and steady.
# Stage (here, after bench/gpu/run-gpu.sh stage, which empties .gpu): build each commit's CLI
# (mvn -o -Djccl.build=-X -DskipTests package; a git worktree for the base) and copy
# jccl-cli/target-X/jccl-cli-*.jar and jccl-cli/target-X/lib/*.jar into .gpu/cli (current) and
# .gpu/cli-base (base), and this script to .gpu/; then on the device: bash .gpu/perf-ab.sh
# With .gpu/lib-base (bench/gpu/run-gpu.sh stage with JCCL_GPU_BASE=<commit>) it then runs the NCCL
# backend's sweep (NcclBench: all-reduce and all-gather, 8 B to 1 GiB, every GPU) with the base
# and the current jars, interleaved, twice (JCCL_AB_REPS: how many times each); JCCL_AB_NCCL_OPS picks other collectives.
cd "$(dirname "$0")/.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
OUT=${OUT:-.gpu/out}; mkdir -p "$OUT"
echo "host $(hostname): $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
run() { # run VARIANT RANKS LABEL ARGS...
  local v=$1 n=$2 label=$3; shift 3
  timeout 240 .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/$v/*" \
    org.jccl.cli.Main perf allreduce --ranks "$n" "$@" > "$OUT/perf-$label-$v-r$n.log" 2>&1
  echo "[$label $v ranks $n] exit $?"
}
for rep in $(seq 1 "${JCCL_AB_REPS:-2}"); do
  for n in 2 4; do
    for v in cli-base cli; do
      run $v $n cold$rep -b 8 -e 16M -f 8
      run $v $n steady$rep -b 8 -e 1M -f 8 -n 1000 -w 200
    done
  done
done
if [ -d .gpu/lib-base ]; then
  for rep in $(seq 1 "${JCCL_AB_REPS:-2}"); do
    for lib in lib-base lib; do # this tree's NcclBench (jccl-bench.jar) over each build's library jars
      timeout -k 10 150 .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector \
        -cp ".gpu/lib/jccl-bench.jar:.gpu/$lib/jccl-core.jar:.gpu/$lib/jccl-cuda.jar" org.jccl.cuda.bench.NcclBench \
        -o "${JCCL_AB_NCCL_OPS:-allreduce,allgather}" -b 8 -e 1G -f 8 --no-overhead > "$OUT/nccl-$lib-$rep.log" 2>&1
      echo "[nccl $lib run $rep] exit $?"
    done
  done
fi
for f in "$OUT"/nccl-*.log; do
  [ -f "$f" ] || continue
  echo "== $(basename "$f")"; awk '/^# [a-z]/ {op=$2} $1 ~ /^[0-9]+$/ && ($1=="8" || $1=="65536" || $1=="16777216" || $1=="1073741824") {print op, $0}' "$f"
done
for f in "$OUT"/perf-*.log; do echo "== $(basename "$f")"; grep -E '^ +[0-9]+ ' "$f" | awk '{print $1, $6, $10}' | tr '\n' ';'; echo; done
