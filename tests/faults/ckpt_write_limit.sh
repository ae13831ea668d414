#!/usr/bin/env bash
# A checkpoint write that fails (label faults), without root: the file-size
# limit (RLIMIT_FSIZE, `ulimit -f`) makes writing the checkpoint's files
# fail with EFBIG, as a full disk fails with ENOSPC.
#   stop (default): exit status 5 (core/exit_status.h), a message naming the
#     checkpoint, the reason and the bytes it needs (checked against the size
#     of the same run's complete checkpoint) and the previous checkpoint;
#     that checkpoint byte-identical to before, no partial one left, every
#     metrics line readable; `resume: auto` then continues from it.
#   ckpt.on_write_error=retry: the failure is logged, training goes on, and
#     once the limit is lifted (prlimit on the running process) the next
#     checkpoints are written; exit status 0.
#
# usage: ckpt_write_limit.sh VTRAIN CIFAR_DIR
set -u
VTRAIN=$1
CIFAR=$2
source "$(dirname "$0")/common.sh"
[ -d "$CIFAR/train" ] || { echo "no CIFAR-10 at $CIFAR: skipped"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make_dataset "$tmp/data"
out=$tmp/runs

run_vtrain "$tmp/data" "$out" disk train.max_steps=4 >"$tmp/a.out" 2>&1 &
wait $! || { cat "$tmp/a.out"; fail "the first run failed"; }
[ -f "$out/disk/step_4/state.json" ] || fail "no step_4"
cp -r "$out/disk/step_4" "$tmp/step_4.copy"
model_bytes=$(stat -c %s "$out/disk/step_4/model.safetensors")
all_bytes=$(cat "$out/disk/step_4"/* | wc -c)
limit_kib=$((model_bytes / 1024 / 2))  # half a model file: every checkpoint write fails
note "checkpoint: $all_bytes bytes (model.safetensors $model_bytes); limit ${limit_kib} KiB"

(ulimit -S -f "$limit_kib" && run_vtrain "$tmp/data" "$out" disk train.max_steps=8) >"$tmp/b.out" 2>&1 &
wait $!
rc=$?
note "stop: exit status $rc"
[ "$rc" -eq 5 ] || { cat "$tmp/b.out"; fail "exit status $rc, expected 5 (checkpoint write failed)"; }
grep -q "checkpoint '$out/disk/step_8': cannot write: .*File too large" "$tmp/b.out" ||
  { cat "$tmp/b.out"; fail "the message does not name step_8 and the reason"; }
grep -q "the newest complete checkpoint is $out/disk/step_4" "$tmp/b.out" || fail "the message does not name step_4"
grep -q "cannot write: .*File too large" "$out/disk/log.txt" || fail "log.txt lacks the message"
need=$(sed -n 's/.*the checkpoint needs \([0-9]*\) bytes.*/\1/p' "$tmp/b.out" | head -1)
[ -n "$need" ] || fail "the message does not give the bytes needed"
# Within 10% + 64 KiB above the bytes of the complete step_4 (same tensors),
# never below them.
[ "$need" -ge "$((all_bytes - 64))" ] && [ "$need" -le "$((all_bytes + all_bytes / 10 + 65536))" ] ||
  fail "needs $need bytes reported, the complete checkpoint has $all_bytes"
same_checkpoint "$tmp/step_4.copy" "$out/disk/step_4"
[ -e "$out/disk/step_8" ] && fail "a step_8 was left"
ls -a "$out/disk" | grep -q '^\.step_' && fail "a partial checkpoint was left: $(ls -a "$out/disk")"
check_metrics_readable "$out/disk/metrics.jsonl"
note "stop: step_4 intact, no partial checkpoint, metrics readable; the message: $(grep -o "cannot write.*" "$tmp/b.out" | head -1)"

# retry: the failed step_8 is logged; the limit is lifted; a later
# checkpoint (step_12, or step_16 when the lift comes late) and the end's
# (step_20) are written.
(ulimit -S -f "$limit_kib" && run_vtrain "$tmp/data" "$out" disk train.max_steps=20 ckpt.on_write_error=retry) \
  >"$tmp/c.out" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q "retrying at the next checkpoint" "$tmp/c.out" && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.05
done
prlimit --pid $pid --fsize=unlimited || fail "prlimit failed"
wait $pid
rc=$?
note "retry: exit status $rc"
[ "$rc" -eq 0 ] || { cat "$tmp/c.out"; fail "exit status $rc with ckpt.on_write_error=retry"; }
grep -q "resumed from $out/disk/step_4" "$tmp/c.out" || fail "the run after the failure did not resume from step_4"
grep -q "step_8': cannot write: .*retrying at the next checkpoint" "$out/disk/log.txt" || fail "no retry line in log.txt"
[ -f "$out/disk/step_20/state.json" ] || fail "no step_20 after the limit was lifted"
[ -e "$out/disk/step_8" ] && fail "a step_8 was left"
check_metrics_readable "$out/disk/metrics.jsonl"
note "ok"
