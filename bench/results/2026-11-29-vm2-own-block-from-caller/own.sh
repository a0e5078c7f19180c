#!/bin/bash
# own.sh ROUNDS COLL RANKS: /tmp/wt-x (39209fd, JCCL_BUILD=-x) vs /work/main (own block from the caller's buffer), 16 B..1 KiB x4
R=$1; C=$2; N=$3
for r in $(seq 1 $R); do
  for d in /tmp/wt-x /work/main; do
    a=$(/tmp/line_rtt)
    if [ $d = /tmp/wt-x ]; then e=JCCL_BUILD=-x; else e=X=1; fi
    t=$(cd $d && env $e ./jccl perf $C --ranks $N -z 1 -b 16 -e 1K -f 4 -n 100000 -w 20000 -c 0 2>&1 | grep -E '^ +[0-9]+ ' | awk '{printf "%s:%s/%s ", $1, $6, $10}')
    b=$(/tmp/line_rtt)
    echo "$r $(basename $d) $C r$N: $t  rtt $a $b"
  done
done
