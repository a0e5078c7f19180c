#!/bin/bash
# first calls after the warm-up, perf all 2 ranks 8 B..1 MiB, builds interleaved, 3 rounds
for r in ${ROUNDS:-1 2 3}; do
  for b in head rare; do
    p=$(/tmp/line_rtt | tail -1)
    /usr/lib/jvm/temurin-25-jdk-amd64/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp "/tmp/ab/$b/*" org.jccl.cli.Main perf all --ranks 2 -b 8 -e 1M -f 8 -n 50 -w 5 -c 0 --json /tmp/fcall/$b-$r.json > /tmp/fcall/$b-$r.log 2>&1
    echo "$r $b rc $? probe $p"
  done
done
