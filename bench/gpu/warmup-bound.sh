#!/bin/bash
# Cold host collectives (nccl-tests' -n 20 -w 5, blocking) with JCCL_WARMUP 3 and 8 interleaved, and Open MPI's
# cold figure in the same rounds: does a longer warm-up bound make the first calls faster? On the device:
#   WB_RANKS="2c 8 16" WB_COLLS="allreduce reduce" WB_ROUNDS=2 bash bench/gpu/warmup-bound.sh   (2c: 2 ranks on CPUs 0-1)
# Logs in $OUT/wb (OUT: the device tool's folder, else .gpu/out).
cd "$(dirname "$0")/../.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
O=${OUT:-.gpu/out}/wb; mkdir -p "$O"
command -v mpicc >/dev/null && mpicc -O2 -o bench/mpi/mpi_coll bench/mpi/mpi_coll.c -lm
J=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp ".gpu/cli/*" org.jccl.cli.Main perf)
for r in $(seq 1 "${WB_ROUNDS:-2}"); do
  for n in ${WB_RANKS:-2c 8 16}; do
    pin=(); np=$n
    if [ "$n" = 2c ]; then pin=(taskset -c 0,1); np=2; fi
    for c in ${WB_COLLS:-allreduce reduce}; do
      timeout 120 "${pin[@]}" mpirun --allow-run-as-root --oversubscribe -np "$np" --bind-to none bench/mpi/mpi_coll "$c" \
        -b 8 -e 16M -f 8 -n 20 -w 5 -c 0 > "$O/mpi-$c-$n-$r.log" 2>&1
      for w in 3 8; do
        JCCL_WARMUP=$w JCCL_DEBUG=INFO timeout 120 "${pin[@]}" "${J[@]}" "$c" --ranks "$np" -z 1 -b 8 -e 16M -f 8 -c 0 \
          > "$O/jccl-w$w-$c-$n-$r.log" 2>&1
        echo "[$(date +%T)] $c $n w$w round $r: exit $? $(grep -m1 -o 'warm-up: .* ms' "$O/jccl-w$w-$c-$n-$r.log")"
      done
    done
  done
done
