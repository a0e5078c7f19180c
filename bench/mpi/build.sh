#!/usr/bin/env bash
# Builds the MPI reference driver next to this script: bench/mpi/mpi_coll.
# Needs Open MPI's compiler wrapper (Debian: apt-get install openmpi-bin libopenmpi-dev).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v mpicc >/dev/null 2>&1; then
    echo "build.sh: mpicc not found; install Open MPI first: apt-get install -y openmpi-bin libopenmpi-dev" >&2
    exit 1
fi
mpicc -O2 -Wall -Wextra -std=gnu11 -o "$here/mpi_coll" "$here/mpi_coll.c" -lm
echo "built $here/mpi_coll ($(mpirun --version 2>/dev/null | head -1))"
