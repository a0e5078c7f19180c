# Sourced by bench/compare-host.sh, bench/tcp/compare-netns.sh and bench/two-core-vs-mpi.sh after they parsed their options:
# what they do the same way. Uses their $prog (name in messages), $root (the checkout), $colls,
# $skip, $out and $header.

all_colls="allreduce,allgather,reducescatter,broadcast,reduce,alltoall,gather,scatter,sendrecv"

# -c all: every collective; refuses an unknown one.
check_colls() {
    if [ "$colls" = all ]; then colls="$all_colls"; fi
    local c
    for c in ${colls//,/ }; do
        [[ ",$all_colls," == *",$c,"* ]] || { echo "$prog: -c: unknown collective '$c'; use some of $all_colls or all" >&2; exit 2; }
    done
}

# Whether -x names library $1.
skipped() { [[ ",$skip," == *",$1,"* ]]; }

# JDK 25 for ./jccl when JAVA_HOME is unset.
default_java() {
    if [ -z "${JAVA_HOME:-}" ] && [ -d /usr/lib/jvm/temurin-25-jdk-amd64 ]; then
        export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
    fi
}

# The results directory $out (made absolute) with an empty run.log, which log appends to.
start_results() {
    mkdir -p "$out"
    out="$(cd "$out" && pwd)"
    : > "$out/run.log"
}
log() { echo "$*" | tee -a "$out/run.log"; }

# Builds Open MPI's driver bench/mpi/mpi_coll when it is missing or older than its source.
build_mpi_coll() {
    local mpi="$root/bench/mpi"
    if [ ! -x "$mpi/mpi_coll" ] || [ "$mpi/mpi_coll.c" -nt "$mpi/mpi_coll" ]; then
        "$mpi/build.sh" | tee -a "$out/run.log"
    fi
}

# Renders $out/compare.md (the header, then the tables) from those of the JSON files given that
# exist, and prints it; exits 1 when there is none.
write_compare() {
    echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$header"
    local jsons=() f
    for f in "$@"; do
        if [ -f "$f" ]; then jsons+=("$f"); fi
    done
    if [ ${#jsons[@]} -eq 0 ]; then
        log "no library produced results; see $out/run.log"
        exit 1
    fi
    /usr/bin/python3 "$root/bench/compare_tables.py" --header "$header" "${jsons[@]}" > "$out/compare.md"
    echo
    cat "$out/compare.md"
    echo
    echo "results: $out (compare.md, *.json, raw tables *.txt, run.log)"
}
