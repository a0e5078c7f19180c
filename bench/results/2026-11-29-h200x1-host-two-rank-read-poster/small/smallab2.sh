#!/bin/bash
# base against new: 2 ranks, all-gather, gather, all-to-all 4-64 KiB, steady, interleaved, twice
cd "$(dirname "$0")/.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
export OUT=${OUT:-.gpu/out}
R="$OUT/hostcmp"; mkdir -p "$R"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/run.log"; }
log "host $(nproc) cores, load $(cat /proc/loadavg), rtt $(.gpu/line_rtt 0 1) $(.gpu/line_rtt 0 2)"
for rep in 1 2; do
  for c in allgather gather alltoall; do
    for b in cli-base cli; do
      timeout 60 .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/$b/*" \
        org.jccl.cli.Main perf $c --ranks 2 -z 1 -c 0 -b 4K -e 64K -f 4 -n 5000 -w 1000 \
        --json "$R/jccl-$c-$b-$rep-r2.json" > "$R/jccl-$c-$b-$rep-r2.log" 2>&1
      log "$c $b $rep: exit $?"
    done
  done
done
tar czf "$OUT/hostcmp.tgz" -C "$OUT" hostcmp; rm -rf "$R"
