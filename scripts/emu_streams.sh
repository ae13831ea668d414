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
for prog in "${progs[@]}"; do
  for ((i = 0; i < seeds; i++)); do
    seed=$((RANDOM * 32768 + RANDOM))
    if ! OMP_WAIT_POLICY=PASSIVE VT_EMU_STREAMS=random VT_EMU_SEED=$seed "$prog" --gtest_brief=1 >/tmp/emu_streams.$$.log 2>&1; then
      echo "emu_streams: $(basename "$prog") FAILED with VT_EMU_STREAMS=random VT_EMU_SEED=$seed"
      grep -E "Failure|FAILED|emu:" /tmp/emu_streams.$$.log | head -20
      status=1
    else
      echo "emu_streams: $(basename "$prog") passed (random, seed $seed)"
    fi
  done
  if ! OMP_WAIT_POLICY=PASSIVE VT_EMU_STREAMS=delayed "$prog" --gtest_brief=1 >/tmp/emu_streams.$$.log 2>&1; then
    echo "emu_streams: $(basename "$prog") FAILED with VT_EMU_STREAMS=delayed"
    grep -E "Failure|FAILED|emu:" /tmp/emu_streams.$$.log | head -20
    status=1
  else
    echo "emu_streams: $(basename "$prog") passed (delayed)"
  fi
done
rm -f /tmp/emu_streams.$$.log
exit $status
