#!/bin/bash
# 16 ranks, reduce 256 B-64 KiB (the tuner's choice), b58c849 (.gpu/cli-base3) against the warm-up
# that fills the small ring (.gpu/cli), interleaved twice
cd "$(dirname "$0")/.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
export OUT=${OUT:-.gpu/out}
R="$OUT/hostcmp"; mkdir -p "$R"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/run.log"; }
log "host $(nproc) cores, load $(cat /proc/loadavg)"
J() { # J BUILD TAG N
  local b=$1 tag=$2 n=$3
  timeout 100 .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/$b/*" \
    org.jccl.cli.Main perf reduce --ranks "$n" -z 1 -c 0 -b 256 -e 64K -f 4 -n 2000 -w 500 \
    --json "$R/jccl-envab-reduce-$tag-$rep-r$n.json" > "$R/jccl-envab-reduce-$tag-$rep-r$n.log" 2>&1
  log "$b $n: exit $?"
}
for rep in 1 2; do
  J cli-base3 base 16
  J cli new 16
done
log "end load $(cat /proc/loadavg)"
tar czf "$OUT/hostcmp.tgz" -C "$OUT" hostcmp; rm -rf "$R"
