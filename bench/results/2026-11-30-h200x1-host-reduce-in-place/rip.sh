#!/bin/bash
# The in-place reduce at 8 and 16 ranks, 256 B-64 KiB: the tuner's choice, then the reduce-scatter
# step and one-shot forced (JCCL_ALGO), twice each
cd "$(dirname "$0")/.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
export OUT=${OUT:-.gpu/out}
R="$OUT/hostcmp"; mkdir -p "$R"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/run.log"; }
log "host $(nproc) cores, load $(cat /proc/loadavg)"
J() { # J TAG N (env from the caller)
  local tag=$1 n=$2
  timeout 100 .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/cli/*" \
    org.jccl.cli.Main perf reduce --ranks "$n" -z 1 -c 0 -b 256 -e 64K -f 4 -n 2000 -w 500 \
    --json "$R/jccl-envab-reduce-$tag-$rep-r$n.json" > "$R/jccl-envab-reduce-$tag-$rep-r$n.log" 2>&1
  log "$tag $n: exit $?"
}
for rep in 1 2; do
  for n in 16 8; do
    J auto $n
    JCCL_ALGO=rsag J rsag $n
    JCCL_ALGO=oneshot J oneshot $n
  done
done
log "end load $(cat /proc/loadavg)"
tar czf "$OUT/hostcmp.tgz" -C "$OUT" hostcmp; rm -rf "$R"
