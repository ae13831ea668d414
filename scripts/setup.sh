#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, then configures
# and builds vtrain into build/. Idempotent: safe to rerun.
#   scripts/setup.sh            # packages + Release build
#   VT_BUILD_DIR=dir scripts/setup.sh
#   VT_FUZZ_BUILD=0 scripts/setup.sh   # skip the fuzz targets (build-fuzz/, clang)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3 python3-pip
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev ocl-icd-opencl-dev libomp-dev
  libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libzip-dev libturbojpeg0-dev libjpeg62-turbo-dev libopencv-dev
  libprotobuf-dev protobuf-compiler libeigen3-dev
  clang libclang-rt-14-dev llvm
  libopenmpi-dev openmpi-bin
  libssl-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# cuDNN frontend (header-only C++ graph API over the cuDNN that ships with the
# CUDA toolkit; kernels/cuda/attention_cudnn.h uses it for fused SDPA). Its
# headers ship in the PyPI wheel's include/ folder: pip downloads the pinned
# wheel, the headers are unpacked into a cache folder CMake looks in
# (VT_CUDNN_FRONTEND_INCLUDE). Skipped without nvcc; a failed download only
# means the own flash attention kernel serves instead of cuDNN.
CUDNN_FRONTEND_VERSION=1.32.0
CUDNN_FRONTEND_DIR=${VT_CUDNN_FRONTEND_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vtrain/cudnn_frontend}
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  if [ "$(cat "$CUDNN_FRONTEND_DIR/VERSION" 2>/dev/null)" != "$CUDNN_FRONTEND_VERSION" ]; then
    tmp=$(mktemp -d)
    # Any platform's wheel carries the same headers; --platform pins one so
    # pip never builds from source.
    if python3 -m pip download --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
         --python-version 3.11 -d "$tmp" "nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION" >/dev/null; then
      rm -rf "$CUDNN_FRONTEND_DIR" && mkdir -p "$CUDNN_FRONTEND_DIR"
      python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("include/")])' "$tmp"/*.whl "$CUDNN_FRONTEND_DIR"
      echo "$CUDNN_FRONTEND_VERSION" > "$CUDNN_FRONTEND_DIR/VERSION"
      echo "setup: cuDNN frontend $CUDNN_FRONTEND_VERSION headers in $CUDNN_FRONTEND_DIR/include"
    else
      echo "setup: could not download nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION; attention uses the own flash kernel"
    fi
    rm -rf "$tmp"
  fi
fi

# nvJPEG (GPU JPEG decoding, data_pipeline/device/device_jpeg.h). Part of
# the CUDA toolkit, but the toolkit here (and some installs) leaves it out;
# the pinned nvidia-nvjpeg wheel of the same CUDA major carries nvjpeg.h and
# libnvjpeg.so.13, unpacked into a cache folder CMake looks in
# (VT_NVJPEG_DIR). Skipped without nvcc or when the toolkit has nvjpeg.h; a
# failed download only means the build has no GPU JPEG decoding.
NVJPEG_VERSION=13.0.0.40
NVJPEG_DIR=${VT_NVJPEG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vtrain/nvjpeg}
if { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; } && [ ! -f /usr/local/cuda/include/nvjpeg.h ]; then
  if [ "$(cat "$NVJPEG_DIR/VERSION" 2>/dev/null)" != "$NVJPEG_VERSION" ]; then
    tmp=$(mktemp -d)
    if python3 -m pip download --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
         --python-version 3.11 -d "$tmp" "nvidia-nvjpeg==$NVJPEG_VERSION" >/dev/null; then
      rm -rf "$NVJPEG_DIR" && mkdir -p "$NVJPEG_DIR"
      python3 -c 'import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.startswith(("nvidia/cu13/include/", "nvidia/cu13/lib/")) and not n.endswith("/"):
        dest = os.path.join(sys.argv[2], n[len("nvidia/cu13/"):])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        open(dest, "wb").write(z.read(n))' "$tmp"/*.whl "$NVJPEG_DIR"
      ln -sf libnvjpeg.so.13 "$NVJPEG_DIR/lib/libnvjpeg.so"
      echo "$NVJPEG_VERSION" > "$NVJPEG_DIR/VERSION"
      echo "setup: nvJPEG $NVJPEG_VERSION in $NVJPEG_DIR"
    else
      echo "setup: could not download nvidia-nvjpeg==$NVJPEG_VERSION; no GPU JPEG decoding"
    fi
    rm -rf "$tmp"
  fi
fi

BUILD_DIR=${VT_BUILD_DIR:-build}
JOBS=${VT_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DVT_CUDNN_FRONTEND_INCLUDE="$CUDNN_FRONTEND_DIR/include" ${VT_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "setup: built into $BUILD_DIR"
if [ "${VT_FUZZ_BUILD:-1}" != 0 ]; then
  VT_JOBS=$JOBS bash scripts/fuzz.sh build
  echo "setup: fuzz targets built into ${VT_FUZZ_BUILD_DIR:-build-fuzz}"
fi
