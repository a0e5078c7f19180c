#!/usr/bin/env bash
# jccl across hosts (TCP) next to Open MPI's TCP transport, on two pretend hosts: Linux network
# namespaces joined by veth pairs on a bridge, one run, same sizes, ratios in a markdown table.
#
#   bench/tcp/compare-netns.sh [-c allreduce,allgather,...|all] [-b 8] [-e 64M] [-f 2] [-p 1]
#                              [-r 1] [-T 0.2] [-S 2] [-x jccl,mpi] [-t 1800] [-o DIR]
#
# Needs root, iproute2, Open MPI (apt-get install -y openmpi-bin libopenmpi-dev) and JDK 25.
# jccl: ./jccl perf -z 1 (back-to-back blocking calls, timed as bench/mpi/mpi_coll times Open MPI)
# as rank r inside namespace r (JCCL_HOST_ID set per namespace: namespaces share
# the hostname and boot id); -p ranks per namespace > 1 gives the hierarchical engine (shared
# memory inside a namespace). Open MPI: mpirun inside the first namespace with --mca btl tcp,self
# over eth0 (the veth), the remote daemon started through a launch agent that does `ip netns
# exec` instead of ssh. -r R runs both libraries R times, alternating, and keeps each one's best
# time per size (on a shared machine the other load only ever adds time). Namespaces are removed
# on exit, also on failure or Ctrl-C. -S: jccl perf --settle S (each size is timed once the JIT
# compiled it, waiting at most S seconds; 0: right after its warm-up calls). Results and raw
# tables stay in DIR (default bench/results/netns-<UTC date>); DIR/compare.md has the tables.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
colls="allreduce,allgather,reducescatter,broadcast,alltoall" minb="8" maxb="64M" factor="2" per="1" repeats="1"
target="0.2" skip="" limit="1800" settle="2"
out="$root/bench/results/netns-$(date -u +%Y%m%d-%H%M%S)"

usage() {
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}
while getopts "c:b:e:f:p:r:T:S:x:t:o:h" opt; do
    case "$opt" in
        c) colls="$OPTARG" ;; b) minb="$OPTARG" ;; e) maxb="$OPTARG" ;; f) factor="$OPTARG" ;; p) per="$OPTARG" ;;
        r) repeats="$OPTARG" ;;
        T) target="$OPTARG" ;; S) settle="$OPTARG" ;; x) skip="$OPTARG" ;; t) limit="$OPTARG" ;; o) out="$OPTARG" ;; h) usage 0 ;; *) usage 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "compare-netns.sh: unexpected argument '$1' (see -h)" >&2; exit 2; }
[[ "$per" =~ ^[1-9][0-9]*$ ]] || { echo "compare-netns.sh: -p: '$per' is not a rank count" >&2; exit 2; }
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "compare-netns.sh: -r: '$repeats' is not a repeat count" >&2; exit 2; }
prog=compare-netns.sh
. "$root/bench/common.sh"
check_colls
[ "$(id -u)" = 0 ] || { echo "compare-netns.sh: network namespaces need root" >&2; exit 2; }
command -v ip >/dev/null || { echo "compare-netns.sh: the ip command (iproute2) is missing" >&2; exit 2; }
if ! skipped mpi && ! command -v mpirun >/dev/null; then
    echo "compare-netns.sh: mpirun not found: apt-get install -y openmpi-bin libopenmpi-dev (or -x mpi)" >&2; exit 2
fi
default_java
start_results

# ---- two pretend hosts: namespaces h0, h1 (eth0 = 10.77.0.1, .2) on a bridge in a switch namespace ----
pfx="jcb$$"
sw="$pfx-sw"
made=()
cleanup() {
    for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ip netns add "$sw"; made+=("$sw")
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
for i in 0 1; do
    ns="$pfx-h$i"
    ip netns add "$ns"; made+=("$ns")
    ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "p$i" master br0
    ip -n "$sw" link set "p$i" up
    ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
done
mtu="$(ip -n "$pfx-h0" -o link show eth0 | sed -n 's/.* mtu \([0-9]*\).*/\1/p')"

# ---- the machine and the versions, recorded before anything runs ----
cpu_model="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
cores="$(nproc)"
n=$((2 * per))
header="$out/header.md"
{
    echo "# jccl vs Open MPI across two network namespaces (TCP over veth + bridge)"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: ${cpu_model:-unknown CPU}, $cores cores ($(hostname)), $(free -g | awk '/^Mem:/{print $2}') GiB RAM, $(uname -sr)"
    echo "- network: 2 namespaces, eth0 = veth (MTU $mtu) to a Linux bridge in a third namespace; $per rank(s) per namespace, $n ranks"
    echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (the machine may be shared: numbers are only as good as its quietness)"
    echo "- jccl: commit $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown), JCCL_* transport settings at their defaults"
    echo "- Open MPI: $(mpirun --version 2>/dev/null | head -1 | sed 's/^mpirun (Open MPI) /Open MPI /' || echo 'not installed'), --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include eth0"
    echo "- sizes: -b $minb -e $maxb -f $factor, float sum; Open MPI iterations adaptive (~$target s per size); jccl perf -z 1 (back-to-back blocking calls, as mpi_coll times), warm-up/iterations per size band: <= 64 KiB 20000/50000, <= 1 MiB 20000/200, larger 20/100 (each band a fresh JVM: the JIT needs tens of thousands of calls to settle on 2 busy cores), --settle $settle (each size and placement timed after at least 0.25 s of untimed calls, 1.5 s from 1 MiB, and once no rank's JIT compiled anything in a ~20 ms block of them, waiting at most $settle s)"
    echo "- repeats: $repeats, libraries alternating; each cell is the library's best mean over the repeats"
} > "$header"
cat "$header" | tee -a "$out/run.log"

run_logged() { # name, command...: runs under the deadline, output to DIR/name.txt
    local name="$1"; shift
    log "\$ $*"
    if timeout "$limit" "$@" > "$out/$name.txt" 2>&1; then tail -n +1 "$out/$name.txt" | grep -v '^#  Rank' || true; return 0; fi
    log "$name: failed or exceeded ${limit}s (see $out/$name.txt); continuing"
    return 0
}

# ---- jccl: rank r = namespace r / per, one ./jccl perf per rank ----
# Sizes in three bands, so that small sizes run enough iterations for the JIT to have compiled the
# hot path (jccl perf warms up at the smallest and largest size of a run) and large ones not too many.
bytes_of() { # 64K -> 65536 (K, M, G: powers of 1024)
    local v="${1^^}"
    case "$v" in *K) echo $(( ${v%K} << 10 )) ;; *M) echo $(( ${v%M} << 20 )) ;; *G) echo $(( ${v%G} << 30 )) ;; *) echo "$v" ;; esac
}
lo=$(bytes_of "$minb"); hi=$(bytes_of "$maxb")
[[ "$factor" =~ ^[2-9]$|^[1-9][0-9]+$ ]] || { echo "compare-netns.sh: -f: give an integer factor >= 2" >&2; exit 2; }
bands=() # "first last warmup iters" over the sizes lo * factor^k <= hi (the same sizes Open MPI runs)
band_of() { if [ "$1" -le $((64 << 10)) ]; then echo 0; elif [ "$1" -le $((1 << 20)) ]; then echo 1; else echo 2; fi; }
warm=(20000 20000 20); iters=(50000 200 100)
first=(); last=()
for ((x = lo; x <= hi; x *= factor)); do
    b=$(band_of "$x")
    [ -z "${first[$b]:-}" ] && first[$b]=$x
    last[$b]=$x
done
for b in 0 1 2; do
    [ -n "${first[$b]:-}" ] && bands+=("${first[$b]} ${last[$b]} ${warm[$b]} ${iters[$b]}")
done
run_jccl() { # $1: repeat number
    local rep="$1"
    for c in ${colls//,/ }; do
        k=0
        for band in "${bands[@]}"; do
            read -r bmin bmax warm iters <<< "$band"
            k=$((k + 1))
            port=$((29600 + RANDOM % 1000))
            log "\$ jccl perf $c -b $bmin -e $bmax -f $factor -w $warm -n $iters -z 1 -c 0 --settle $settle, $n ranks in $pfx-h0/h1"
            pids=()
            for ((r = 0; r < n; r++)); do
                h=$((r / per))
                ip netns exec "$pfx-h$h" env -u RANK -u WORLD_SIZE JCCL_RANK=$r JCCL_WORLD_SIZE=$n \
                    JCCL_LOCAL_RANK=$((r % per)) JCCL_LOCAL_WORLD_SIZE=$per JCCL_STORE=10.77.0.1:$port \
                    JCCL_JOB_ID="netns$$-$c-$k-$rep" JCCL_HOST_ID="host$h" \
                    bash -c "cd '$root' && exec timeout $limit ./jccl perf $c -b $bmin -e $bmax -f $factor -w $warm -n $iters -z 1 -c 0 --settle $settle --json '$out/raw/jccl-$c-$k-$rep.json'" \
                    > "$out/raw/jccl-$c-$k-$rep-r$r.txt" 2>&1 &
                pids+=($!)
            done
            ok=1
            for p in "${pids[@]}"; do wait "$p" || ok=0; done
            if [ "$ok" = 1 ]; then grep -v '^#  Rank' "$out/raw/jccl-$c-$k-$rep-r0.txt" | tee -a "$out/run.log" >/dev/null; else
                log "jccl $c failed: see $out/raw/jccl-$c-$k-$rep-r*.txt"; fi
        done
    done
}

# ---- Open MPI: mpirun in h0; the daemon in h1 through an agent that enters the namespace ----
btl="tcp,self"
[ "$per" -gt 1 ] && btl="tcp,self,vader" # shared memory inside a namespace, as jccl does
if ! skipped mpi; then
    build_mpi_coll
    agent="$out/nsagent.sh"
    cat > "$agent" <<AGENT
#!/bin/bash
# Open MPI launch agent (plm_rsh_agent): "nsagent.sh HOST CMD..." runs CMD in HOST's namespace, as ssh would.
host="\$1"; shift
case "\$host" in
  10.77.0.1) ns="$pfx-h0" ;; 10.77.0.2) ns="$pfx-h1" ;; *) echo "nsagent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
    chmod +x "$agent"
fi
run_mpi() { # $1: repeat number
    run_logged "raw/mpi-$1" ip netns exec "$pfx-h0" mpirun --allow-run-as-root --bind-to none -np "$n" \
        --host "10.77.0.1:$per,10.77.0.2:$per" --mca plm_rsh_agent "$agent" --mca pml ob1 --mca btl "$btl" \
        --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
        "$root/bench/mpi/mpi_coll" "$colls" -b "$minb" -e "$maxb" -f "$factor" -T "$target" --json "$out/raw/mpi-$1.json"
}

mkdir -p "$out/raw"
if ! skipped jccl; then
    (cd "$root" && ./jccl perf --help >/dev/null) || { log "jccl: ./jccl perf does not run (see above)"; exit 1; }
fi
for ((rep = 1; rep <= repeats; rep++)); do
    log ""
    log "## repeat $rep of $repeats"
    skipped jccl || run_jccl "$rep"
    skipped mpi || run_mpi "$rep"
done
# one JSON per library: the best (lowest) time of each row over the repeats
for lib in jccl mpi; do
    raw=("$out"/raw/"$lib"-*.json)
    if [ -e "${raw[0]}" ]; then /usr/bin/python3 "$root/bench/compare_tables.py" --best "$out/$lib.json" "${raw[@]}"; fi
done

write_compare "$out"/jccl.json "$out"/mpi.json
