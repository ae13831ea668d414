#!/usr/bin/env bash
# Builds the CUDA test binary and the CUDA kernel benchmark into build-gpu/
# and copies the non-CUDA shared libraries they need into build-gpu/lib/, so
# the folder can be carried to a GPU machine that has only the CUDA toolkit.
#   scripts/bundle_gpu_build.sh && <carry build-gpu> && scripts/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${VT_GPU_BUILD:-build-gpu}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVT_CUDA=ON
cmake --build "$BUILD" -j "${VT_JOBS:-$(nproc)}" --target test_cuda bench_cuda_kernels
mkdir -p "$BUILD/lib"
for bin in "$BUILD/tests/test_cuda" "$BUILD/bench/bench_cuda_kernels"; do
  strip --strip-debug "$bin" || true
  # Everything outside the C runtime and the CUDA toolkit/driver travels along.
  ldd "$bin" | awk '/=> \//{print $3}' |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux|libgcc_s|libstdc\+\+)\.so|libcuda|libcublas|libcudart|libnvidia' |
    while read -r lib; do cp -uL "$lib" "$BUILD/lib/"; done
done
du -sh "$BUILD/lib" "$BUILD/tests/test_cuda" "$BUILD/bench/bench_cuda_kernels"
