#!/usr/bin/env bash
# The NCCL collective timeout on emulated GPUs (labels emu, mpi, faults):
# two ranks of vtrain's trainer on emulated CUDA (test_dp_train_emu,
# NcclTimeoutEmu), NCCL served by MPI (nccl_emu.cpp), gradient buckets of a
# few hundred values, rank 1 made to sleep 60 s before step 3
# (VT_TEST_RANK_SLEEP, train/loop.h), so rank 0 is stuck in a bucket
# all-reduce.
#  timeout      (ctest emu.nccl_timeout_np2) dist.timeout_s=3: the job must
#               end within timeout + 30 s with exit status 4
#               (core/exit_status.h), rank 0 must have aborted its
#               communicator (ncclCommAbort), and its message must name the
#               rank, step 3, the bucket all-reduce and the timeout, on
#               stderr and in the run's log.txt.
#  async_error  (ctest emu.nccl_async_error_np2) dist.timeout_s=60, rank 0's
#               communicator reporting an asynchronous error
#               (VT_EMU_NCCL_ASYNC_ERROR=0:1): the job must end well before
#               the timeout with exit status 1, rank 0 must have aborted its
#               communicator, and its message must name the rank, the step,
#               the all-reduce and NCCL's error, on stderr and in log.txt.
#  abort_hang   (ctest emu.nccl_abort_hang_np2) as timeout, but every
#               rank's ncclCommAbort never returns (VT_EMU_NCCL_ABORT_HANG=1,
#               as reported on GPUs: nccl_emu.cpp) and rank 1 sleeps 5.5 s
#               only, so it wakes after rank 0's watchdog began the abort
#               (3 s) and before the abort's deadline (kAbortDeadlineSeconds,
#               5 s later, core/dist_watchdog.h) ends the job: rank 0's
#               blocked all-reduce then returns and its main thread goes on.
#               The job must still end with exit status 4 within
#               timeout + deadline + 25 s, with the message, then "rank 0:
#               ncclCommAbort did not return within 5 s" (stderr and
#               log.txt), and rank 0 must issue nothing more on the aborted
#               communicator (the emulator aborts the process on any call).
# Every mode: the message comes before the ncclCommAbort (the abort may
# hang or crash), and no NCCL call follows the abort.
#
# usage: nccl_timeout_emu.sh MPIEXEC TEST_DP_TRAIN_EMU timeout|async_error|abort_hang
set -u
MPIEXEC=$1
BIN=$2
MODE=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

host=$(hostname)
timeout_msg="rank 0 of 2 \\(host $host\\): distributed timeout: NCCL all-reduce of gradient bucket [0-9]+ \\([0-9]+ floats\\) at step 3 did not complete within 3 s \\(dist\\.timeout_s\\)"
sleep_s=60 hang=
case $MODE in
  timeout)
    timeout_s=3 inject= want_rc=4 max_secs=33
    msg=$timeout_msg;;
  async_error)
    timeout_s=60 inject=0:1 want_rc=1 max_secs=30
    msg="rank 0 of 2 \\(host $host\\): NCCL all-reduce of (gradient bucket [0-9]+|the step's device scalars) \\([0-9]+ floats\\) at step [1-3] failed: NCCL asynchronous error: remote process exited or there was a network error";;
  abort_hang)
    timeout_s=3 inject= want_rc=4 max_secs=33 sleep_s=5.5 hang=1
    msg=$timeout_msg;;
  *) fail "unknown mode '$MODE' (timeout, async_error or abort_hang)";;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
VT_EMU_TIMEOUT_DIR=$tmp VT_EMU_TIMEOUT_S=$timeout_s VT_TEST_RANK_SLEEP=1:3:$sleep_s VT_EMU_NCCL_ASYNC_ERROR=$inject \
  VT_EMU_NCCL_ABORT_HANG=$hang timeout 120 "$MPIEXEC" -np 2 "$BIN" --gtest_filter=NcclTimeoutEmu.* >"$tmp/out" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
echo "$MODE: 2 emulated GPU ranks, rank 1 asleep $sleep_s s at step 3, dist.timeout_s=$timeout_s: exit status $rc after $secs s"
[ "$rc" -ne 124 ] || { cat "$tmp/out"; fail "the job hung (killed by timeout 120)"; }
[ "$rc" -eq "$want_rc" ] || { cat "$tmp/out"; fail "exit status $rc, expected $want_rc"; }
[ "$secs" -le "$max_secs" ] || fail "took $secs s, more than $max_secs"
grep -Eq "$msg" "$tmp/out" || { cat "$tmp/out"; fail "no '$msg' on stderr"; }
grep -q "NCCL emulator: ncclCommAbort on rank 0" "$tmp/out" || { cat "$tmp/out"; fail "rank 0 did not abort its communicator"; }
! grep -q "after ncclCommAbort: the communicator is freed" "$tmp/out" ||
  { cat "$tmp/out"; fail "an NCCL call used an aborted communicator"; }
# Rank 0's lines keep their order in mpirun's output (one stream per rank).
line_of() { grep -En -m1 "$1" "$tmp/out" | cut -d: -f1; }
[ "$(line_of "$msg")" -lt "$(line_of "NCCL emulator: ncclCommAbort on rank 0")" ] ||
  { cat "$tmp/out"; fail "rank 0 aborted its communicator before it wrote the message"; }
if [ "$MODE" = abort_hang ]; then
  late="NCCL emulator: an ncclAllReduce on rank 0 returned after ncclCommAbort"
  grep -q "$late" "$tmp/out" || { cat "$tmp/out"; fail "no '$late': rank 1 did not wake within the abort's deadline"; }
  hung="rank 0: ncclCommAbort did not return within 5 s; ending the job without waiting for it"
  grep -q "$hung" "$tmp/out" || { cat "$tmp/out"; fail "no '$hung' on stderr"; }
  [ "$(line_of "NCCL emulator: ncclCommAbort on rank 0")" -lt "$(line_of "$hung")" ] ||
    { cat "$tmp/out"; fail "'$hung' came before the abort"; }
fi
log=$(find "$tmp/gpu" -name log.txt | head -1)
[ -n "$log" ] || fail "no log.txt under $tmp/gpu"
grep -Eq "$msg" "$log" || fail "$log lacks the message"
[ "$MODE" != abort_hang ] || grep -q "$hung" "$log" || fail "$log lacks '$hung'"
grep -E -m1 "$msg" "$tmp/out"
echo ok
