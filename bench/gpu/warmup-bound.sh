#!/bin/bash
# Cold host collectives (nccl-tests' -n 20 -w 5, blocking) of several jccl variants interleaved, and Open MPI's
# cold figure in the same rounds: does a change to the warm-up make the first calls faster? On the device:
#   WB_RANKS="2c 8 16" WB_COLLS="allreduce reduce" WB_ROUNDS=2 bash bench/gpu/warmup-bound.sh   (2c: 2 ranks on CPUs 0-1)
# WB_VARIANTS (default "w3 w8"): wN runs this build (.gpu/cli) with JCCL_WARMUP=N; any other name runs the build in
# .gpu/<name> with its defaults (e.g. "cli-base cli": the last build against this one).
# Logs in $OUT/wb (OUT: the device tool's folder, else .gpu/out); a table of each size's best figure (over rounds
# and placements) per variant, with Open MPI's, is printed last and kept in $OUT/wb/summary.txt.
cd "$(dirname "$0")/../.."
chmod +x .jre/bin/* .jre/lib/jspawnhelper 2>/dev/null
O=${OUT:-.gpu/out}/wb; mkdir -p "$O"
command -v mpicc >/dev/null && mpicc -O2 -o bench/mpi/mpi_coll bench/mpi/mpi_coll.c -lm
variants=${WB_VARIANTS:-w3 w8}
for r in $(seq 1 "${WB_ROUNDS:-2}"); do
  for n in ${WB_RANKS:-2c 8 16}; do
    pin=(); np=$n
    if [ "$n" = 2c ]; then pin=(taskset -c 0,1); np=2; fi
    for c in ${WB_COLLS:-allreduce reduce}; do
      timeout 120 "${pin[@]}" mpirun --allow-run-as-root --oversubscribe -np "$np" --bind-to none bench/mpi/mpi_coll "$c" \
        -b 8 -e 16M -f 8 -n 20 -w 5 -c 0 > "$O/mpi-$c-$n-$r.log" 2>&1
      for v in $variants; do
        env=(); cp=".gpu/cli/*"
        case "$v" in
          w[0-9]*) env=(JCCL_WARMUP="${v#w}") ;;
          *) cp=".gpu/$v/*" ;;
        esac
        env "${env[@]}" JCCL_DEBUG=INFO timeout 120 "${pin[@]}" .jre/bin/java --enable-native-access=ALL-UNNAMED \
          --add-modules jdk.incubator.vector -cp "$cp" org.jccl.cli.Main perf "$c" --ranks "$np" -z 1 -b 8 -e 16M -f 8 \
          -c 0 > "$O/jccl-$v-$c-$n-$r.log" 2>&1
        echo "[$(date +%T)] $c $n $v round $r: exit $? $(grep -m1 -o 'warm-up: .* ms' "$O/jccl-$v-$c-$n-$r.log")"
      done
    done
  done
done
python3 - "$O" $variants > "$O/summary.txt" <<'EOF'
import glob, os, re, sys
d, variants = sys.argv[1], sys.argv[2:]
best = {}  # (prog, coll, ranks, size) -> best time over rounds and placements
for f in glob.glob(os.path.join(d, "*.log")):
    m = re.match(r"(mpi|jccl-(.+))-(\w+)-(\w+)-(\d+)\.log$", os.path.basename(f))
    if not m:
        continue
    prog = "mpi" if m.group(1) == "mpi" else m.group(2)
    for line in open(f, errors="replace"):
        p = line.split()
        if len(p) >= 10 and p[0].isdigit():
            try:
                t = min(float(p[5]), float(p[9]))
            except ValueError:
                continue
            k = (prog, m.group(3), m.group(4), int(p[0]))
            best[k] = min(best.get(k, t), t)
for coll in sorted({k[1] for k in best}):
    for n in sorted({k[2] for k in best if k[1] == coll}, key=lambda x: (len(x), x)):
        print(f"\n{coll}, {n} ranks, cold (-n 20 -w 5), best us; ratio = Open MPI / variant")
        print("size       mpi " + " ".join(f"{v:>10} {'ratio':>6}" for v in variants))
        for s in sorted({k[3] for k in best if k[1] == coll and k[2] == n}):
            mp = best.get(("mpi", coll, n, s))
            row = f"{s:>9} {mp if mp is not None else float('nan'):9.2f}"
            for v in variants:
                t = best.get((v, coll, n, s))
                row += f" {t if t else float('nan'):10.2f} {(mp / t) if (t and mp) else float('nan'):6.2f}"
            print(row)
EOF
cat "$O/summary.txt"
