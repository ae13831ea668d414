#!/usr/bin/env bash
# Stop signals with several ranks (label faults): two vtrain ranks under
# mpirun, SIGTERM to rank 1 only at a random step. Both ranks must agree on
# the last step (one stop line naming it, from rank 0, which writes its
# checkpoint), the job must exit with status 3, and the run resumed with two
# ranks must write checkpoints byte-identical to a two-rank run never
# stopped.
#
# usage: signal_ranks.sh VTRAIN CIFAR_DIR MPIEXEC   (VT_FAULTS_SEED picks the step)
set -u
VTRAIN=$1
CIFAR=$2
MPIEXEC=$3
source "$(dirname "$0")/common.sh"
[ -d "$CIFAR/train" ] || { echo "no CIFAR-10 at $CIFAR: skipped"; exit 77; }
[ -x "$MPIEXEC" ] || { echo "no mpirun: skipped"; exit 77; }

tmp=$(mktemp -d)
trap '[ -n "${VT_FAULTS_KEEP:-}" ] || rm -rf "$tmp"' EXIT
seed=${VT_FAULTS_SEED:-$RANDOM}
RANDOM=$seed
note "seed $seed"
make_dataset "$tmp/data"
out=$tmp/runs
export VTRAIN OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none \
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none OMPI_ALLOW_RUN_AS_ROOT=1 \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
two_ranks() {  # NAME
  exec timeout 120 "$MPIEXEC" -np 2 bash -c 'source "$0"; run_vtrain "$@"' "$(dirname "$0")/common.sh" \
    "$tmp/data" "$out" "$1"
}

two_ranks ref >"$tmp/ref.out" 2>&1 &
wait $! || { cat "$tmp/ref.out"; fail "the uninterrupted two-rank run failed"; }

target=$((RANDOM % 23 + 2))
two_ranks split >"$tmp/stop.out" 2>&1 &
pid=$!
while [ "$(last_train_step "$out/split/metrics.jsonl")" -lt "$target" ]; do
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/stop.out"; fail "ended before step $target"; }
  sleep 0.002
done
rank1=$(sed -n 's/^rank 1 of 2: host .*, pid \([0-9]*\)$/\1/p' "$tmp/stop.out")
[ -n "$rank1" ] || fail "rank 1's pid is not in the output"
kill -TERM "$rank1"
wait "$pid"
rc=$?
[ "$rc" -eq 3 ] || { cat "$tmp/stop.out"; fail "exit status $rc after SIGTERM to rank 1, expected 3"; }
[ "$(grep -c "stopped by SIGTERM after step" "$out/split/log.txt")" -eq 1 ] || fail "not one stop line in log.txt"
s=$(sed -n 's/.*stopped by SIGTERM after step \([0-9]*\).*/\1/p' "$out/split/log.txt")
note "SIGTERM to rank 1 at step $target -> both ranks stopped after step $s, exit 3"
[ "$s" -ge "$target" ] || fail "stopped at step $s before step $target was recorded"
[ "$(last_train_step "$out/split/metrics.jsonl")" -eq "$s" ] || fail "steps after $s were recorded"
[ -f "$out/split/step_$s/state.json" ] || fail "no complete step_$s"
two_ranks split >"$tmp/resume.out" 2>&1 &
wait $! || { cat "$tmp/resume.out"; fail "the resumed run failed"; }
n=0
for d in "$out/ref"/step_*; do
  if [ "${d##*/}" = "step_$s" ]; then same_checkpoint "$d" "$out/split/${d##*/}" tensors
  else same_checkpoint "$d" "$out/split/${d##*/}"; fi
  n=$((n + 1))
done
note "$n checkpoints byte-identical to the uninterrupted two-rank run's"
note "ok"
