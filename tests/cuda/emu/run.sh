#!/usr/bin/env bash
# Runs the CUDA tests (tests/cuda/*.cpp) on a CPU-only machine against an
# emulation of CUDA (emu.h: fibers per thread, barriers, shuffles) and of
# cuBLAS (cublas_emu.cpp: naive column-major GEMMs as the cuBLAS docs define
# them). It checks the logic of kernels/cuda/*.cu (indexing, reductions,
# aliasing, the row-major/cuBLAS mapping, the Tensor-API dispatch) where no
# GPU is available; it says nothing about speed, races or device math ulps,
# which scripts/gpu_check.sh covers on a GPU.
# The binary is the CMake target test_cuda_emu (tests/cuda/emu/CMakeLists.txt),
# built in every VT_CUDA build and run by ctest under the label `emu`
# (`ctest -L emu`); this script builds and runs it alone.
#   usage: tests/cuda/emu/run.sh [gtest args]   (VT_BUILD: a configured VT_CUDA build, default build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${VT_BUILD:-$ROOT/build}
cmake --build "$BUILD" --target test_cuda_emu
"$BUILD/tests/cuda/emu/test_cuda_emu" "$@"
