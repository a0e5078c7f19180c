#!/bin/bash
# 16 ranks, 16 B-1 KiB, steady: every collective in one JVM (perf all) against the reduce alone, and
# perf all with JCCL_AFFINITY=off (rank threads not pinned)
cd "$(dirname "$0")/.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
export OUT=${OUT:-.gpu/out}
R="$OUT/hostcmp"; mkdir -p "$R"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/run.log"; }
log "host $(nproc) cores, load $(cat /proc/loadavg)"
J() { # J TAG LABEL COLL (env from the caller)
  local tag=$1 label=$2 coll=$3
  timeout 150 .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/cli/*" \
    org.jccl.cli.Main perf "$coll" --ranks 16 -z 1 -c 0 -b 16 -e 1K -f 4 -n 2000 -w 500 \
    --json "$R/jccl-envab-$label-$tag-$rep-r16.json" > "$R/jccl-envab-$label-$tag-$rep-r16.log" 2>&1
  log "$tag $label: exit $?"
}
for rep in 1 2; do
  J def all all
  J alone reduce reduce
  J alone gather gather
  J alone scatter scatter
  JCCL_AFFINITY=off J noaff all all
done
log "end load $(cat /proc/loadavg)"
tar czf "$OUT/hostcmp.tgz" -C "$OUT" hostcmp; rm -rf "$R"
