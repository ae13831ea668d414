#!/usr/bin/env bash
# Collective timeout (label faults): two vtrain ranks under mpirun, rank 1
# made to sleep 300 s before step 3 (test hook VT_TEST_RANK_SLEEP,
# train/loop.h), dist.timeout_s=5. Rank 0 waits in the step's all-reduce;
# the job must end within timeout + 30 s with exit status 4
# (core/exit_status.h) and a message naming the rank, the step and the
# operation, on stderr and in rank 0's log.txt.
#
# usage: dist_timeout.sh VTRAIN CIFAR_DIR MPIEXEC
set -u
VTRAIN=$1
CIFAR=$2
MPIEXEC=$3
source "$(dirname "$0")/common.sh"
[ -d "$CIFAR/train" ] || { echo "no CIFAR-10 at $CIFAR: skipped"; exit 77; }
[ -x "$MPIEXEC" ] || { echo "no mpirun: skipped"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make_dataset "$tmp/data"
out=$tmp/runs
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_hwloc_base_binding_policy=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

export VTRAIN
VT_TEST_RANK_SLEEP=1:3:300 timeout 120 "$MPIEXEC" -np 2 bash -c 'source "$0"; run_vtrain "$@"' \
  "$(dirname "$0")/common.sh" "$tmp/data" "$out" hang dist.timeout_s=5 >"$tmp/hang.out" 2>&1 &
pid=$!
t0=$(date +%s)
wait $pid
rc=$?
secs=$(($(date +%s) - t0))
note "2 ranks, rank 1 asleep at step 3, dist.timeout_s=5: exit status $rc after $secs s"
[ "$rc" -ne 124 ] || { cat "$tmp/hang.out"; fail "the job hung (killed by timeout 120)"; }
[ "$rc" -eq 4 ] || { cat "$tmp/hang.out"; fail "exit status $rc, expected 4 (distributed timeout)"; }
[ "$secs" -le 35 ] || fail "took $secs s, more than dist.timeout_s + 30"
# Rank 0 waits for rank 1 in the step's gradient all-reduce.
msg="rank 0 of 2 (host $(hostname)): distributed timeout: MPI_Allreduce of the gradients"
grep -q "$msg" "$tmp/hang.out" || { cat "$tmp/hang.out"; fail "no '$msg' on stderr"; }
grep -q "at step 3 did not complete within 5 s (dist.timeout_s)" "$tmp/hang.out" ||
  { cat "$tmp/hang.out"; fail "the message does not name step 3 and the timeout"; }
grep -q "distributed timeout: MPI_Allreduce of the gradients" "$out/hang/log.txt" || fail "rank 0's log.txt lacks the message"
note "$(grep -m1 'distributed timeout' "$tmp/hang.out")"
note "ok"
