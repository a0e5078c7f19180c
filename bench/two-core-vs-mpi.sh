#!/usr/bin/env bash
# jccl against Open MPI with 2 ranks on a 2-core (virtual) machine, in rounds that each time the
# two libraries back to back and read the cache-line round trip between the two CPUs around every
# run (floor/line_rtt.c). On a VM the hypervisor may place the two virtual CPUs on cores that share
# a cache or on cores that do not, and move them from one run to the next; every small collective
# of either library then takes about twice as long, so comparing runs made at different placements
# compares placements. The table compares each library's runs at the same placement only ("near":
# every probe around the run under the threshold; "far": every probe over it; a run whose probes
# straddle it counts in neither).
#
#   bench/two-core-vs-mpi.sh [-r rounds (6)] [-o dir] [-t threshold ns (250)] [-- perf flags]
#
# perf flags (both libraries): default allreduce -b 8 -e 16M -f 8 -n 20 -w 5 (nccl-tests' counts:
# a cold library), blocking (jccl -z 1; mpi_coll blocks by default). jccl runs as ./jccl perf (built
# when needed; JCCL_BUILD picks the build, as ./jccl does). Results: DIR/{jccl,mpi}-N.json, DIR/probes.txt,
# DIR/table.md (also printed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
prog="$(basename "$0")"
# shellcheck source=common.sh
. "$here/common.sh"
rounds=6
threshold=250
out="$root/bench/results/two-core-$(date -u +%Y%m%dT%H%M%SZ)"
while getopts "r:o:t:" o; do
    case "$o" in
        r) rounds="$OPTARG" ;;
        o) out="$OPTARG" ;;
        t) threshold="$OPTARG" ;;
        *) echo "usage: $0 [-r rounds] [-o dir] [-t threshold ns] [-- perf flags]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(allreduce -b 8 -e 16M -f 8 -n 20 -w 5)
coll="${flags[0]}"
command -v mpirun >/dev/null || { echo "$0: mpirun not found: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 1; }
command -v cc >/dev/null || { echo "$0: no C compiler for floor/line_rtt.c: apt-get install gcc" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "$0: needs 2 CPUs, this machine has $(nproc)" >&2; exit 1; }
start_results
build_mpi_coll
default_java
rtt="$(mktemp -d "${TMPDIR:-/tmp}/line_rtt.XXXXXX")/line_rtt" # a binary: not among the results
cc -O2 -pthread -o "$rtt" "$here/floor/line_rtt.c"
mpi=(mpirun -np 2 --bind-to core)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "cpu: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores"
    echo "open mpi: $(mpirun --version 2>/dev/null | head -n 1)"
    echo "jccl commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "flags: ${flags[*]}"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/machine.txt"
"$root/jccl" info > /dev/null # builds jccl when needed, outside the rounds
: > "$out/probes.txt"
for r in $(seq 1 "$rounds"); do
    p1=$("$rtt")
    "$root/jccl" perf "${flags[@]}" --ranks 2 -z 1 -c 0 --json "$out/jccl-$r.json" > "$out/jccl-$r.txt" 2>&1
    p2=$("$rtt")
    "${mpi[@]}" "$here/mpi/mpi_coll" "${flags[@]}" -c 0 --json "$out/mpi-$r.json" > "$out/mpi-$r.txt" 2>&1
    p3=$("$rtt")
    echo "$r $p1 $p2 $p3" >> "$out/probes.txt"
    echo "round $r: line round trip $p1 / $p2 / $p3 ns (before jccl / between / after Open MPI)"
done
python3 "$here/two_core_table.py" "$out" "$threshold" "$coll" | tee "$out/table.md"
