# shellcheck shell=bash
# Shared by scripts/compare_norms.sh and scripts/compare_norms_dit.sh (sourced):
# how one run of a comparison grid is run and its outcome recorded.
#
# run_recorded NAME RESULT LOG COMMAND...
#   Runs COMMAND with stdout and stderr into LOG, then writes RESULT atomically
#   (a result file is always complete, so a rerun of the grid can trust it):
#     "finished"                     the command exited 0
#     "diverged" + the trainer's     it stopped on a non-finite loss or gradient
#     message ("non-finite ... at step N")   (vtrain/dittrain keep the last good checkpoint)
#   Any other failure writes no RESULT (the run is retried by the next grid run),
#   prints the log's tail and returns 1. NAME prefixes the messages.
run_recorded() {
  local name=$1 result=$2 log=$3 rc
  shift 3
  set +e
  "$@" > "$log" 2>&1
  rc=$?
  set -e
  if [[ $rc -eq 0 ]]; then
    echo "finished" > "$result.tmp"
  elif grep -q "non-finite" "$log"; then
    # train/nonfinite.cpp: "non-finite training loss L / gradient norm G at step N (...); stopping ..."
    { echo "diverged"; grep -o "non-finite training loss[^;]*" "$log" | tail -n1; } > "$result.tmp"
  else
    echo "$name: $(basename "$result" .result) failed (exit $rc), see $log; not marking it finished" >&2
    tail -n 5 "$log" >&2
    return 1
  fi
  mv "$result.tmp" "$result"
}
