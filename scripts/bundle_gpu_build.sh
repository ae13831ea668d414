#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh runs into build-gpu.tar.xz (with the
# tracked tree at most 60 MiB, below), for a GPU machine that has the CUDA toolkit (or PyTorch's
# nvidia-* wheels), the driver and python3 with torch/timm, but none of this
# project's Debian libraries:
#
#   vtrain-gpu/scripts/gpu_check.sh, tools/bench_{timm,dit}_step.py (+ step_bench_common.py)
#   vtrain-gpu/build-gpu/tests/test_cuda        CUDA kernels vs CPU twins
#   vtrain-gpu/build-gpu/bench/...              bench_cuda_kernels, bench_allreduce
#                                               (NCCL), bench/gpu/check_*, and the step
#                                               benchmarks bench_{train,dit}_step and bench_backbone when built
#   vtrain-gpu/build-gpu/bench/bench_input      the `input` stage (JPEG only, so no OpenCV
#                                               imgcodecs), when nvJPEG is built
#   vtrain-gpu/data/input-max512/               128 imagenet-samples packed at max side 512
#                                               (q90) by this build's `vtrain pack`, for it
#   vtrain-gpu/build-gpu/lib/                   every shared library they need except
#                                               the CUDA/driver ones, the C library and
#                                               the C++ runtime (oneDNN, OpenMP, spdlog, ...)
#   vtrain-gpu/build-gpu/lib/cxx/               libstdc++ and libgcc_s of this machine,
#                                               used there only when its own are too old
#   vtrain-gpu/MANIFEST                         commit, CUDA version, newest glibc
#                                               symbol needed, files and sizes
#
# The C library is the GPU machine's: MANIFEST names the newest GLIBC_x.y
# the programs need, and gpu_check.sh refuses (exit 2) a machine with an
# older one. The C++ runtime is the machine's when it is new enough (this
# one's libstdc++ needs glibc 2.36). The CUDA libraries are the GPU
# machine's too (libcublasLt alone is over 500 MB): the build's CUDA major
# version must be the machine's.
# The build has no MPI (VT_MPI=OFF): the check machine runs one process
# (NCCL as a world of 1), and Debian's OpenMPI brings libevent, which needs
# glibc 2.36, newer than common GPU images (Ubuntu 22.04: 2.35).
# vtrain, dittrain and veval are left out: with OpenCV, TurboJPEG and their
# dependencies (GDAL, codecs) they need about 220 MB of libraries, beyond
# the 64 MiB; the agreement programs (bench/gpu/check_*) test their steps.
# Test fixtures are left out too: no carried program reads them.
#
# What a GPU run carries travels under one 64 MiB limit with the tracked
# tree (the checkout the command runs in): the bundle is refused, with the
# figures, when bundle + tracked tree exceed 60 MiB (4 MiB left for the
# tree to grow between a bundle and its run). To stay well under it the
# build links the vt_* libraries shared (VT_SHARED_LIBS=ON: the kernel
# library's device code once, in lib/libvt_kernels.so, not in every
# program) and compiles sm_90 only (the lent machine is an H200; normal
# builds keep sm_80 + sm_90).
#
#   usage: scripts/bundle_gpu_build.sh
#          scripts/bundle_gpu_build.sh --check-size FILE   the size rule alone, on FILE
#   VT_GPU_BUILD   build folder (default build-gpu; configured here with
#                  VT_CUDA=ON, VT_MPI=OFF, VT_SHARED_LIBS=ON, Release, unless
#                  VT_BUNDLE_NO_BUILD=1)
#   VT_GPU_ARCHS   CUDA architectures of that build (default "90": H100/H200;
#                  "80;90" adds A100 at about twice the device code)
#   VT_JOBS        parallel jobs for the build (default: all cores)
# Then: carry build-gpu.tar.xz; there `tar xJf build-gpu.tar.xz &&
# vtrain-gpu/scripts/gpu_check.sh` (OUT=DIR for the log's folder); without
# xz there, `python3 -m tarfile -e build-gpu.tar.xz .` unpacks it too.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${VT_GPU_BUILD:-build-gpu}
LIMIT=$((60 * 1024 * 1024))
TARBALL=$ROOT/build-gpu.tar.xz

# Bytes of the tracked tree as it is checked out (what travels beside the
# bundle).
tracked_bytes() {
  git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 stat -c %s 2>/dev/null) | awk '{s += $1} END {print s + 0}'
}
# The rule: bundle FILE + tracked tree <= 60 MiB. Prints the figures;
# returns 1 (and says why) when over.
check_size() {
  local size tree
  size=$(stat -c %s "$1")
  tree=$(tracked_bytes)
  awk -v f="$1" -v s="$size" -v t="$tree" -v l="$LIMIT" 'BEGIN {
    printf "bundle_gpu_build: %s %.1f MiB + tracked tree %.1f MiB = %.1f MiB (limit %.0f MiB of the 64 MiB carried)\n",
           f, s / 1048576, t / 1048576, (s + t) / 1048576, l / 1048576 }'
  if [ $((size + tree)) -gt "$LIMIT" ]; then
    echo "bundle_gpu_build: refused: bundle + tracked tree is $(((size + tree - LIMIT + 1048575) / 1048576)) MiB over the limit; shrink the bundle (fewer programs, VT_GPU_ARCHS=90) or the tree" >&2
    return 1
  fi
}
if [ "${1:-}" = --check-size ]; then
  [ -f "${2:-}" ] || { echo "usage: $0 --check-size FILE" >&2; exit 2; }
  check_size "$2"
  exit
fi

# Programs gpu_check.sh runs (paths inside the build); optional ones are
# packed when the build has them.
REQUIRED="tests/test_cuda bench/bench_cuda_kernels bench/bench_allreduce"
OPTIONAL="bench/gpu/check_train_device bench/gpu/check_dit_device bench/bench_attention bench/check_inception_device
          bench/check_vae_device
          bench/bench_train_step bench/bench_dit_step bench/bench_backbone bench/bench_mlp_epilogue
          bench/check_graph_step bench/bench_input"

if [ "${VT_BUNDLE_NO_BUILD:-0}" != 1 ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVT_CUDA=ON -DVT_MPI=OFF -DVT_SHARED_LIBS=ON \
        "-DCMAKE_CUDA_ARCHITECTURES=${VT_GPU_ARCHS:-90}"
  targets="" known=$(cmake --build "$BUILD" --target help)
  for p in $REQUIRED $OPTIONAL; do
    t=$(basename "$p")
    if grep -q "^$t:" <<<"$known"; then targets="$targets $t"; fi
  done
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j "${VT_JOBS:-$(nproc)}" --target $targets
  # vtrain packs the input stage's split below (it is not carried).
  cmake --build "$BUILD" -j "${VT_JOBS:-$(nproc)}" --target vtrain || echo "bundle_gpu_build: vtrain not built"
fi

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/vtrain-gpu
mkdir -p "$B/scripts" "$B/tools" "$B/build-gpu/lib/cxx"
cp scripts/gpu_check.sh "$B/scripts/"
cp tools/bench_timm_step.py tools/bench_dit_step.py tools/step_bench_common.py "$B/tools/"

progs=()
for p in $REQUIRED $OPTIONAL; do
  src=$BUILD/$p
  # A program of bench/gpu/ may be built into bench/ (one CMake folder).
  [ -x "$src" ] || src=$BUILD/bench/$(basename "$p")
  if [ -x "$src" ] && [ -f "$src" ]; then
    mkdir -p "$B/build-gpu/$(dirname "$p")"
    cp "$src" "$B/build-gpu/$p"
    strip --strip-unneeded "$B/build-gpu/$p"
    progs+=("$B/build-gpu/$p")
  elif [[ " $REQUIRED " == *" $p "* ]]; then
    echo "bundle_gpu_build: $BUILD/$p is missing (a VT_CUDA build with NCCL is needed)" >&2
    exit 1
  else
    echo "bundle_gpu_build: $p not built, left out"
  fi
done

# The input stage's split: the first 128 class folders of imagenet-samples,
# copied (never packed in place: the shared folder is read only), packed at
# max side 512 q90 as the host input benchmark packs them (docs/performance.md).
SAMPLES=${VT_SHARED_DATA_DIR:-$ROOT/../shared/data}/imagenet-samples
if [ -x "$BUILD/vtrain" ] && [ -d "$SAMPLES" ]; then
  mkdir -p "$STAGE/src/input"
  find "$SAMPLES" -mindepth 1 -maxdepth 1 -type d | sort | head -128 | while read -r d; do
    cp -r "$d" "$STAGE/src/input/"
  done
  "$BUILD/vtrain" pack configs/deit_s_siamese.yaml out="$STAGE/packed" split=train max_side=512 quality=90 \
    data.root="$STAGE/src" data.train_split=input data.val_split=input >/dev/null
  mkdir -p "$B/data"
  mv "$STAGE/packed/input" "$B/data/input-max512"
  rm -rf "$STAGE/src" "$STAGE/packed"
else
  echo "bundle_gpu_build: no $BUILD/vtrain or no $SAMPLES: the input stage's split is left out"
fi

# The libraries the programs load, less the GPU machine's own: the C
# library and loader (its glibc), the CUDA runtime, math libraries, NCCL and
# the driver (its CUDA install). What remains is copied with its soname,
# then the same again for what those libraries load.
skip='/(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux[^/]*)\.so|/lib(cuda|cudart|cublas|cublasLt|cudnn[^/]*|nccl|nvidia-[^/]*|nvrtc[^/]*|nvJitLink|cufft|curand|cusparse|cusolver)\.so'
for _ in 1 2 3; do
  { ldd "${progs[@]}" "$B"/build-gpu/lib/*.so* 2>/dev/null || true; } | awk '/=> \//{print $1, $3}' | sort -u |
    while read -r soname path; do
      dest=$B/build-gpu/lib
      if echo "$path" | grep -q -E '/lib(stdc\+\+|gcc_s)\.so'; then dest=$dest/cxx; fi
      if ! echo "$path" | grep -q -E "$skip" && [ ! -e "$dest/$soname" ]; then
        cp -L "$path" "$dest/$soname"
        strip --strip-unneeded "$dest/$soname" 2>/dev/null || true
      fi
    done
done

# The newest glibc symbol version the programs and lib/ need (lib/cxx is
# used only where the machine's C++ runtime is older, i.e. rarely).
glibc=$(for f in "${progs[@]}" "$B"/build-gpu/lib/*.so*; do objdump -T "$f" 2>/dev/null; done |
        grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V | tail -1 || true)
{
  echo "vtrain GPU bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "cuda: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo unknown)"
  archs=$(grep -s '^CMAKE_CUDA_ARCHITECTURES:' "$BUILD/CMakeCache.txt" | cut -d= -f2 || true)
  echo "cuda architectures: ${archs:-80 90 (the top-level CMakeLists.txt default)}"
  echo "shared vt_* libraries: $(grep -s '^VT_SHARED_LIBS:' "$BUILD/CMakeCache.txt" | cut -d= -f2 || echo unknown)"
  echo "cuda libraries needed: $({ ldd "${progs[@]}" || true; } | awk '{print $1}' | grep -E 'lib(cudart|cublas|cublasLt|nccl|cudnn|nvrtc)' | sort -u | tr '\n' ' ' || true)"
  echo "glibc: ${glibc#GLIBC_}"
  echo "files:"
  (cd "$B" && find . -type f -printf '%s %p\n' | sort -k2)
} >"$B/MANIFEST"

XZ_OPT=-9 tar -C "$STAGE" -cJf "$TARBALL" vtrain-gpu
size=$(stat -c %s "$TARBALL")
raw=$(du -sb "$B" | cut -f1)
awk -v f="$TARBALL" -v s="$size" -v r="$raw" \
  'BEGIN{printf "bundle_gpu_build: %s: %d bytes = %.1f MiB (unpacked %.1f MiB)\n", f, s, s / 1048576, r / 1048576}'
(cd "$B" && du -ab build-gpu/tests build-gpu/bench build-gpu/lib | sort -n -r | head -24 |
  awk '{printf "  %8.1f MiB  %s\n", $1 / 1048576, $2}')
echo "  needs on the GPU machine: $(grep '^cuda libraries' "$B/MANIFEST" | cut -d: -f2-), glibc >= ${glibc#GLIBC_}"
if ! check_size "$TARBALL"; then
  echo "bundle_gpu_build: not keeping $TARBALL" >&2
  rm -f "$TARBALL"
  exit 1
fi
