#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, then configures
# and builds vtrain into build/. Idempotent: safe to rerun.
#   scripts/setup.sh            # packages + Release build
#   VT_BUILD_DIR=dir scripts/setup.sh
#   VT_FUZZ_BUILD=0 scripts/setup.sh   # skip the fuzz targets (build-fuzz/, clang)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev ocl-icd-opencl-dev libomp-dev
  libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libzip-dev libturbojpeg0-dev libopencv-dev
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

BUILD_DIR=${VT_BUILD_DIR:-build}
JOBS=${VT_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${VT_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "setup: built into $BUILD_DIR"
if [ "${VT_FUZZ_BUILD:-1}" != 0 ]; then
  VT_JOBS=$JOBS bash scripts/fuzz.sh build
  echo "setup: fuzz targets built into ${VT_FUZZ_BUILD_DIR:-build-fuzz}"
fi
