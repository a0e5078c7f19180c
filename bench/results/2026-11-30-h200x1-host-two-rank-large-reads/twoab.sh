#!/bin/bash
# 2 ranks: (1) all-gather, all-to-all, gather of 1-16 MiB, HEAD (.gpu/cli) against reading peers'
# buffers at every block size (.gpu/cli-rp); (2) reduce 16 KiB-1 MiB, default slots against
# JCCL_SHM_SLOT_BYTES=65536; Open MPI default and cma
cd "$(dirname "$0")/.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
export OUT=${OUT:-.gpu/out} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R="$OUT/hostcmp"; mkdir -p "$R"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/run.log"; }
log "host $(nproc) cores, load $(cat /proc/loadavg), rtt $(.gpu/line_rtt 0 1) $(.gpu/line_rtt 0 2)"
mpicc -O2 -o .gpu/mpi_coll_b bench/mpi/mpi_coll.c -lm 2>>"$R/run.log"
J() { # J BUILD TAG LABEL COLL ARGS... (2 ranks; env from the caller)
  local b=$1 tag=$2 label=$3 coll=$4; shift 4
  timeout 100 .jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/$b/*" \
    org.jccl.cli.Main perf "$coll" --ranks 2 -z 1 -c 0 "$@" --json "$R/jccl-envab-$label-$tag-$rep-r2.json" > "$R/jccl-envab-$label-$tag-$rep-r2.log" 2>&1
  log "$b $tag $label: exit $?"
}
for rep in 1 2 3; do
  for c in allgather alltoall gather; do
    J cli head $c $c -b 1M -e 16M -f 4 -n 100 -w 20
    J cli-rp rp $c $c -b 1M -e 16M -f 4 -n 100 -w 20
  done
  J cli def reduce reduce -b 16K -e 1M -f 4 -n 500 -w 100
  JCCL_SHM_SLOT_BYTES=65536 J cli s64 reduce reduce -b 16K -e 1M -f 4 -n 500 -w 100
done
for cfg in default cma; do
  f=""; [ $cfg = cma ] && f="--mca btl_vader_single_copy_mechanism cma"
  timeout 100 mpirun -np 2 --bind-to none --oversubscribe $f .gpu/mpi_coll_b all -b 16K -e 16M -f 4 -T 0.05 -c 0 --json "$R/mpi-envab-$cfg-r2.json" > "$R/mpi-$cfg-r2.log" 2>&1
  log "mpi $cfg: exit $?"
done
log "end load $(cat /proc/loadavg), rtt $(.gpu/line_rtt 0 1)"
tar czf "$OUT/hostcmp.tgz" -C "$OUT" hostcmp; rm -rf "$R"
