#!/usr/bin/env bash
# libFuzzer targets for every reader of untrusted files (fuzz/), built with
# clang, AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/.
#   scripts/fuzz.sh [SECONDS] [TARGET ...]  run each target SECONDS (default 600)
#   scripts/fuzz.sh build                   configure and build only
# Targets: safetensors npy config image shards (default: all, one after the other).
# Seeds: fuzz/corpus/<target>/ (committed, tiny) plus copies of the test
# fixtures, configs/ and a few real images from ../shared/data (never
# committed). Inputs that reach new code accumulate in
# build-fuzz/corpus/<target>/. Prints the executions per target; a crash,
# sanitizer report, uncaught exception, timeout or out-of-memory fails the
# script, naming the target and the saved input; reproduce with
# build-fuzz/fuzz/fuzz_<target> INPUT.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${VT_FUZZ_BUILD_DIR:-build-fuzz}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVT_FUZZ=ON \
    -DVT_CUDA=OFF -DVT_BUILD_TESTS=OFF -DVT_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$BUILD" --target vt_fuzzers -j "${VT_JOBS:-$(nproc)}"
[ "${1:-}" = build ] && exit 0

SECS=${1:-600}
[ $# -gt 0 ] && shift
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(safetensors npy config image shards)
SHARED=../shared/data

# Copies files (at most MAX_KB each) into a seed directory.
seed() {
  local dir=$1 max_kb=$2
  shift 2
  mkdir -p "$dir"
  for f in "$@"; do
    [ -f "$f" ] && [ "$(du -k "$f" | cut -f1)" -le "$max_kb" ] && cp "$f" "$dir/$(echo "$f" | tr / _)"
  done
  return 0
}

prepare_seeds() {
  local t=$1 dir=$BUILD/seeds/$1
  rm -rf "$dir"
  mkdir -p "$dir"
  case $t in
    safetensors) seed "$dir" 128 $(find tests/fixtures -name '*.safetensors') ;;
    npy) seed "$dir" 64 $(find tests/fixtures -name '*.npy' -o -name '*.npz') ;;
    config) seed "$dir" 64 configs/*.yaml ;;
    image)
      # A few small real JPEGs (CIFAR-10, ImageNet samples, which include a
      # PNG named .JPEG and grayscale/CMYK files) and the fixture images.
      if [ -d "$SHARED" ]; then
        seed "$dir" 64 $(find "$SHARED/cifar10" -name '*.jpg' 2>/dev/null | sort | head -n 8)
        seed "$dir" 48 $(find "$SHARED/imagenet-samples" -type f 2>/dev/null | sort | head -n 40)
      fi
      seed "$dir" 64 $(find tests/fixtures -name '*.png' -o -name '*.jpg') ;;
  esac
}

# Leaks in the system codecs and yaml-cpp are not this project's findings,
# and LeakSanitizer's per-input checks cost more than the input itself.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# The readers that take a path get a scratch file per input: keep it in memory.
[ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=${VT_FUZZ_TMPDIR:-/dev/shm}
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && ! command -v llvm-symbolizer >/dev/null; then
  for s in /usr/bin/llvm-symbolizer-*; do [ -x "$s" ] && export ASAN_SYMBOLIZER_PATH=$s; done
fi

failed=()
printf '%-12s %12s %8s %10s\n' target executions seconds exec/s
for t in "${TARGETS[@]}"; do
  bin=$BUILD/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz.sh: no target '$t' ($bin)" >&2; exit 2; }
  prepare_seeds "$t"
  mkdir -p "$BUILD/corpus/$t" "$BUILD/crashes/$t"
  log=$BUILD/fuzz_$t.log
  start=$(date +%s)
  rc=0
  # Inputs beyond 64 KiB only slow the mutations down (the big seeds are
  # truncated, which still exercises their headers).
  "$bin" -max_total_time="$SECS" -max_len=65536 -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$BUILD/crashes/$t/" "$BUILD/corpus/$t" "fuzz/corpus/$t" "$BUILD/seeds/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  secs=$(( $(date +%s) - start ))
  printf '%-12s %12s %8s %10s\n' "$t" "${execs:-?}" "$secs" "$(( ${execs:-0} / (secs > 0 ? secs : 1) ))"
  if [ "$rc" -ne 0 ]; then
    input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    echo "fuzz.sh: target '$t' FAILED (exit $rc); input: ${input:-none saved}; log: $log" >&2
    grep -m 1 -E 'ERROR: |runtime error|property violated|uncaught exception|deadly signal' "$log" >&2 || tail -n 20 "$log" >&2
    echo "fuzz.sh: reproduce with: $bin ${input:-}" >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failed targets: ${failed[*]}" >&2
  exit 1
fi
