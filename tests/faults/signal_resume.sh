#!/usr/bin/env bash
# Stop signals, end to end (label faults): SIGTERM at random moments of a
# vtrain CIFAR run -- during a training step, around an epoch's evaluation,
# around a checkpoint write (there twice, the second while the stop
# checkpoint is written) -- then `resume: auto` to the end. Each stopped
# run must
#   exit with status 3 (core/exit_status.h) and log the signal and the step S,
#   hold a complete step_S checkpoint and no partial one,
#   have lost no step: S >= the last step recorded before the signal, and no
#     step after S was recorded,
# and the resumed run's checkpoints must be byte-identical to those of a run
# never stopped (model, EMA, optimizer, state).
#
# The same for dittrain, with the signal around a sample grid.
#
# usage: signal_resume.sh VTRAIN DITTRAIN CIFAR_DIR   (VT_FAULTS_SEED picks the moments)
set -u
VTRAIN=$1
DITTRAIN=$2
CIFAR=$3
source "$(dirname "$0")/common.sh"
[ -d "$CIFAR/train" ] || { echo "no CIFAR-10 at $CIFAR: skipped"; exit 77; }

tmp=$(mktemp -d)
trap '[ -n "${VT_FAULTS_KEEP:-}" ] || rm -rf "$tmp"' EXIT
seed=${VT_FAULTS_SEED:-$RANDOM}
RANDOM=$seed
note "seed $seed (VT_FAULTS_SEED=$seed repeats these moments)"
make_dataset "$tmp/data"
out=$tmp/runs

for prog in vtrain dittrain; do
  t0=$(date +%s.%N)
  run_$prog "$tmp/data" "$out" ref_$prog >"$tmp/ref_$prog.out" 2>&1 &
  wait $! || { cat "$tmp/ref_$prog.out"; fail "the uninterrupted $prog run failed"; }
  note "uninterrupted $prog run: $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
  [ -f "$out/ref_$prog/step_30/state.json" ] || fail "the uninterrupted $prog run has no step_30"
done

# $1: program, $2: name, $3: moment (train | eval | ckpt | sample)
trial() {
  local prog=$1 name=$2 moment=$3 target pid rc s l0 last
  case $moment in
    train) target=$((RANDOM % 23 + 2)) ;;        # a step inside the run
    eval) target=$(((RANDOM % 4 + 1) * 5)) ;;    # an epoch's last step: its evaluation follows
    ckpt) target=$(((RANDOM % 6 + 1) * 4)) ;;    # a checkpoint step: its write follows
    sample) target=$(((RANDOM % 5 + 1) * 5)) ;;  # a sample grid's step: the grid follows
  esac
  run_$prog "$tmp/data" "$out" "$name" >"$tmp/$name.stop.out" 2>&1 &
  pid=$!
  while [ "$(last_train_step "$out/$name/metrics.jsonl")" -lt "$target" ]; do
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/$name.stop.out"; fail "$name: ended before step $target"; }
    sleep 0.002
  done
  l0=$(last_train_step "$out/$name/metrics.jsonl")
  kill -TERM "$pid"
  if [ "$moment" = ckpt ]; then
    sleep 0.05
    kill -TERM "$pid" 2>/dev/null  # a second signal, while the stop checkpoint is written
  fi
  wait "$pid"
  rc=$?
  [ "$rc" -eq 3 ] || { cat "$tmp/$name.stop.out"; fail "$name: exit status $rc after SIGTERM, expected 3"; }
  s=$(sed -n 's/.*stopped by SIGTERM after step \([0-9]*\).*/\1/p' "$out/$name/log.txt" | tail -1)
  [ -n "$s" ] || fail "$name: log.txt does not name the signal and the step: $(tail -5 "$out/$name/log.txt")"
  grep -q "SIGTERM received: stopping after step $s" "$out/$name/log.txt" || fail "$name: no stop line in log.txt"
  note "$name: SIGTERM at $moment step $target (last recorded $l0) -> stopped after step $s, exit 3"
  [ "$s" -ge "$l0" ] || fail "$name: stopped at step $s, but step $l0 was already recorded"
  last=$(last_train_step "$out/$name/metrics.jsonl")
  [ "$last" -eq "$s" ] || fail "$name: the last recorded step is $last, the checkpoint's $s"
  [ -f "$out/$name/step_$s/state.json" ] || fail "$name: no complete step_$s"
  ls -a "$out/$name" | grep -q '^\.step_' && fail "$name: a partial checkpoint was left: $(ls -a "$out/$name")"
  python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['step'] == int(sys.argv[2])" \
    "$out/$name/step_$s/state.json" "$s" || fail "$name: step_$s/state.json does not hold step $s"
  check_metrics_readable "$out/$name/metrics.jsonl"
  # Resume to the end.
  run_$prog "$tmp/data" "$out" "$name" >"$tmp/$name.resume.out" 2>&1 &
  wait $! || { cat "$tmp/$name.resume.out"; fail "$name: the resumed run failed"; }
  grep -q "resumed from $out/$name/step_$s" "$tmp/$name.resume.out" "$out/$name/log.txt" ||
    fail "$name: did not resume from step_$s"
  local n compared=0
  for d in "$out/ref_$prog"/step_*; do
    n=${d##*/}
    [ -d "$out/$name/$n" ] || fail "$name: no $n (the uninterrupted run has one)"
    if [ "$n" = "step_$s" ]; then
      # The stop checkpoint of an epoch's end replaces the periodic one of
      # the same step, written before the evaluation: the same tensors, a
      # later position (the next epoch) in state.json.
      same_checkpoint "$d" "$out/$name/$n" tensors
    else
      same_checkpoint "$d" "$out/$name/$n"
    fi
    compared=$((compared + 1))
  done
  note "$name: $compared checkpoints byte-identical to the uninterrupted run's"
}

trial vtrain during_train train
trial vtrain during_eval eval
trial vtrain during_ckpt ckpt
trial dittrain dit_during_sample sample
# Every grid of the uninterrupted run, each written once and complete.
for g in "$out/ref_dittrain/samples"/*.png; do
  cmp -s "$g" "$out/dit_during_sample/samples/${g##*/}" || fail "sample grid ${g##*/} differs from the uninterrupted run's"
done
note "ok"
