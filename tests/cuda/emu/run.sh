#!/usr/bin/env bash
# Runs the CUDA tests (tests/cuda/*.cpp) on a CPU-only machine against an
# emulation of CUDA (emu.h: fibers per thread, barriers, shuffles) and of
# cuBLAS (cublas_emu.cpp: naive column-major GEMMs as the cuBLAS docs define
# them). It checks the logic of kernels/cuda/*.cu (indexing, reductions,
# aliasing, the row-major/cuBLAS mapping, the Tensor-API dispatch) where no
# GPU is available; it says nothing about speed, races or device math ulps,
# which scripts/gpu_check.sh covers on a GPU.
#   usage: tests/cuda/emu/run.sh [gtest args]     (about 1-2 min on 2 cores)
# Needs a configured CUDA build (VT_BUILD, default build-cuda) for vt_core.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
EMU="$ROOT/tests/cuda/emu"
BUILD=${VT_BUILD:-$ROOT/build-cuda}
WORK=${VT_EMU_WORK:-$BUILD/cuda-emu}
CUDA_INC=${CUDA_INC:-$(dirname "$(dirname "$(command -v nvcc)")")/include}
JOBS=${VT_JOBS:-2}
cmake --build "$BUILD" --target vt_core >/dev/null
mkdir -p "$WORK/obj"
rm -rf "$WORK/inc" && python3 "$EMU/transform.py" "$ROOT/kernels/cuda" "$WORK/inc/kernels/cuda"

COMMON="-std=c++17 -O1 -fopenmp -I$WORK/inc -I$ROOT -I$CUDA_INC -DVT_CUDA=1 -w"
COMMON="$COMMON -DVT_FIXTURES_DIR=\"$ROOT/tests/fixtures\" -DVT_SHARED_DATA_DIR=\"$ROOT/../shared/data\""
# Emulated sources get emu.h force-included; the rest compile as in the build.
{
  for f in "$EMU/runtime.cpp" "$WORK"/inc/kernels/cuda/*_emu.cpp; do echo "emu $f"; done
  for f in "$EMU/cublas_emu.cpp" "$ROOT"/kernels/*.cpp "$ROOT"/kernels/cpu/*.cpp "$ROOT"/tests/cuda/*.cpp; do
    echo "plain $f"
  done
} > "$WORK/sources.txt"
compile() {
  local kind=$1 f=$2 o
  o="$WORK/obj/$(echo "$f" | tr / _).o"
  if [ -f "$o" ] && [ "$o" -nt "$f" ] && [ "$o" -nt "$EMU/emu.h" ]; then echo "$o"; return; fi
  if [ "$kind" = emu ]; then g++ $COMMON -include "$EMU/emu.h" -c "$f" -o "$o"
  else g++ $COMMON -c "$f" -o "$o"; fi
  echo "$o"
}
export -f compile
export COMMON WORK EMU
xargs -P "$JOBS" -L 1 bash -c 'compile "$0" "$1"' < "$WORK/sources.txt" > "$WORK/objects.txt"
# Objects of transformed .cu sources from an earlier run of a removed file would linger: link only this run's list.
g++ -fopenmp $(cat "$WORK/objects.txt") "$BUILD/core/libvt_core.a" -ldnnl -lgtest -lgtest_main \
  $(pkg-config --libs spdlog fmt libzip) -pthread -o "$WORK/test_cuda_emu"
"$WORK/test_cuda_emu" "$@"
