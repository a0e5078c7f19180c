#!/bin/bash
# traps.sh BUILD tag perf-args : traps after the warm-up's end, per rank JVM, jccl + jdk.internal.foreign
b=$1; tag=$2; shift 2
rm -f /tmp/tr-$tag-*.log
L="-Xlog:deoptimization=debug,jit+compilation=debug:file=/tmp/tr-$tag-%p.log:uptimemillis"
out=$(JCCL_DEBUG=INFO /usr/lib/jvm/temurin-25-jdk-amd64/bin/java $L --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp "/tmp/ab/$b/*" org.jccl.cli.Main perf "$@" 2>&1)
end=$(echo "$out" | grep -o "ending [0-9]* ms" | awk '{if ($2>m) m=$2} END{print m+0}')
echo "$out" | grep -cE '^ +[0-9]+ ' | sed 's/^/rows: /'
echo "warm-up ends by ${end} ms"
for f in /tmp/tr-$tag-*.log; do
  awk -F'[][]' -v e=$end '/trap_bci/ {t=$2+0; if (t>e) print}' $f | grep -E "org\.jccl\.(host|spi|diag|internal)|jdk.internal.foreign|MemorySegment" | sed -E 's/.*level=4 //; s/\(.*\)[^ ]* trap_bci=/ bci=/; s/ pc=.*//' | sort | uniq -c | sed "s|^|$(basename $f): |"
done
