# Shared by the fault-injection checks (label faults): a small ImageFolder
# cut from the CIFAR-10 JPEGs, a tiny vtrain configuration, helpers.
# Sourced; expects VTRAIN and CIFAR set.

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "[faults] $*"; }

# $1/train: 4 classes x 30 images, $1/val: 4 classes x 5 (+1) images.
make_dataset() {
  local dir=$1 c i files
  for c in airplane automobile bird cat; do
    mkdir -p "$dir/train/$c" "$dir/val/$c"
    mapfile -t files < <(ls "$CIFAR/train/$c" | sort | head -36)
    [ "${#files[@]}" -eq 36 ] || fail "fewer than 36 images in $CIFAR/train/$c"
    for i in $(seq 0 29); do cp "$CIFAR/train/$c/${files[$i]}" "$dir/train/$c/"; done
    local nval=5
    [ "$c" = airplane ] && nval=6
    for i in $(seq 30 $((29 + nval))); do cp "$CIFAR/train/$c/${files[$i]}" "$dir/val/$c/"; done
  done
}

# A tiny ViT: batch 24 over 120 images = 5 steps per epoch, 6 epochs = 30
# steps, evaluation every epoch, a checkpoint every 4 steps, all kept.
# One thread: bitwise equal runs.
run_vtrain() {  # DATA OUT NAME [overrides...]  (exec: run it in the background for its pid)
  local data=$1 out=$2 name=$3
  shift 3
  exec "$VTRAIN" cifar10_vit_tiny_siamese "data.root=$data" "out_dir=$out" "name=$name" data.val_split=val \
    model.dim=64 model.depth=4 model.heads=2 model.patch_size=4 train.batch_size=24 train.epochs=6 \
    train.warmup_epochs=1 log.every_steps=1 eval.batch_size=4 ckpt.every_epochs=0 ckpt.every_steps=4 \
    ckpt.keep_last=0 data.workers=1 threads=1 log.tensorboard=false "$@"
}

# A tiny pixel DiT on the same images: 30 steps, a sample grid every 5
# steps, a checkpoint every 10.
run_dittrain() {  # DATA OUT NAME [overrides...]  (exec, as run_vtrain)
  local data=$1 out=$2 name=$3
  shift 3
  exec "$DITTRAIN" cifar10_dit_siamese "data.root=$data/train" "out_dir=$out" "name=$name" model.hidden=32 \
    model.depth=2 model.heads=2 model.patch=8 model.num_classes=4 train.batch_size=24 train.steps=30 \
    log.every_steps=1 sample.every=5 sample.num=4 sample.steps=10 ckpt.every_steps=10 data.workers=1 threads=1 \
    log.tensorboard=false resume=auto "$@"
}

export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE

# The last step of a complete train metrics line in metrics.jsonl (0: none).
# grep, not python: polled every few milliseconds.
last_train_step() {
  local s
  s=$(grep -a '"split":"train"}$' "$1" 2>/dev/null | grep -v '"event"' | tail -1 | grep -o '^{"step":[0-9]*' | cut -d: -f2)
  echo "${s:-0}"
}

# Every line of a metrics file is one complete JSON record.
check_metrics_readable() {
  python3 - "$1" <<'PY' || fail "$1: a metrics line is not a complete JSON record"
import json, sys
with open(sys.argv[1]) as f:
    for n, line in enumerate(f, 1):
        assert line.endswith("\n"), f"line {n} unterminated"
        json.loads(line)
PY
}

# Checkpoint directories $1 and $2 hold byte-identical tensor files and the
# same state.json but for config_digest (the runs' names differ); $3 =
# tensors: the tensor files only.
same_checkpoint() {
  local f
  for f in model.safetensors ema.safetensors optimizer.safetensors; do
    cmp -s "$1/$f" "$2/$f" || fail "$2/$f differs from $1/$f"
  done
  [ "${3:-}" = tensors ] && return 0
  python3 - "$1/state.json" "$2/state.json" <<'PY' || fail "$2/state.json differs from $1/state.json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for s in (a, b):
    s.pop("config_digest")
if a != b:
    print({k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)})
    sys.exit(1)
PY
}
