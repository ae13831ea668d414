#!/usr/bin/env bash
# Runs the whole CPU test suite (CUDA-labelled tests skip without a GPU),
# then, when no ctest arguments are given, a short pass of every fuzz target
# (VT_FUZZ_SECONDS per target, default 12; 0 skips it; scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --test-dir "${VT_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
if [ $# -eq 0 ] && [ "${VT_FUZZ_SECONDS:-12}" != 0 ]; then
  bash scripts/fuzz.sh "${VT_FUZZ_SECONDS:-12}"
fi
