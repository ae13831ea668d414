#!/usr/bin/env bash
# The normalisation-scheme comparison of arXiv 2602.08064 on CIFAR-10 in one
# command: a grid of schemes x peak learning rates on a ViT deeper than wide,
# trained with ./build/vtrain from configs/cifar10_vit_tiny_siamese.yaml plus
# key overrides, then a results table, Markdown and PNG plots
# (tools/plot_compare.py).
#
#   scripts/compare_norms.sh                  # the full grid, in the foreground
#   nohup scripts/compare_norms.sh > runs/compare_norms.log 2>&1 &   # in the background
#   SCHEMES="pre siamese" LRS="1e-3" STEPS=20 OUT=runs/cmp_smoke scripts/compare_norms.sh   # a smoke test
#   PRUNE_LAST=6 scripts/compare_norms.sh     # also the layer-pruning curves of the finished runs
#
# Resumable: a finished run leaves OUT/<run>.result (its exit status and, for a
# diverged run, the step and loss); a rerun skips runs that have one, and an
# interrupted run resumes from its newest checkpoint (vtrain's resume: auto).
# A run whose loss or gradient turns non-finite stops cleanly (vtrain keeps the
# last good checkpoint and names the step) and the grid goes on.
#
# Every run trains on TRAIN_IMAGES evenly spaced training images for EPOCHS
# epochs (a whole cosine schedule), evaluates EVAL_IMAGES evenly spaced test
# images after each epoch (no EMA: too few steps for it to mean anything) and
# logs the per-block RMS of the x and y streams (log.stream_rms: the paper's
# Fig. 2). Sized for about 2 hours on 2 cores: one thread per run (the grid
# leaves the other core free), depth 12 x width 96 trains at 80-150 img/s,
# so a 300-step run takes 3-5 minutes.
#
# Environment (defaults in brackets):
#   SCHEMES  scheme labels [pre post siamese siamese_noinput siamese_nodepth spannorm hybrid mixln deepnorm residual]
#            (siamese_noinput / siamese_nodepth: the paper's ablations; spannorm: a reading of its abstract)
#   LRS      peak learning rates [1e-3 1e-2]: conservative, aggressive (at 1e-2
#            Post-Norm collapses to chance within 80 steps here)
#   DEPTH DIM HEADS MLP_RATIO  [12 96 3 2]   the ViT (patch 4 on 32x32 images)
#   EPOCHS   epochs per run [3];  TRAIN_IMAGES  images per epoch [6400] (100 steps)
#   STEPS    stop after this many steps, empty = the whole schedule []
#   EVAL_IMAGES  test images per evaluation [2000];  THREADS  per run [1]
#   BATCH    [64];  CLIP  max grad norm, empty = no clipping []
#   OUT      [runs/compare_norms];  VTRAIN  [build/vtrain];  PYTHON [python3]
#   PRUNE_LAST  k: after training, evaluate every finished run with its last
#            0..k blocks removed (veval top1 prune_last=...; the paper's
#            layer-pruning study) into OUT/<run>.prune, resumable [empty: off]
#   PRUNE_IMAGES  test images per pruning evaluation, evenly spaced [2000]
#   VEVAL    [build/veval]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/compare_lib.sh

SCHEMES=${SCHEMES:-"pre post siamese siamese_noinput siamese_nodepth spannorm hybrid mixln deepnorm residual"}
LRS=${LRS:-"1e-3 1e-2"}
DEPTH=${DEPTH:-12} DIM=${DIM:-96} HEADS=${HEADS:-3} MLP_RATIO=${MLP_RATIO:-2}
STEPS=${STEPS:-} EPOCHS=${EPOCHS:-3} BATCH=${BATCH:-64} CLIP=${CLIP:-}
TRAIN_IMAGES=${TRAIN_IMAGES:-6400} EVAL_IMAGES=${EVAL_IMAGES:-2000} THREADS=${THREADS:-1}
OUT=${OUT:-runs/compare_norms} VTRAIN=${VTRAIN:-build/vtrain} PYTHON=${PYTHON:-python3}
PRUNE_LAST=${PRUNE_LAST:-} PRUNE_IMAGES=${PRUNE_IMAGES:-2000} VEVAL=${VEVAL:-build/veval}
BASE=configs/cifar10_vit_tiny_siamese.yaml

[[ -x $VTRAIN ]] || { echo "compare_norms: $VTRAIN not found; build first (scripts/setup.sh)" >&2; exit 2; }
if [[ -n $PRUNE_LAST ]]; then
  [[ $PRUNE_LAST =~ ^[0-9]+$ && $PRUNE_LAST -le $DEPTH ]] ||
    { echo "compare_norms: PRUNE_LAST='$PRUNE_LAST' must be a block count in [0, DEPTH=$DEPTH]" >&2; exit 2; }
  [[ -x $VEVAL ]] || { echo "compare_norms: $VEVAL not found; build first (scripts/setup.sh)" >&2; exit 2; }
fi
mkdir -p "$OUT"

# label -> model.norm.* overrides
scheme_overrides() {
  case $1 in
    siamese_noinput) echo "model.norm.scheme=siamese model.norm.normalized_input=false" ;;
    siamese_nodepth) echo "model.norm.scheme=siamese model.norm.depth_scaling=false" ;;
    pre | post | siamese | spannorm | hybrid | mixln | deepnorm | residual) echo "model.norm.scheme=$1" ;;
    *) echo "compare_norms: unknown scheme label '$1'" >&2; return 1 ;;
  esac
}

for lr in $LRS; do
  for s in $SCHEMES; do
    run="cmp_${s}_lr${lr}_d${DEPTH}w${DIM}"
    result="$OUT/$run.result"
    if [[ -f $result ]]; then
      echo "skip $run (finished: $(head -n1 "$result"))"
      continue
    fi
    ov=$(scheme_overrides "$s")
    clip="train.clip_grad=~"
    steps="train.max_steps=~"
    [[ -n $STEPS ]] && steps="train.max_steps=$STEPS"
    [[ -n $CLIP ]] && clip="train.clip_grad=$CLIP"
    echo "$(date -u +%H:%M:%S) run $run"
    # shellcheck disable=SC2086  # $ov is a list of overrides
    run_recorded compare_norms "$result" "$OUT/$run.log" \
      "$VTRAIN" "$BASE" name="$run" out_dir="$OUT" resume=auto $ov \
      model.depth="$DEPTH" model.dim="$DIM" model.heads="$HEADS" model.mlp_ratio="$MLP_RATIO" \
      train.lr="$lr" train.epochs="$EPOCHS" "$steps" train.batch_size="$BATCH" "$clip" \
      data.max_train_images="$TRAIN_IMAGES" eval.max_images="$EVAL_IMAGES" threads="$THREADS" \
      train.warmup_epochs=0.1 train.ema=false log.every_steps=10 log.stream_rms=true log.norm_scales=true \
      eval.every_epochs=1 ckpt.every_steps=50 || continue
  done
done

# Layer pruning: top-1 of each finished (not diverged) run's newest checkpoint
# with its last k = 0..PRUNE_LAST blocks removed; OUT/<run>.prune holds one
# "k top1" line per k and is written whole (a rerun skips it).
if [[ -n $PRUNE_LAST ]]; then
  for result in "$OUT"/cmp_*.result; do
    [[ -f $result ]] || continue
    [[ $(head -n1 "$result") == finished ]] || continue
    run=$(basename "$result" .result)
    prune="$OUT/$run.prune"
    [[ -f $prune ]] && { echo "skip pruning $run (done)"; continue; }
    echo "$(date -u +%H:%M:%S) prune $run k=0..$PRUNE_LAST"
    : > "$prune.tmp"
    ok=1
    for ((k = 0; k <= PRUNE_LAST; k++)); do
      if ! line=$("$VEVAL" top1 "$OUT/$run/config.yaml" ckpt="$OUT/$run" prune_last="$k" \
                  eval.max_images="$PRUNE_IMAGES" 2>> "$OUT/$run.prune.log" | grep '^top1:'); then
        echo "compare_norms: pruning $run k=$k failed, see $OUT/$run.prune.log" >&2
        ok=0
        break
      fi
      echo "$k $(sed -E 's/^top1: ([0-9.]+)%.*/\1/' <<< "$line")" >> "$prune.tmp"
    done
    if [[ $ok -eq 1 ]]; then mv "$prune.tmp" "$prune"; else rm -f "$prune.tmp"; fi
  done
fi

"$PYTHON" tools/plot_compare.py "$OUT"
