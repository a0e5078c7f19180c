#!/usr/bin/env bash
# One device call for issue #18 items 2 and 5: nccl.h's window API, SymmetricMemoryTest (blocking and
# nonblocking), NcclBench --symmetric, which kernels NCCL reports, then nccl-tests vs jccl perf anchors.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
L=/tmp/L; mkdir -p $L
T0=$(date +%s); el() { echo "[$1] exit $2 at $(( $(date +%s) - T0 )) s"; tar czf "$OUT/logs.tgz" -C /tmp L; }
( cd nccl-tests && timeout 110 make -s -j14 -C src MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/usr BUILDDIR=/tmp/nt \
    NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 /tmp/nt/all_reduce_perf > "$L/nt-build.log" 2>&1
  echo "build rc $?" >> "$L/nt-build.log" ) &
BUILD=$!
{ date -u; nvidia-smi -L; nvidia-smi topo -m | head -4; echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
  grep -n 'NCCL_MAJOR\|NCCL_MINOR\|NCCL_PATCH\|ncclWindow_t\|ncclCommWindowRegister\|ncclCommWindowDeregister\|NCCL_WIN_\|ncclMemAlloc\|ncclMemFree' /usr/include/nccl.h
} > "$L/probe.log" 2>&1
cat "$L/probe.log"
J=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -Djccl.test.dir=/tmp/jccl-gpu)
CP=.gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/lib/jccl-bench.jar:.gpu/test-classes:.gpu/lib/jccl-core-tests.jar:.gpu/lib/junit-console.jar
junit() { local name=$1; shift
  JCCL_REQUIRE=gpu timeout -k 5 60 "${J[@]}" -cp "$CP" org.junit.platform.console.ConsoleLauncher execute --disable-banner \
    --details=tree --disable-ansi-colors --select-class org.jccl.cuda.SymmetricMemoryTest "$@" > "$L/$name.log" 2>&1
  el "$name" $?; grep -E 'tests (successful|failed|aborted)|✘|Exception' "$L/$name.log" | head -20; }
junit symm-tests --select-class org.jccl.cuda.BindingLayoutTest
JCCL_NCCL_NONBLOCKING=1 junit symm-tests-nb
timeout -k 5 50 "${J[@]}" -cp "$CP" org.jccl.cuda.bench.NcclBench --symmetric --no-overhead -g 2 \
  -o allreduce,allgather,reducescatter -b 8 -e 1G -f 4 > "$L/symm-bench.log" 2>&1; el symm-bench $?
cat "$L/symm-bench.log"
# which kernels: NCCL's own log for one small and one large all-reduce on windows
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,REG,ALLOC timeout -k 5 25 "${J[@]}" -cp "$CP" org.jccl.cuda.bench.NcclBench \
  --symmetric --no-overhead -g 2 -o allreduce -b 8K -e 8M -f 1024 -w 1 > "$L/symm-nccl-debug.log" 2>&1; el debug $?
grep -i 'symm\|symk\|window\|nvls\|cumem\|LSA' "$L/symm-nccl-debug.log" | sort | uniq -c | sort -rn | head -25
# item 5: anchors, all in this call
wait $BUILD; tail -3 "$L/nt-build.log"; el build 0
NT=/tmp/nt/all_reduce_perf
A=(-b 8 -e 1G -f 8 -n 20 -w 5)
if [ -x $NT ]; then
  for v in "g2:-g 2" "t2g1:-t 2 -g 1" "g2G10:-g 2 -G 10" "g2R2:-g 2 -R 2"; do
    timeout -k 5 30 $NT ${v#*:} "${A[@]}" > "$L/nt-${v%%:*}.log" 2>&1; el "nccl-tests ${v#*:}" $?
  done
fi
C=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/cli-lib/*" org.jccl.cli.Main perf allreduce --backend nccl "${A[@]}")
for v in "g2:-g 2" "g2G10:-g 2 -G 10" "r2:--ranks 2" "r2G10:--ranks 2 -G 10"; do
  timeout -k 5 40 "${C[@]}" ${v#*:} > "$L/perf-${v%%:*}.log" 2>&1; el "jccl perf ${v#*:}" $?
done
for f in "$L"/nt-*.log "$L"/perf-*.log; do echo "== $(basename $f)"; grep -E '^ +[0-9]+ ' "$f" | awk '{print $1, $6, $8, $10, $14}' | tr '\n' ';'; echo; done
