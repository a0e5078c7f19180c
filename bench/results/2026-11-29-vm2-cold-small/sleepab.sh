#!/bin/bash
for r in $(seq 1 ${R:-8}); do
  for m in 0 2000; do
    p1=$(/tmp/line_rtt | tail -1)
    if [ $m = 0 ]; then rows=$(/tmp/ab/run.sh diag allreduce --ranks 2 -z 1 -b 8 -e 64 -f 8 -n 20 -w 5 -c 0 | awk '{printf "%s ", $6}');
    else rows=$(DIAG_SLEEP_MS=$m /tmp/ab/run.sh diag allreduce --ranks 2 -z 1 -b 8 -e 64 -f 8 -n 20 -w 5 -c 0 | awk '{printf "%s ", $6}'); fi
    p2=$(/tmp/line_rtt | tail -1)
    echo "$r sleep=$m probes $p1 $p2 : $rows"
  done
done
