#!/bin/bash
cd /work/main
export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
O=$1; mkdir -p $O
for r in 1 2 3; do
  for c in allreduce reduce; do
    mpirun --allow-run-as-root -np 2 --bind-to none bench/mpi/mpi_coll $c -b 8 -e 16M -f 8 -n 20 -w 5 -c 0 > $O/mpi-$c-2-$r.log 2>&1
    for w in 3 8; do
      JCCL_WARMUP=$w JCCL_DEBUG=INFO ./jccl perf $c --ranks 2 -z 1 -b 8 -e 16M -f 8 -c 0 > $O/jccl-w$w-$c-2-$r.log 2>&1
    done
    ./jccl perf $c --ranks 2 -z 1 -b 8 -e 16M -f 8 -c 0 > $O/jccl-wdefault-$c-2-$r.log 2>&1
  done
done
