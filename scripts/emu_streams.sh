#!/usr/bin/env bash
# Runs the CUDA emulator's test programs under the randomised stream order
# (tests/cuda/emu/emu_streams.h) with several seeds, and once under the
# delayed order: ctest runs one fixed seed; this looks further.
#   scripts/emu_streams.sh [SEEDS (default 5)] [PROGRAM...]
# PROGRAM defaults to every emulator gtest program in the build. A failure
# prints the seed: rerun it with VT_EMU_STREAMS=random VT_EMU_SEED=<seed>.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${VT_BUILD_DIR:-build}
seeds=${1:-5}
shift || true
progs=("$@")
if [ ${#progs[@]} -eq 0 ]; then
  for p in test_cuda_emu test_device_jpeg_emu test_vae_emu test_train_emu test_eval_emu; do
    [ -x "$build/tests/cuda/emu/$p" ] && progs+=("$build/tests/cuda/emu/$p")
  done
fi
status=0
log=$(mktemp)
# run PROGRAM ORDER [SEED]: one whole run, its verdict on one line.
run() {
  local prog=$1 order=$2 seed=${3:-}
  if OMP_WAIT_POLICY=PASSIVE VT_EMU_STREAMS=$order VT_EMU_SEED=$seed "$prog" --gtest_brief=1 >"$log" 2>&1; then
    echo "emu_streams: $(basename "$prog") passed ($order${seed:+, seed $seed})"
  else
    echo "emu_streams: $(basename "$prog") FAILED with VT_EMU_STREAMS=$order${seed:+ VT_EMU_SEED=$seed}"
    grep -E "Failure|FAILED|emu:" "$log" | head -20
    status=1
  fi
}
for prog in "${progs[@]}"; do
  for ((i = 0; i < seeds; i++)); do run "$prog" random $((RANDOM * 32768 + RANDOM)); done
  run "$prog" delayed
done
rm -f "$log"
exit $status
