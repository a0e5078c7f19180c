#!/bin/bash
# jccl perf all at 16 and 8 ranks (16 B-1 MiB, steady) with the JIT's deoptimizations and
# compilation bail-outs logged: what throws compiled code away after the warm-up
cd "$(dirname "$0")/.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
export OUT=${OUT:-.gpu/out}
R="$OUT/deopt"; mkdir -p "$R"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/run.log"; }
log "host $(nproc) cores, load $(cat /proc/loadavg)"
export JCCL_DEBUG=INFO
P() { # P BUILD TAG N
  local b=$1 tag=$2 n=$3
  timeout 170 .jre/bin/java -Xlog:deoptimization=debug -XX:+UnlockDiagnosticVMOptions -XX:+PrintCompilation \
    --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/$b/*" \
    org.jccl.cli.Main perf all --ranks "$n" -z 1 -c 0 -b 16 -e 1M -f 4 -n 2000 -w 500 \
    --json "$R/jccl-deopt-$tag-r$n.json" 2>&1 \
    | grep -E 'deoptimization|not compilable|COMPILE SKIPPED|warm-up:|^ +[0-9]+ |^#' > "$R/deopt-$tag-r$n.log"
  log "$b $n: exit ${PIPESTATUS[0]}, $(wc -l < "$R/deopt-$tag-r$n.log") lines"
}
P cli new 16
P cli-base base 16
P cli new 8
log "end load $(cat /proc/loadavg)"
tar czf "$OUT/deopt.tgz" -C "$OUT" deopt; rm -rf "$R"
