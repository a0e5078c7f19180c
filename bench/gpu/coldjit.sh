#!/usr/bin/env bash
# #18 item 4 on the GPU machine: the NCCL backend's all-reduce cold (nccl-tests' -n 20 -w 5) against its steady
# state (-n 1000 -w 200), threads (-g N) and processes (--ranks N), each cold JVM with the JIT's deoptimizations
# logged, so that what the first timed calls threw away (after jccl's warm-up at creation) is on record.
#
#   bash bench/gpu/run-gpu.sh stage     here, then on the device from the repository root:
#   OUT=... bash bench/gpu/coldjit.sh   (carry .jre and .gpu); COLDJIT_REPS cold runs per mode (default 2),
#                                       COLDJIT_MODES (default "g r": -g N and --ranks N), COLDJIT_MAX (default 256K)
# Writes into $OUT/coldjit: cold-<mode>-<rep>.log (perf output with the JIT's deoptimization log), steady-<mode>.log,
# and summary.txt: per size the steady time, each cold run's time and its ratio to steady, out of place / in place,
# and per run the deoptimizations of the library's C2 code (org.jccl), at creation and during the timed calls.
set -uo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-.gpu/out}
D="$OUT/coldjit"
mkdir -p "$D"
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$NGPU" -ge 2 ] || { echo "coldjit: needs 2 or more GPUs, found $NGPU"; exit 1; }
MAX=${COLDJIT_MAX:-256K}
CLI=(.jre/bin/java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector
     -cp ".gpu/lib/jccl-core.jar:.gpu/lib/jccl-cuda.jar:.gpu/cli-lib/*" org.jccl.cli.Main perf allreduce
     --backend nccl -b 8 -e "$MAX" -f 8)
for mode in ${COLDJIT_MODES:-g r}; do
  if [ "$mode" = g ]; then how=(-g "$NGPU"); else how=(--ranks "$NGPU"); fi
  timeout -k 10 240 "${CLI[@]}" "${how[@]}" -n 1000 -w 200 > "$D/steady-$mode.log" 2>&1
  echo "[steady $mode] exit $?"
  for rep in $(seq 1 "${COLDJIT_REPS:-2}"); do
    # the deoptimizations go to stdout, between the perf output's lines: those above its "# jccl perf" header
    # happened at creation (jccl's warm-up), those below during the timed calls
    if [ "$mode" = g ]; then
      timeout -k 10 240 "${CLI[0]}" -Xlog:deoptimization=debug "${CLI[@]:1}" "${how[@]}" -n 20 -w 5 \
        > "$D/cold-$mode-$rep.log" 2>&1
    else # every rank JVM logs; the launcher forwards their output
      JCCL_JAVA_OPTS="-Xlog:deoptimization=debug" timeout -k 10 240 "${CLI[@]}" "${how[@]}" -n 20 -w 5 \
        > "$D/cold-$mode-$rep.log" 2>&1
    fi
    echo "[cold $mode $rep] exit $?"
  done
done
python3 - "$D" <<'EOF' | tee "$D/summary.txt"
import glob, os, re, sys
d = sys.argv[1]
def rows(path):
    r = {}
    if not os.path.exists(path):
        return r
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) >= 12 and f[0].isdigit() and f[1].isdigit():
            r[int(f[0])] = (float(f[5]), float(f[9]))
    return r
for mode in ("g", "r"):
    steady = rows(f"{d}/steady-{mode}.log")
    if not steady:
        continue
    colds = sorted(glob.glob(f"{d}/cold-{mode}-*.log"))
    print(f"== all-reduce float sum, {'-g N (threads)' if mode == 'g' else '--ranks N (processes)'}: us out of place / in place; ratio = cold / steady")
    print(f"{'bytes':>8} {'steady':>13} " + " ".join(f"{os.path.basename(c)[:-4]:>13} {'ratio':>11}" for c in colds))
    cr = [rows(c) for c in colds]
    for b in sorted(steady):
        s = steady[b]
        line = f"{b:>8} {s[0]:>6.2f}/{s[1]:<6.2f}"
        for c in cr:
            if b in c:
                x = c[b]
                line += f" {x[0]:>6.2f}/{x[1]:<6.2f} {x[0]/s[0]:>5.2f}/{x[1]/s[1]:<5.2f}"
        print(line)
    for c in colds:
        before, after, seen = [], [], False
        for line in open(c, errors="replace"):
            if line.startswith("# jccl perf"):
                seen = True
            m = re.search(r"\[([\d.]+)s\].*level=4 (?:osr level=4 )?(org\.jccl\.\S+) trap_bci=(\d+) (?:osr_bci=\d+ )?(\w+)", line)
            if m:
                (after if seen else before).append(f"{m.group(1)}s {m.group(2).split('(')[0]} bci {m.group(3)} {m.group(4)}")
        print(f"  {os.path.basename(c)}: C2 code of org.jccl deoptimized {len(before)} times at creation, {len(after)} during the timed calls")
        for t in before:
            print("    creation: " + t)
        for t in after:
            print("    timed:    " + t)
EOF
