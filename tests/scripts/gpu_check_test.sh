#!/usr/bin/env bash
# Tests of scripts/gpu_check.sh that need no GPU (ctest scripts.gpu_check):
#  1. syntax (bash -n) and shellcheck when installed;
#  2. the library search against a fake tree: CUDA_HOME before
#     /usr/local/cuda-X.Y (newest first) before the pip nvidia-* wheels;
#  3. vt_add_cuda_libs on real ELF programs whose libraries sit only in the
#     fake tree: it finds them (the program then runs) and names a missing
#     soname together with the versions that exist;
#  4. the whole script with a fake nvidia-smi, a fake compute-sanitizer and
#     a fake build: no GPU, a hidden GPU, a bundle needing a newer glibc and
#     an unknown stage exit 2 having run nothing; the passes expand into
#     their stages with their budgets; stages pass, fail, time out, are
#     "not built", SKIP for budget (never started short of their limit) or
#     for an environment that refuses the tool, and only FAIL/TIMEOUT fail
#     the run; the table and the one-line summary in $OUT/gpu_check.log
#     say what ran, passed and is unmeasured.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
S=$SRC/scripts/gpu_check.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=tests/scripts/check_lib.sh
. "$SRC/tests/scripts/check_lib.sh"

check "bash -n" bash -n "$S"
if command -v shellcheck >/dev/null; then check shellcheck shellcheck "$S"; fi

# --- 2. the search order on a fake tree -------------------------------------
R=$T/root
mkdir -p "$R/usr/local/cuda-12.4/targets/x86_64-linux/lib" "$R/usr/local/cuda-12.10/lib64" \
         "$T/site/nvidia/cublas/lib" "$T/site/nvidia/cudnn/lib" "$T/site/nvidia/nccl/lib" "$T/home/lib64" \
         "$T/site/torch/lib" "$T/site/nvidia/cuda_sanitizer_api/compute-sanitizer" "$T/site/nvidia/cu13/lib"
touch "$R/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12" "$R/usr/local/cuda-12.4/targets/x86_64-linux/lib/libnvrtc.so.12" \
      "$R/usr/local/cuda-12.10/lib64/libcudart.so.12" \
      "$T/site/nvidia/cublas/lib/libcublas.so.12" "$T/site/nvidia/cublas/lib/libcublasLt.so.12" \
      "$T/site/nvidia/cudnn/lib/libcudnn.so.9" "$T/site/nvidia/nccl/lib/libnccl.so.2" \
      "$T/home/lib64/libcublas.so.12" "$T/site/torch/lib/libc10.so" "$T/site/nvidia/cu13/lib/libcublasLt.so.13"
printf '#!/bin/sh\n' >"$T/site/nvidia/cuda_sanitizer_api/compute-sanitizer/compute-sanitizer"
chmod +x "$T/site/nvidia/cuda_sanitizer_api/compute-sanitizer/compute-sanitizer"

lookup() {  # lookup SONAME EXPECTED_DIR
  local got
  got=$(VT_LIB_ROOT=$R VT_PY_SITE_DIRS=$T/site CUDA_HOME=$T/home CUDA_PATH='' CUDA_ROOT='' PATH=/usr/bin:/bin \
        bash -c "source '$S'; vt_find_lib $1")
  [ "$got" = "$2" ] || { echo "  $1: got '$got', expected '$2'"; return 1; }
}
check "CUDA_HOME before the wheels" lookup libcublas.so.12 "$T/home/lib64"
check "wheel nvidia/cublas/lib" lookup libcublasLt.so.12 "$T/site/nvidia/cublas/lib"
check "wheel nvidia/cudnn/lib" lookup libcudnn.so.9 "$T/site/nvidia/cudnn/lib"
check "wheel nvidia/nccl/lib" lookup libnccl.so.2 "$T/site/nvidia/nccl/lib"
check "cuda-12.10 before cuda-12.4" lookup libcudart.so.12 "$R/usr/local/cuda-12.10/lib64"
check "targets/x86_64-linux/lib" lookup libnvrtc.so.12 "$R/usr/local/cuda-12.4/targets/x86_64-linux/lib"
check "torch/lib" lookup libc10.so "$T/site/torch/lib"
check "CUDA 13 wheels: nvidia/cu13/lib" lookup libcublasLt.so.13 "$T/site/nvidia/cu13/lib"
check "absent soname" bash -c "! VT_LIB_ROOT=$R VT_PY_SITE_DIRS=$T/site CUDA_HOME= bash -c \"source '$S'; vt_find_lib libcublas.so.13\""
san=$(VT_LIB_ROOT=$R VT_PY_SITE_DIRS=$T/site CUDA_HOME=$T/home PATH=/usr/bin:/bin bash -c "source '$S'; vt_find_sanitizer")
check "compute-sanitizer from the pip wheel" test "$san" = "$T/site/nvidia/cuda_sanitizer_api/compute-sanitizer/compute-sanitizer"

# --- 3. resolving real programs ---------------------------------------------
if command -v cc >/dev/null; then
  mkdir -p "$T/site/nvidia/fakert/lib" "$T/site/nvidia/fakeblas/lib" "$T/build"
  echo 'int vt_fake_rt(void) { return 41; }' >"$T/rt.c"
  echo 'int vt_fake_rt(void); int vt_fake_blas(void) { return vt_fake_rt() + 1; }' >"$T/blas.c"
  cc -shared -fPIC -Wl,-soname,libvtfakert.so.12 -o "$T/site/nvidia/fakert/lib/libvtfakert.so.12" "$T/rt.c"
  # The "BLAS" needs the "runtime" (found only on the second pass).
  cc -shared -fPIC -Wl,-soname,libvtfakeblas.so.12 -o "$T/site/nvidia/fakeblas/lib/libvtfakeblas.so.12" "$T/blas.c" \
     "$T/site/nvidia/fakert/lib/libvtfakert.so.12"
  printf '#include <stdio.h>\nint vt_fake_blas(void);\nint main(void) { printf("%%d\\n", vt_fake_blas()); return 0; }\n' >"$T/prog.c"
  cc -o "$T/build/prog" "$T/prog.c" "$T/site/nvidia/fakeblas/lib/libvtfakeblas.so.12" -Wl,--allow-shlib-undefined
  # A program linked against a soname of which this "machine" has another version.
  cc -shared -fPIC -Wl,-soname,libvtfakeblas.so.13 -o "$T/libvtfakeblas.so.13" "$T/blas.c" \
     "$T/site/nvidia/fakert/lib/libvtfakert.so.12"
  cc -o "$T/build/prog13" "$T/prog.c" "$T/libvtfakeblas.so.13" -Wl,--allow-shlib-undefined
  env_fake=(VT_LIB_ROOT="$R" VT_PY_SITE_DIRS="$T/site" CUDA_HOME="$T/home" LD_LIBRARY_PATH=)
  check "program does not load before" bash -c "! '$T/build/prog' 2>/dev/null"
  env "${env_fake[@]}" bash -c "source '$S'; vt_add_cuda_libs '$T/build/prog' && '$T/build/prog'" >"$T/res.out" 2>&1
  check "resolved: found both libraries, program runs" bash -c \
    "grep -q 'found libvtfakeblas.so.12 in $T/site/nvidia/fakeblas/lib' '$T/res.out' && grep -q 'found libvtfakert.so.12' '$T/res.out' && grep -qx 42 '$T/res.out'"
  env "${env_fake[@]}" bash -c "source '$S'; vt_add_cuda_libs '$T/build/prog13'" >"$T/res13.out" 2>&1
  rc=$?
  check "wrong major version: returns 1" test "$rc" = 1
  check "wrong major version: names it and what exists" contains "$T/res13.out" \
    "missing libvtfakeblas.so.13 (this machine has: $T/site/nvidia/fakeblas/lib/libvtfakeblas.so.12"
fi

# --- 4. the whole script with a fake GPU --------------------------------------
# A copy of the script in a tree of its own, with a fake build.
W=$T/tree
mkdir -p "$W/scripts" "$W/build-gpu/tests" "$W/build-gpu/bench" "$T/bin" "$T/nogpu"
cp "$S" "$W/scripts/"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." >&2\nexit 9\n' >"$T/nogpu/nvidia-smi"
printf '#!/bin/sh\necho "NVIDIA H200, 143771 MiB, 570.00"\n' >"$T/bin/nvidia-smi"
printf '#!/bin/sh\necho "[==========] 3 tests ran."\necho "[  PASSED  ] 3 tests."\n' >"$W/build-gpu/tests/test_cuda"
printf '#!/bin/sh\necho "layernorm fwd 2000 GB/s"\nexit 1\n' >"$W/build-gpu/bench/bench_cuda_kernels"
printf '#!/bin/sh\nsleep 100\n' >"$W/build-gpu/bench/bench_allreduce"
# A sanitizer that this "sandbox" refuses for memcheck and that finds a
# hazard under racecheck.
cat >"$T/bin/compute-sanitizer" <<'EOS'
#!/bin/sh
case "$*" in
  *memcheck*) echo "========= Error: Device not supported. Please refer to the documentation"; exit 1 ;;
  *) echo "========= Error: Race reported between Write access at 0x10 in kernel"; exit 3 ;;
esac
EOS
chmod +x "$T"/nogpu/* "$T"/bin/* "$W"/build-gpu/tests/* "$W"/build-gpu/bench/*
BASEPATH=/usr/bin:/bin
run() {  # run NAME [VAR=VALUE ...] -- STAGE ...: the script with the fake GPU, log in $T/NAME
  local name=$1; shift
  local -a envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env PATH="$T/bin:$BASEPATH" OUT="$T/$name" VT_PY_SITE_DIRS='' "${envs[@]}" "$W/scripts/gpu_check.sh" "$@" \
    >"$T/$name.out" 2>&1
}

PATH=$T/nogpu:$BASEPATH OUT=$T/o1 "$W/scripts/gpu_check.sh" >"$T/o1.out" 2>&1
rc=$?
check "no GPU: exit 2" test "$rc" = 2
check "no GPU: says so" contains "$T/o1/gpu_check.log" "no NVIDIA GPU visible"
check "no GPU: nothing ran" bash -c "! grep -q '===' '$T/o1/gpu_check.log'"

PATH=$T/bin:$BASEPATH CUDA_VISIBLE_DEVICES='' OUT=$T/o2 "$W/scripts/gpu_check.sh" >"$T/o2.out" 2>&1
rc=$?
check "hidden GPU: exit 2" test "$rc" = 2
check "hidden GPU: says so" contains "$T/o2/gpu_check.log" "hides every GPU"

run unknown -- quick cudaa
rc=$?
check "unknown stage: exit 2" test "$rc" = 2
check "unknown stage: named" contains "$T/unknown/gpu_check.log" "unknown pass or stage 'cudaa'"
check "unknown stage: nothing ran" bash -c "! grep -q '===' '$T/unknown/gpu_check.log'"

# The default is the quick pass, with its budget: stages not in the fake
# build are "not built" (unmeasured), not failures.
run quick --
rc=$?
L=$T/quick/gpu_check.log
check "quick: default pass, exit 0" test "$rc" = 0
check "quick: its stages" contains "$L" "gpu_check: quick: env cuda agree_deit agree_dit graph$"
check "quick: its budget" contains "$L" "budget 330s"
check "quick: env PASS" contains "$L" "^env  *PASS"
check "quick: cuda PASS" contains "$L" "^cuda  *PASS"
check "quick: one CPU reference for both precisions" contains "$L" "^agree_dit  *not built .*no .*check_dit_device"
check "quick: one-line summary" contains "$L" \
  "^gpu_check quick: PASS: 2 ran, 2 passed, 0 failed; 3 unmeasured: agree_deit (not built) agree_dit (not built) graph (not built)$"

# Every limit 3 s (the test hook), a generous budget: pass, not built, a
# failure with its exit code, a timeout at the limit.
run stages VT_GPU_STAGE_LIMIT_S=3 VT_GPU_BUDGET_S=100 -- cuda agree_deit_fp32 kernels nccl step_dit
rc=$?
L=$T/stages/gpu_check.log
check "stages: exit 1 on a failure" test "$rc" = 1
check "stages: GPU named" contains "$L" "GPU: NVIDIA H200"
check "stages: cuda PASS" contains "$L" "^cuda  *PASS"
check "stages: agreement not built" contains "$L" "^agree_deit_fp32  *not built"
check "stages: kernels FAIL with its exit code" contains "$L" "^kernels  *FAIL .*exit 1"
check "stages: figure in the log" contains "$L" "layernorm fwd 2000 GB/s"
check "stages: nccl TIMEOUT at its limit" contains "$L" "^nccl  *TIMEOUT .*limit 3s"
check "stages: step benchmark without a GPU mode not built" contains "$L" "^step_dit  *not built"
check "stages: summary table" contains "$L" "=== summary: cuda agree_deit_fp32 kernels nccl step_dit"
check "stages: verdict line" contains "$L" "^gpu_check .*: FAIL: 3 ran, 1 passed, 2 failed; 2 unmeasured"

# A budget below a stage's limit: the stage is never started (no cut-short
# limit, no TIMEOUT), says what it needed, and the run does not fail.
run budget VT_GPU_STAGE_LIMIT_S=3 VT_GPU_BUDGET_S=7 -- nccl kernels
rc=$?
L=$T/budget/gpu_check.log
check "budget: exit 0 when only skipped" test "$rc" = 0
check "budget: nccl SKIP, not started" contains "$L" "^nccl  *SKIP .*budget: needs 3s, [0-9]*s left"
check "budget: kernels SKIP too" contains "$L" "^kernels  *SKIP .*budget"
check "budget: nothing started" bash -c "! grep -q '^=== nccl\|^=== kernels' '$L'"
check "budget: unmeasured named" contains "$L" "2 unmeasured: nccl (budget) kernels (budget)$"
# Default limits: cuda (120 s) does not fit a 100 s budget, nccl (25 s) does.
run budget2 VT_GPU_BUDGET_S=100 -- cuda env
check "budget: a long stage skipped, a short one runs" bash -c \
  "grep -q '^cuda  *SKIP .*needs 120s' '$T/budget2/gpu_check.log' && grep -q '^env  *PASS' '$T/budget2/gpu_check.log'"

# The sanitize pass: memcheck refused by the environment (SKIP), racecheck
# reporting a hazard (FAIL).
run sanitize -- sanitize
rc=$?
L=$T/sanitize/gpu_check.log
check "sanitize: budget" contains "$L" "budget 320s"
check "sanitize: refused device is SKIP environment" contains "$L" "^memcheck  *SKIP .*environment: Error: Device not supported"
check "sanitize: hazard is FAIL" contains "$L" "^racecheck  *FAIL .*exit 3"
check "sanitize: exit 1 (racecheck)" test "$rc" = 1

# The generate pass: its stages and budget; without its programs they are
# "not built" (unmeasured), not failures.
run generate -- generate
rc=$?
L=$T/generate/gpu_check.log
check "generate: exit 0" test "$rc" = 0
check "generate: its stages" contains "$L" "gpu_check: generate: vae vae_ref fid$"
check "generate: its budget" contains "$L" "budget 260s"
check "generate: vae not built" contains "$L" "^vae  *not built .*check_vae_device"
check "generate: vae_ref not built" contains "$L" "^vae_ref  *not built .*check_vae_device"
# With the program but no diffusers for python3: vae_ref is SKIP (environment).
printf '#!/bin/sh\necho "{\\"verdict\\": \\"agree\\"}"\n' >"$W/build-gpu/bench/check_vae_device"
chmod +x "$W/build-gpu/bench/check_vae_device"
mkdir -p "$T/nodiff"
printf '#!/bin/sh\nexit 1\n' >"$T/nodiff/python3"
chmod +x "$T/nodiff/python3"
run generate2 "PATH=$T/nodiff:$T/bin:$BASEPATH" -- vae vae_ref
L=$T/generate2/gpu_check.log
check "generate: vae PASS" contains "$L" "^vae  *PASS"
check "generate: no diffusers is SKIP environment" contains "$L" "^vae_ref  *SKIP .*environment: python3 cannot import diffusers"
rm "$W/build-gpu/bench/check_vae_device"

# The input pass: without the bundle's packed split it is "not built"; with
# it, the program gets the split and every core as loader threads.
run input -- input
rc=$?
L=$T/input/gpu_check.log
check "input: exit 0" test "$rc" = 0
check "input: its budget" contains "$L" "budget 200s"
check "input: no data is not built" contains "$L" "^input  *not built .*data/input-max512/manifest.json"
mkdir -p "$W/data/input-max512"
touch "$W/data/input-max512/manifest.json"
printf '#!/bin/sh
echo "$@"
' >"$W/build-gpu/bench/bench_input"
chmod +x "$W/build-gpu/bench/bench_input"
run input2 -- input
L=$T/input2/gpu_check.log
check "input: PASS" contains "$L" "^input  *PASS"
check "input: split and workers" contains "$L" "^data/input-max512 --workers $(nproc) --batch 256"
rm -r "$W/build-gpu/bench/bench_input" "$W/data"

# A bundle that needs a newer C library than this machine's is refused.
echo "glibc: 99.1" >"$W/MANIFEST"
run glibc -- cuda
rc=$?
check "newer glibc needed: exit 2" test "$rc" = 2
check "newer glibc needed: says so" contains "$T/glibc/gpu_check.log" "need glibc >= 99.1, this machine has"
rm "$W/MANIFEST"

# A test binary that skipped its tests (CUDA saw no GPU) fails the stage.
printf '#!/bin/sh\necho "[  SKIPPED ] 3 tests, listed below:"\n' >"$W/build-gpu/tests/test_cuda"
run skipped -- cuda
rc=$?
check "skipped tests: exit 1" test "$rc" = 1
check "skipped tests: FAIL named" contains "$T/skipped/gpu_check.log" "^cuda  *FAIL .*tests skipped"

echo "$fails failure(s)"
[ "$fails" = 0 ]
