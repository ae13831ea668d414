#!/usr/bin/env bash
# tools/kernel_resources.py's reading of ptxas -v (ctest
# scripts.kernel_resources), on a log written here in ptxas' format: each
# entry's registers, stack, spills and static shared memory; a helper
# function's properties are not an entry's; the occupancy bound by
# registers from its closed form (64 K registers per SM, 64 warps, a
# 256-register unit per warp: 64 registers -> 32 warps = 50.0 %, 65 -> 28
# = 43.8 %, 255 -> 8 = 12.5 %); the call-outs name the kernels that spill
# and those below 50 %, and only them.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=tests/scripts/check_lib.sh
. "$SRC/tests/scripts/check_lib.sh"
row() {  # row KERNEL: the table row of KERNEL, columns squeezed
  awk -v k="$1" '$1 == k {print; exit}' "$T/out" | tr -s ' '
}
cat >"$T/ptxas.log" <<'LOG'
ptxas info    : 272 bytes gmem
ptxas info    : Compiling entry function '_Z6spillyPf' for 'sm_90'
ptxas info    : Function properties for _Z6spillyPf
    1216 bytes stack frame, 1180 bytes spill stores, 1204 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 1216 bytes cumulative stack size, 34816 bytes smem, 400 bytes cmem[0]
ptxas info    : Compile time = 47.053 ms
ptxas info    : Function properties for __internal_trig_reduction_slowpathd
    40 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z4leanPf' for 'sm_90'
ptxas info    : Function properties for _Z4leanPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 64 registers, used 0 barriers, 380 bytes cmem[0]
ptxas info    : Compiling entry function '_Z5threePf' for 'sm_90'
ptxas info    : Function properties for _Z5threePf
    72 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 65 registers, used 0 barriers, 72 bytes cumulative stack size
LOG
python3 "$SRC/tools/kernel_resources.py" --parse "$T/ptxas.log" >"$T/out" 2>&1
check "the log is read (exit 0)" test $? -eq 0
sed 's/^/  | /' "$T/out"
check "spilly: 255 registers, 1216 B stack, 1180/1204 B spills, 34816 B smem, 12.5%" \
  test "$(row spilly)" = "spilly 255 1216 1180/1204 34816 12.5% ptxas.log"
check "lean: 64 registers, 50.0%" test "$(row lean)" = "lean 64 0 0/0 0 50.0% ptxas.log"
check "three: 65 registers, 72 B stack, 43.8%" test "$(row three)" = "three 65 72 0/0 0 43.8% ptxas.log"
check "three kernels, the helper is not one" grep -q "^3 kernels (sm_90)" "$T/out"
check "spilling: spilly only" test "$(sed -n '/^Spilling (1)/,/^Occupancy/p' "$T/out" | grep -c '^  ')" -eq 1
check "  named" grep -q "^  spilly: 255 registers, 1180 B spill stores, 1204 B spill loads, 1216 B stack" "$T/out"
check "capped: spilly and three" grep -q "^Occupancy capped below 50% by registers (2)" "$T/out"
check "  three at 28 of 64 warps" grep -q "^  three: 65 registers, at most 28 of 64 warps per SM" "$T/out"
echo "not a log" >"$T/empty.log"
python3 "$SRC/tools/kernel_resources.py" --parse "$T/empty.log" >"$T/bad" 2>&1
check "a file without entries is refused naming it" grep -q "empty.log: no 'Compiling entry function' lines" "$T/bad"
echo "$fails failed"
[ "$fails" -eq 0 ]
