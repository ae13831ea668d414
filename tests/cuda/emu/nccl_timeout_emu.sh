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
#
# usage: nccl_timeout_emu.sh MPIEXEC TEST_DP_TRAIN_EMU timeout|async_error
set -u
MPIEXEC=$1
BIN=$2
MODE=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

host=$(hostname)
case $MODE in
  timeout)
    timeout_s=3 inject= want_rc=4 max_secs=33
    msg="rank 0 of 2 \\(host $host\\): distributed timeout: NCCL all-reduce of gradient bucket [0-9]+ \\([0-9]+ floats\\) at step 3 did not complete within 3 s \\(dist\\.timeout_s\\)";;
  async_error)
    timeout_s=60 inject=0:1 want_rc=1 max_secs=30
    msg="rank 0 of 2 \\(host $host\\): NCCL all-reduce of (gradient bucket [0-9]+|the step's device scalars) \\([0-9]+ floats\\) at step [1-3] failed: NCCL asynchronous error: remote process exited or there was a network error";;
  *) fail "unknown mode '$MODE' (timeout or async_error)";;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
VT_EMU_TIMEOUT_DIR=$tmp VT_EMU_TIMEOUT_S=$timeout_s VT_TEST_RANK_SLEEP=1:3:60 VT_EMU_NCCL_ASYNC_ERROR=$inject \
  timeout 120 "$MPIEXEC" -np 2 "$BIN" --gtest_filter=NcclTimeoutEmu.* >"$tmp/out" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
echo "$MODE: 2 emulated GPU ranks, rank 1 asleep at step 3, dist.timeout_s=$timeout_s: exit status $rc after $secs s"
[ "$rc" -ne 124 ] || { cat "$tmp/out"; fail "the job hung (killed by timeout 120)"; }
[ "$rc" -eq "$want_rc" ] || { cat "$tmp/out"; fail "exit status $rc, expected $want_rc"; }
[ "$secs" -le "$max_secs" ] || fail "took $secs s, more than $max_secs"
grep -Eq "$msg" "$tmp/out" || { cat "$tmp/out"; fail "no '$msg' on stderr"; }
grep -q "NCCL emulator: ncclCommAbort on rank 0" "$tmp/out" || { cat "$tmp/out"; fail "rank 0 did not abort its communicator"; }
log=$(find "$tmp/gpu" -name log.txt | head -1)
[ -n "$log" ] || fail "no log.txt under $tmp/gpu"
grep -Eq "$msg" "$log" || fail "$log lacks the message"
grep -E -m1 "$msg" "$tmp/out"
echo ok
