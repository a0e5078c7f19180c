#!/usr/bin/env bash
# jccl's mpi backend next to raw Open MPI, in one run: all-reduce (float sum) at 8 B and 16 MB,
# timed the same way on both sides (blocking calls back to back, no barrier between: jccl perf -z 1 and
# mpi_coll by default), jccl in both JCCL_MPI_BLOCKING modes, several interleaved rounds; the best
# round of each (interference from other work on the machine only ever adds time) and the
# median, and the ratios, as a markdown table (docs/BENCHMARKS.md, "MPI backend").
#
#   bench/mpi/jccl-vs-mpi.sh [-n ranks (2)] [-r rounds (9)] [-o dir (bench/results/mpi-<UTC date>)]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
ranks=2
rounds=9
out="$root/bench/results/mpi-$(date -u +%Y%m%dT%H%M%SZ)"
while getopts "n:r:o:" o; do
    case "$o" in
        n) ranks="$OPTARG" ;;
        r) rounds="$OPTARG" ;;
        o) out="$OPTARG" ;;
        *) echo "usage: $0 [-n ranks] [-r rounds] [-o dir]" >&2; exit 2 ;;
    esac
done
command -v mpirun >/dev/null || { echo "$0: mpirun not found: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 1; }
[ -x "$here/mpi_coll" ] || "$here/build.sh" >&2
mkdir -p "$out"
mpi=(mpirun --bind-to none -np "$ranks")
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
[ "$ranks" -gt "$(nproc)" ] && mpi+=(--oversubscribe)
# 16 MB needs few iterations, 8 B many (and enough warm-up for the JIT).
sizes=("8 -n 100000 -w 100000" "16M -n 30 -w 10")

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "cpu: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores"
    echo "kernel: $(uname -r)"
    echo "open mpi: $(mpirun --version 2>/dev/null | head -n 1)"
    echo "jdk: $(JCCL_PRINT_JAVA=1 "$root/jccl")"
    echo "jccl commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"

for ((r = 1; r <= rounds; r++)); do
    for s in "${sizes[@]}"; do
        read -r size n nv w wv <<<"$s"
        tag="${size}-r$r"
        "${mpi[@]}" "$here/mpi_coll" allreduce -b "$size" -e "$size" --json "$out/mpi-$tag.json" >/dev/null
        for mode in poll native; do
            "${mpi[@]}" -x JCCL_MPI_BLOCKING="$mode" "$root/jccl" perf allreduce --backend mpi -b "$size" -e "$size" \
                -z 1 "$n" "$nv" "$w" "$wv" --json "$out/jccl-$mode-$tag.json" >/dev/null
        done
    done
    echo "round $r of $rounds done" >&2
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"

python3 - "$out" "$ranks" "$rounds" <<'EOF' | tee "$out/table.md"
import glob, json, os, statistics, sys
out, ranks, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
def times(pattern):
    t = []
    for f in sorted(glob.glob(os.path.join(out, pattern))):
        row = json.load(open(f))["runs"][0]["rows"][0]
        assert row["oop"]["wrong"] == 0 and row["ip"]["wrong"] == 0, f
        t.append(row["oop"]["time_us"])
    return t
print(open(os.path.join(out, "machine.txt")).read().strip().replace("\n", "  \n"))
print()
print(f"All-reduce, float sum, out of place, {ranks} ranks, {rounds} interleaved rounds: best round (median) in us; "
      "ratio = jccl / Open MPI of the best rounds.")
print()
print("| size | Open MPI MPI_Allreduce | jccl mpi, JCCL_MPI_BLOCKING=poll | ratio | jccl mpi, JCCL_MPI_BLOCKING=native | ratio |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
fmt = lambda v: f"{v:.2f}" if v < 100 else f"{v:.0f}"
for size, label in (("8", "8 B"), ("16M", "16 MB")):
    m, p, n = (times(f"{k}-{size}-r*.json") for k in ("mpi", "jccl-poll", "jccl-native"))
    cell = lambda t: f"{fmt(min(t))} ({fmt(statistics.median(t))})"
    print(f"| {label} | {cell(m)} | {cell(p)} | {min(p) / min(m):.2f}x | {cell(n)} | {min(n) / min(m):.2f}x |")
EOF
echo "files in $out" >&2
