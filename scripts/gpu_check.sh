#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: runs the CUDA tests (each CUDA kernel
# against its CPU twin) and the fused-kernel bandwidth benchmark (GB/s of each
# kernel against a device-to-device copy of the same bytes), in a few minutes.
# Uses a carried build (build-gpu/, made by scripts/bundle_gpu_build.sh) when
# present, otherwise builds the two targets here (needs the setup packages).
# Prints one PASS/FAIL line per stage and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${VT_GPU_BUILD:-build-gpu}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || {
  echo "gpu_check: no NVIDIA GPU visible"; exit 2; }

if [ ! -x "$BUILD/tests/test_cuda" ] || [ ! -x "$BUILD/bench/bench_cuda_kernels" ]; then
  echo "gpu_check: no carried build in $BUILD, building"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVT_CUDA=ON || exit 1
  cmake --build "$BUILD" -j "$(nproc)" --target test_cuda bench_cuda_kernels || exit 1
fi
export LD_LIBRARY_PATH="$PWD/$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

status=0
if "$BUILD/tests/test_cuda" --gtest_brief=1; then echo "gpu_check: cuda tests PASS"
else echo "gpu_check: cuda tests FAIL"; status=1; fi
if "$BUILD/bench/bench_cuda_kernels"; then echo "gpu_check: bandwidth benchmark PASS"
else echo "gpu_check: bandwidth benchmark FAIL"; status=1; fi
exit $status
