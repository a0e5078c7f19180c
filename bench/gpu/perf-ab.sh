#!/usr/bin/env bash
# Host engine A/B on this machine: jccl perf all-reduce with the base build (cli-base) and the
# current one (cli), interleaved, 2 and 4 ranks; cold (nccl-tests' default -n 20 -w 5) and steady.
# Stage (here, after bench/gpu/run-gpu.sh stage, which empties .gpu): build each commit's CLI
# (mvn -o -Djccl.build=-X -DskipTests package; a git worktree for the base) and copy
# jccl-cli/target-X/jccl-cli-*.jar and jccl-cli/target-X/lib/*.jar into .gpu/cli (current) and
# .gpu/cli-base (base), and this script to .gpu/; then on the device: bash .gpu/perf-ab.sh
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
for rep in 1 2; do
  for n in 2 4; do
    for v in cli-base cli; do
      run $v $n cold$rep -b 8 -e 16M -f 8
      run $v $n steady$rep -b 8 -e 1M -f 8 -n 1000 -w 200
    done
  done
done
for f in "$OUT"/perf-*.log; do echo "== $(basename "$f")"; grep -E '^ +[0-9]+ ' "$f" | awk '{print $1, $6, $10}' | tr '\n' ';'; echo; done
