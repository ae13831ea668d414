#!/usr/bin/env bash
# The NCCL collective timeout on emulated GPUs (ctest emu.nccl_timeout_np2,
# labels emu, mpi, faults): two ranks of vtrain's trainer on emulated CUDA
# (test_dp_train_emu, NcclTimeoutEmu), NCCL served by MPI (nccl_emu.cpp),
# gradient buckets of a few hundred values, dist.timeout_s=3, rank 1 made to
# sleep 60 s before step 3 (VT_TEST_RANK_SLEEP, train/loop.h). Rank 0 is
# stuck in step 3's first bucket all-reduce; the job must end within
# timeout + 30 s with exit status 4 (core/exit_status.h), rank 0 must have
# aborted its communicator (ncclCommAbort), and its message must name the
# rank, step 3, the bucket all-reduce and the timeout, on stderr and in the
# run's log.txt.
#
# usage: nccl_timeout_emu.sh MPIEXEC TEST_DP_TRAIN_EMU
set -u
MPIEXEC=$1
BIN=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
VT_EMU_TIMEOUT_DIR=$tmp VT_EMU_TIMEOUT_S=3 VT_TEST_RANK_SLEEP=1:3:60 \
  timeout 120 "$MPIEXEC" -np 2 "$BIN" --gtest_filter=NcclTimeoutEmu.* >"$tmp/out" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
echo "2 emulated GPU ranks, rank 1 asleep at step 3, dist.timeout_s=3: exit status $rc after $secs s"
[ "$rc" -ne 124 ] || { cat "$tmp/out"; fail "the job hung (killed by timeout 120)"; }
[ "$rc" -eq 4 ] || { cat "$tmp/out"; fail "exit status $rc, expected 4 (distributed timeout)"; }
[ "$secs" -le 33 ] || fail "took $secs s, more than dist.timeout_s + 30"
msg="rank 0 of 2 \(host $(hostname)\): distributed timeout: NCCL all-reduce of gradient bucket [0-9]+ \([0-9]+ floats\) at step 3 did not complete within 3 s \(dist\.timeout_s\)"
grep -Eq "$msg" "$tmp/out" || { cat "$tmp/out"; fail "no '$msg' on stderr"; }
grep -q "NCCL emulator: ncclCommAbort on rank 0" "$tmp/out" || { cat "$tmp/out"; fail "rank 0 did not abort its communicator"; }
log=$(find "$tmp/gpu" -name log.txt | head -1)
[ -n "$log" ] || fail "no log.txt under $tmp/gpu"
grep -Eq "$msg" "$log" || fail "$log lacks the message"
grep -E -m1 "distributed timeout" "$tmp/out"
echo ok
