#!/usr/bin/env bash
# Builds custom_allreduce.cu into the fatbin jccl-cuda loads (org/jccl/cuda/custom_allreduce.fatbin) and records
# the source's SHA-256 beside it (custom_allreduce.sha256); CustomAllReduceSourceTest checks that they match, so
# the checked-in binary cannot drift from the source. Needs nvcc (CUDA 12.x or 13.x); the build and CI do not.
#   jccl-cuda/src/main/cuda/gen-custom-allreduce.sh
# SASS for sm_80 (A100; it also runs on sm_86/sm_89) and sm_90 (H100/H200), PTX for compute_90 so that the
# driver JIT-compiles it for any newer GPU (Blackwell and later) with the grid wait of sm_90 (see the .cu's header).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
res="$here/../resources/org/jccl/cuda"
mkdir -p "$res"
NVCC=${NVCC:-nvcc}
"$NVCC" --version | tail -2
"$NVCC" -O3 -std=c++17 -fatbin -Xptxas -v \
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -o "$res/custom_allreduce.fatbin" "$here/custom_allreduce.cu"
sha256sum "$here/custom_allreduce.cu" | cut -d' ' -f1 > "$res/custom_allreduce.sha256"
ls -l "$res/custom_allreduce.fatbin"; cat "$res/custom_allreduce.sha256"
