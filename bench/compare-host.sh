#!/usr/bin/env bash
# One run, one machine: jccl's host engine next to Open MPI and Gloo for every rank count.
#
#   bench/compare-host.sh [-n 2,4,8,16] [-c allreduce,allgather,...|all] [-b 8] [-e 64M] [-f 2]
#                         [-T 0.2] [-x jccl,mpi,gloo] [-t 1800] [-o DIR]
#
# For each rank count N it runs `./jccl perf <coll> --ranks N -z 1 -n 200 ... --json` (blocking calls back to
# back, timed like the references), Open MPI's driver
# (bench/mpi/mpi_coll under mpirun -np N --bind-to none, Open MPI's default transports) and
# the Gloo driver (bench/gloo/gloo_bench.py), then writes DIR/compare.md: the machine, the
# versions, and one markdown table per collective and N (size | jccl us | Open MPI us |
# Gloo us | MPI/jccl | Gloo/jccl). Every JSON and raw table stays in DIR. See bench/README.md.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
ranks="2" colls="all" minb="8" maxb="64M" factor="2" target="0.2" skip="" limit="1800"
out="$root/bench/results/$(date -u +%Y%m%d-%H%M%S)"

usage() {
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    echo "  -n rank counts (comma list, default 2)   -c collectives (comma list or all, default all)"
    echo "  -b/-e/-f sizes as nccl-tests (default 8 64M 2)   -T reference seconds per size (default 0.2)"
    echo "  -x libraries to skip (jccl,mpi,gloo)   -t seconds one library run may take (default 1800)"
    echo "  -o results directory (default bench/results/<UTC date>)"
    exit "${1:-0}"
}
while getopts "n:c:b:e:f:T:x:t:o:h" opt; do
    case "$opt" in
        n) ranks="$OPTARG" ;; c) colls="$OPTARG" ;; b) minb="$OPTARG" ;; e) maxb="$OPTARG" ;;
        f) factor="$OPTARG" ;; T) target="$OPTARG" ;; x) skip="$OPTARG" ;; t) limit="$OPTARG" ;;
        o) out="$OPTARG" ;; h) usage 0 ;; *) usage 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "compare-host.sh: unexpected argument '$1' (see -h)" >&2; exit 2; }
for n in ${ranks//,/ }; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "compare-host.sh: -n: '$n' is not a rank count; give e.g. -n 2,4" >&2; exit 2; }
done
prog=compare-host.sh
. "$here/common.sh"
check_colls
start_results

# ---- the machine and the versions, recorded before anything runs ----
cpu_model="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
cores="$(nproc)"
mpi_version="$(mpirun --version 2>/dev/null | head -1 | sed 's/^mpirun (Open MPI) /Open MPI /' || true)"
torch_version="$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo 'not installed')"
jccl_commit="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
header="$out/header.md"
{
    echo "# jccl vs Open MPI vs Gloo on one host"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: ${cpu_model:-unknown CPU}, $cores cores ($(hostname)), $(free -g | awk '/^Mem:/{print $2}') GiB RAM, $(uname -sr)"
    echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (the machine may be shared: numbers are only as good as its quietness)"
    echo "- jccl: commit $jccl_commit"
    echo "- Open MPI: ${mpi_version:-not installed}"
    echo "- torch: $torch_version (gloo backend over TCP loopback, CPU tensors, 1 torch thread per rank)"
    echo "- sizes: -b $minb -e $maxb -f $factor, float sum; reference iterations adaptive (~$target s per size)"
} > "$header"
cat "$header" | tee -a "$out/run.log"
load1="$(cut -d' ' -f1 /proc/loadavg)"
if awk -v l="$load1" -v c="$cores" 'BEGIN { exit !(l > c / 2) }'; then
    # Busy-polling ranks (Open MPI, jccl) lose whole scheduler slices to other processes.
    log "WARNING: load average $load1 on $cores cores before the run: other processes compete for the cores, times will be inflated and noisy"
    echo "- WARNING: the machine was loaded (load average $load1 on $cores cores) when the run started" >> "$header"
fi

# ---- Open MPI: build the driver, find the transport its defaults pick ----
mpi_flags=(--bind-to none)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
if ! skipped mpi; then
    if ! command -v mpirun >/dev/null; then
        log "Open MPI: mpirun not found (apt-get install -y openmpi-bin libopenmpi-dev); the Open MPI column is empty"
        skip="$skip,mpi"
    else
        build_mpi_coll
        btl="$(timeout 60 mpirun -np 2 "${mpi_flags[@]}" --oversubscribe --mca btl_base_verbose 100 \
                 "$here/mpi/mpi_coll" allreduce -b 8 -e 8 -T 0.001 -c 0 2>&1 \
               | sed -n 's/.*Using \([a-z0-9_]*\) btl for send.*/\1/p' | sort -u | paste -sd, || true)"
        log "- Open MPI transport between local ranks (its defaults, no MCA flags): ${btl:-not reported (Open MPI 4.x uses btl vader, 5.x btl sm)}"
        echo "- Open MPI transport between local ranks (defaults, no MCA flags): ${btl:-vader/sm by version}; mpirun ${mpi_flags[*]}" >> "$header"
    fi
fi

# ---- jccl: its perf tool lands with issues 3/4; tolerate its absence ----
jccl_ok=0
if ! skipped jccl; then
    default_java
    # The first ./jccl call builds the project when its jars are stale: minutes on a busy machine.
    [ -x "$root/jccl" ] && log "jccl: ./jccl perf --help (builds jccl first when needed)"
    if [ -x "$root/jccl" ] && (cd "$root" && timeout 900 ./jccl perf --help > "$out/jccl-help.txt" 2>&1); then
        jccl_ok=1
    else
        if [ -x "$root/jccl" ]; then
            log "jccl: ./jccl perf --help failed (see $out/jccl-help.txt): the jccl column is empty and no ratio is computed"
        else
            log "jccl: ./jccl is not in $root (it lands with issues 3/4): the jccl column is empty and no ratio is computed"
        fi
    fi
fi

run_logged() { # name, command...: runs under the deadline, output to DIR/name.txt and the terminal
    local name="$1"; shift
    log "\$ $*"
    if timeout "$limit" "$@" 2>&1 | tee "$out/$name.txt"; then return 0; fi
    log "$name: failed or exceeded ${limit}s (see $out/$name.txt); continuing"
    return 0
}

for n in ${ranks//,/ }; do
    log ""
    log "## $n ranks"
    if [ "$jccl_ok" = 1 ]; then
        for c in ${colls//,/ }; do
            (cd "$root" && run_logged "jccl-n$n-$c" ./jccl perf "$c" --ranks "$n" -b "$minb" -e "$maxb" -f "$factor" -c 0 -z 1 -w 20 -n 200 \
                --json "$out/jccl-n$n-$c.json")
        done
    fi
    if ! skipped mpi; then
        flags=("${mpi_flags[@]}")
        if [ "$n" -gt "$cores" ]; then
            flags+=(--oversubscribe)
            log "Open MPI: $n ranks > $cores cores: --oversubscribe (Open MPI then yields when idle)"
        fi
        run_logged "mpi-n$n" mpirun -np "$n" "${flags[@]}" "$here/mpi/mpi_coll" "$colls" -b "$minb" -e "$maxb" -f "$factor" \
            -T "$target" --json "$out/mpi-n$n.json"
    fi
    if ! skipped gloo; then
        run_logged "gloo-n$n" /usr/bin/python3 "$here/gloo/gloo_bench.py" "$colls" --ranks "$n" -b "$minb" -e "$maxb" -f "$factor" \
            -T "$target" --json "$out/gloo-n$n.json"
    fi
done

write_compare "$out"/*.json
