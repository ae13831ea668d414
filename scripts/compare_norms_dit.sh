#!/usr/bin/env bash
# The DiT counterpart of scripts/compare_norms.sh, a smaller grid: a pixel-space
# DiT deeper than wide on CIFAR-10 (configs/cifar10_dit_siamese.yaml plus key
# overrides) per normalisation scheme, then DDIM samples of each run's EMA
# weights scored by FID in the feature space of a CIFAR-10 classifier trained
# by compare_norms.sh (veval fid --features; such scores compare runs with each
# other, not with published FIDs), a results table, Markdown and PNG loss
# curves (tools/plot_compare_dit.py).
#
#   scripts/compare_norms_dit.sh                 # after scripts/compare_norms.sh
#   nohup scripts/compare_norms_dit.sh > runs/compare_norms_dit.log 2>&1 &
#   SCHEMES="pre siamese" STEPS=10 NUM_SAMPLES=20 OUT=runs/cmpdit_smoke scripts/compare_norms_dit.sh
#
# Resumable as compare_norms.sh: OUT/<run>.result marks a finished (or
# diverged) run, OUT/<run>.fid its score; a rerun skips what exists and an
# interrupted run resumes from its newest checkpoint.
#
# Environment (defaults in brackets):
#   SCHEMES  [pre post siamese spannorm]   (a scheme this build lacks is skipped)
#   LRS      [1e-3]   constant AdamW rate (DiT's recipe: no schedule)
#   DEPTH DIM HEADS PATCH  [12 96 3 4]   the DiT on 32x32x3 pixels
#   STEPS    [300];  BATCH [64];  THREADS [1] per run
#   NUM_SAMPLES [500] samples per run (DDIM SAMPLE_STEPS [25], cfg 2, EMA weights)
#   FEATURES the classifier for FID [runs/compare_norms/cmp_siamese_lr1e-3_d12w96]
#   REF_IMAGES  reference images for FID [../shared/data/cifar10/test]
#   OUT [runs/compare_norms_dit];  DITTRAIN [build/dittrain];  VEVAL [build/veval];  PYTHON [python3]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/compare_lib.sh

SCHEMES=${SCHEMES:-"pre post siamese spannorm"}
LRS=${LRS:-"1e-3"}
DEPTH=${DEPTH:-12} DIM=${DIM:-96} HEADS=${HEADS:-3} PATCH=${PATCH:-4}
STEPS=${STEPS:-300} BATCH=${BATCH:-64} THREADS=${THREADS:-1}
NUM_SAMPLES=${NUM_SAMPLES:-500} SAMPLE_STEPS=${SAMPLE_STEPS:-25}
FEATURES=${FEATURES:-runs/compare_norms/cmp_siamese_lr1e-3_d12w96}
REF_IMAGES=${REF_IMAGES:-../shared/data/cifar10/test}
OUT=${OUT:-runs/compare_norms_dit} DITTRAIN=${DITTRAIN:-build/dittrain} VEVAL=${VEVAL:-build/veval}
PYTHON=${PYTHON:-python3}
BASE=configs/cifar10_dit_siamese.yaml

for exe in "$DITTRAIN" "$VEVAL"; do
  [[ -x $exe ]] || { echo "compare_norms_dit: $exe not found; build first (scripts/setup.sh)" >&2; exit 2; }
done
[[ -e $FEATURES ]] || {
  echo "compare_norms_dit: FEATURES='$FEATURES' (the classifier whose features FID uses) does not exist;" \
       "run scripts/compare_norms.sh first or set FEATURES to a vtrain run or checkpoint" >&2; exit 2; }
mkdir -p "$OUT"
known=$("$DITTRAIN" --help 2>&1 | grep -m1 'model.norm.scheme' || true)

# Reference statistics of the real images in the classifier's feature space,
# once (written whole by veval, so an interrupted run leaves none).
ref="$OUT/ref_features.npz"
if [[ ! -f $ref ]]; then
  echo "$(date -u +%H:%M:%S) reference statistics of $REF_IMAGES"
  "$VEVAL" stats --images "$REF_IMAGES" --out "$ref" --features "$FEATURES" > "$OUT/ref_features.log" 2>&1 ||
    { echo "compare_norms_dit: reference statistics failed, see $OUT/ref_features.log" >&2; exit 1; }
fi

for lr in $LRS; do
  for s in $SCHEMES; do
    if ! grep -qw "$s" <<< "$known"; then
      echo "skip scheme $s: not in this build's model.norm.scheme ($known)"
      continue
    fi
    run="cmpdit_${s}_lr${lr}_d${DEPTH}w${DIM}"
    result="$OUT/$run.result"
    if [[ ! -f $result ]]; then
      echo "$(date -u +%H:%M:%S) run $run"
      run_recorded compare_norms_dit "$result" "$OUT/$run.log" \
        "$DITTRAIN" "$BASE" name="$run" out_dir="$OUT" resume=auto model.norm.scheme="$s" \
        model.depth="$DEPTH" model.hidden="$DIM" model.heads="$HEADS" model.patch="$PATCH" \
        train.lr="$lr" train.steps="$STEPS" train.batch_size="$BATCH" threads="$THREADS" \
        log.every_steps=10 log.stream_rms=true ckpt.every_steps=100 sample.every=0 || continue
    fi
    [[ $(head -n1 "$result") == finished ]] || continue
    fid="$OUT/$run.fid"
    [[ -f $fid ]] && { echo "skip $run (FID $(cat "$fid"))"; continue; }
    echo "$(date -u +%H:%M:%S) sample + FID $run"
    samples="$OUT/$run/samples$NUM_SAMPLES"
    ckpt=$(find "$OUT/$run" -maxdepth 1 -name 'step_*' -type d | sort -V | tail -n1)  # the final one
    "$DITTRAIN" sample "$OUT/$run/config.yaml" ckpt="$ckpt" num_samples="$NUM_SAMPLES" \
      steps="$SAMPLE_STEPS" out="$samples" threads="$THREADS" > "$OUT/$run.sample.log" 2>&1 ||
      { echo "compare_norms_dit: sampling $run failed, see $OUT/$run.sample.log" >&2; continue; }
    line=$("$VEVAL" fid --samples "$samples.npz" --ref "$ref" --features "$FEATURES" 2> "$OUT/$run.fid.log" |
           grep -m1 -i '^fid') ||
      { echo "compare_norms_dit: FID of $run failed, see $OUT/$run.fid.log" >&2; continue; }
    sed -E 's/^[Ff][Ii][Dd][^0-9]*([0-9.eE+-]+).*/\1/' <<< "$line" > "$fid.tmp"
    mv "$fid.tmp" "$fid"
  done
done

"$PYTHON" tools/plot_compare_dit.py "$OUT"
