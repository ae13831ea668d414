#!/usr/bin/env bash
# The GPU bundle's size rule (ctest scripts.bundle_size): what a GPU run
# carries, bundle + tracked tree, stays within 60 MiB of the 64 MiB
# (scripts/bundle_gpu_build.sh --check-size). A file 1 MiB under the room
# the tracked tree leaves passes; 1 MiB over is refused (exit 1) naming
# both figures and their sum. The tree's size is measured here on its own
# (git ls-files, the bytes of each file), not taken from the script.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
S=$SRC/scripts/bundle_gpu_build.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=tests/scripts/check_lib.sh
. "$SRC/tests/scripts/check_lib.sh"

check "bash -n" bash -n "$S"
if command -v shellcheck >/dev/null; then check shellcheck shellcheck "$S"; fi
if ! git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  echo "SKIP: $SRC is not a git checkout (the rule counts its tracked files)"
  exit 0
fi
tree=0
while IFS= read -r -d '' f; do
  [ -f "$SRC/$f" ] && tree=$((tree + $(stat -c %s "$SRC/$f")))
done < <(git -C "$SRC" ls-files -z)
limit=$((60 * 1024 * 1024)) mib=$((1024 * 1024))
room=$((limit - tree))
check "the tracked tree ($tree bytes) leaves room for a bundle" test "$room" -gt $((2 * mib))

truncate -s $((room - mib)) "$T/under.tar.xz"
"$S" --check-size "$T/under.tar.xz" >"$T/under.log" 2>&1
check "a bundle 1 MiB under the room passes" test $? -eq 0
check "  and its figures are printed" contains "$T/under.log" "tracked tree"

truncate -s $((room + mib)) "$T/over.tar.xz"
"$S" --check-size "$T/over.tar.xz" >"$T/over.log" 2>&1
check "a bundle 1 MiB over the room is refused (exit 1)" test $? -eq 1
check "  naming the rule" contains "$T/over.log" "refused: bundle + tracked tree is 1 MiB over the limit"
over_total=$(awk -v s=$((room + mib)) -v t="$tree" 'BEGIN{printf "%.1f MiB (limit 60 MiB", (s + t) / 1048576}')
check "  with the sum of both" contains "$T/over.log" "= $over_total"

"$S" --check-size "$T/missing.tar.xz" >"$T/missing.log" 2>&1
check "a missing file is a usage error (exit 2)" test $? -eq 2

echo "$fails failed"
[ "$fails" -eq 0 ]
