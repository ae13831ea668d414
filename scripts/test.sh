#!/usr/bin/env bash
# Runs the whole CPU test suite (CUDA-labelled tests skip without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --test-dir "${VT_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
