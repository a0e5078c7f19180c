#!/bin/bash
# 2 ranks: HEAD (.gpu/cli-base2) against the reduce that reads a native non-root's input (.gpu/cli):
# reduce 16 KiB-16 MiB three times, perf all 16 KiB-4 MiB at 2 and 4 ranks twice; Open MPI default, cma
cd "$(dirname "$0")/.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
export OUT=${OUT:-.gpu/out} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R="$OUT/hostcmp"; mkdir -p "$R"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/run.log"; }
log "host $(nproc) cores, load $(cat /proc/loadavg), rtt $(.gpu/line_rtt 0 1) $(.gpu/line_rtt 0 2)"
mpicc -O2 -o .gpu/mpi_coll_b bench/mpi/mpi_coll.c -lm 2>>"$R/run.log"
J() { # J BUILD TAG N LABEL COLL ARGS...
  local b=$1 tag=$2 n=$3 label=$4 coll=$5; shift 5
  timeout 120 .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/$b/*" \
    org.jccl.cli.Main perf "$coll" --ranks "$n" -z 1 -c 0 "$@" --json "$R/jccl-envab-$label-$tag-$rep-r$n.json" > "$R/jccl-envab-$label-$tag-$rep-r$n.log" 2>&1
  log "$b $label $n: exit $?"
}
for rep in 1 2 3; do
  J cli-base2 base 2 reduce reduce -b 16K -e 16M -f 4 -n 200 -w 50
  J cli new 2 reduce reduce -b 16K -e 16M -f 4 -n 200 -w 50
done
for rep in 1 2; do
  for n in 2 4; do
    J cli-base2 base $n all all -b 16K -e 4M -f 4 -n 200 -w 50
    J cli new $n all all -b 16K -e 4M -f 4 -n 200 -w 50
  done
done
for n in 2 4; do for cfg in default cma; do
  f=""; [ $cfg = cma ] && f="--mca btl_vader_single_copy_mechanism cma"
  timeout 100 mpirun -np $n --bind-to none --oversubscribe $f .gpu/mpi_coll_b all -b 16K -e 16M -f 4 -T 0.05 -c 0 --json "$R/mpi-envab-$cfg-r$n.json" > "$R/mpi-$cfg-r$n.log" 2>&1
  log "mpi $cfg $n: exit $?"
done; done
log "end load $(cat /proc/loadavg), rtt $(.gpu/line_rtt 0 1)"
tar czf "$OUT/hostcmp.tgz" -C "$OUT" hostcmp; rm -rf "$R"
