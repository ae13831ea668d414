#!/usr/bin/env bash
# The prepared check for a machine with one NVIDIA GPU (written for an H200
# with the CUDA toolkit or PyTorch's nvidia-* wheels, PyTorch and timm, none
# of the Debian libraries this project links, and no network). It runs from
# a build made elsewhere and carried in (scripts/bundle_gpu_build.sh packs
# it; the bundle's lib/ holds the non-CUDA libraries). GPU time is short, so
# the work comes in passes, each one command that ends well inside ten
# minutes; run them in this order and read the log between them:
#
#   quick     (budget 330 s, ~3-4 min)  does the GPU compute what the CPU computes?
#     env         GPU, driver, where each CUDA library was found
#     cuda        the CUDA tests: every CUDA kernel against its CPU twin
#     agree_deit  CPU-vs-GPU training agreement, DeiT-S batch 8, 5 steps, fp32
#                 and bf16 against one fp32 CPU reference; bf16 fails unless
#                 every attention call got bf16 q/k/v (the bf16 activation
#                 path); prints saved-activation and peak GiB per run
#     agree_dit   the same for DiT-L/4 batch 4
#     graph       the training step replayed as a CUDA Graph vs eager steps:
#                 agreement (1e-6) and steps/s of both (deit_tiny, 64 px, batch 32)
#   perf      (budget 480 s, ~6-8 min)  the figures of the performance table
#     step_deit   DeiT-S training step (Pre-Norm and SiameseNorm) vs timm with
#                 torch.compile, bf16, batch 256: img/s, MFU, peak memory, ratios
#     step_dit    the same for DiT-L/4 vs DiT's model with torch.compile
#     epilogue    MLP fwd+bwd at DeiT-S shapes, cuBLASLt epilogues vs separate passes
#     attention   fwd+bwd of the [B,H,T,T] path, the own flash kernel and cuDNN's
#                 fused SDPA at DeiT-S and DiT-L/4 shapes
#     kernels     GB/s of LayerNorm, the SiameseNorm kernels and the column-sum
#                 second stage vs a D2D copy
#     nccl        NCCL all-reduce, a world of 1; a step with the all-reduce after
#                 the backward pass vs in buckets during it
#     ckpt_deit, ckpt_dit  activation checkpointing none vs blocks at batch 256,
#                 bf16: step time, saved-activation and peak bytes, agreement
#   generate  (budget 260 s)  the DiT path after training: VAE, Inception, FID-50K
#     vae         the DiT VAE (sd-vae structure) on the GPU vs the CPU: fp32
#                 agreement (1e-4), encode/decode images/s in fp32, tf32, bf16,
#                 DiT-L/4 sampling steps (batch 256, guidance) and the
#                 projected FID-50K minutes
#     vae_ref     the same VAE in diffusers on the same GPU and precisions vs
#                 vtrain's (tools/bench_vae_device.py): the images/s ratios;
#                 SKIP (environment) when python3 cannot import diffusers
#     fid         the FID Inception on the GPU vs the CPU: agreement, images/s
#                 with cuDNN, the hand-written conv and TF32, TF32's FID shift
#   input     (budget 200 s)  can the input pipeline feed DeiT-S?
#     input       bench_input on 128 imagenet-samples packed at max side 512
#                 (carried in the bundle): images/s of the whole input path
#                 (the cores' loader threads, upload, augmentation on the GPU)
#                 with the host's crop decoding and with nvJPEG
#                 (data.decode_on: device) and how far nvJPEG's crops are from
#                 the host's; the DeiT-S step (bf16, batch 256)
#                 on those batches vs on synthetic ones (target >= 0.95)
#   sanitize  (budget 320 s)  compute-sanitizer on the kernel tests
#     memcheck    memcheck on the kernel tests (a subset)
#     racecheck   racecheck on the shared-memory kernels
#
# A single stage runs alone by name (`gpu_check.sh fid`; also the single
# precisions agree_deit_fp32 ... agree_dit_bf16, and ckpt for both ckpt
# stages). Every stage has a time limit (vt_stage_limit) and starts only if
# its whole limit fits in what is left of the budget; otherwise it is SKIP
# "budget", never cut short. A stage the environment refuses (a sandbox
# where compute-sanitizer cannot attach: "Device not supported") is SKIP
# "environment"; a program that is not in the build is "not built". Neither
# is a failure. A stage fails when it exits non-zero, crashes, runs past its
# limit (TIMEOUT), or when a test binary skipped its tests (CUDA saw no GPU).
# Everything, every figure included, goes to one log: $OUT/gpu_check.log
# when OUT is set, else runs/gpu_check.log. It ends in a table of the
# stages and one line saying what ran, what passed and what is unmeasured.
#
#   usage: scripts/gpu_check.sh [quick|perf|generate|input|sanitize|STAGE ...]   (default: quick)
#   VT_GPU_BUILD     the build folder (default: build-gpu next to scripts/)
#   VT_GPU_BUDGET_S  the run's budget in seconds (default: the sum of the
#                    named passes' budgets, or of the named stages' limits;
#                    at most 570 unless set here)
#   CUDA_HOME        searched first for the CUDA libraries (then CUDA_PATH,
#                    /usr/local/cuda*, the pip nvidia-* wheels and torch/lib
#                    of python3's site-packages, the system folders)
# Exit: 0 no stage failed (passed, skipped or not built), 1 a stage failed
#       or timed out, 2 no GPU visible, the build cannot run here, or an
#       unknown pass or stage (nothing was run).
#
# The functions are usable on their own (`source scripts/gpu_check.sh`
# defines them and runs nothing), which the tests do
# (tests/scripts/gpu_check_test.sh).
set -uo pipefail

# ---------------------------------------------------------------------------
# Finding the CUDA libraries.

# The folders that may hold CUDA libraries, best first, one per line:
# CUDA_HOME / CUDA_PATH / CUDA_ROOT, /usr/local/cuda and /usr/local/cuda-X.Y
# (newest version first), each with lib64, lib and targets/*/lib; the pip
# wheels nvidia/*/lib (CUDA 12: nvidia/cublas/lib, nvidia/cudnn/lib, ...;
# CUDA 13: nvidia/cu13/lib for all but nvidia/nccl/lib) and torch/lib
# under every site-packages python3 knows; the system library folders.
# VT_LIB_ROOT (tests) prefixes the fixed system paths; VT_PY_SITE_DIRS
# (space-separated) replaces asking python3 for its site-packages.
vt_py_sites() {
  if [ -n "${VT_PY_SITE_DIRS+x}" ]; then echo "$VT_PY_SITE_DIRS"; return 0; fi
  python3 -c 'import site, sys
dirs = list(site.getsitepackages()) + [site.getusersitepackages()] + [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
print(" ".join(dict.fromkeys(dirs)))' 2>/dev/null || true
}

vt_cuda_lib_dirs() {
  local root=${VT_LIB_ROOT:-} d sub sites
  local -a homes=()
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" "${CUDA_ROOT:-}"; do [ -n "$d" ] && homes+=("$d"); done
  homes+=("$root/usr/local/cuda")
  # /usr/local/cuda-13.0 before cuda-12.8 before cuda-12.4.
  while IFS= read -r d; do homes+=("$d"); done < <(printf '%s\n' "$root"/usr/local/cuda-* | grep -v '\*$' | sort -V -r)
  for d in "${homes[@]}"; do
    for sub in lib64 lib targets/x86_64-linux/lib targets/sbsa-linux/lib; do
      [ -d "$d/$sub" ] && printf '%s\n' "$d/$sub"
    done
  done
  sites=$(vt_py_sites)
  for d in $sites; do
    for sub in "$d"/nvidia/*/lib "$d"/torch/lib; do [ -d "$sub" ] && printf '%s\n' "$sub"; done
  done
  for d in "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib64" "$root/usr/lib/wsl/lib"; do
    [ -d "$d" ] && printf '%s\n' "$d"
  done
  return 0
}

# The first folder of vt_cuda_lib_dirs holding the file SONAME (exactly).
vt_find_lib() {
  local d
  while IFS= read -r d; do
    if [ -e "$d/$1" ]; then printf '%s\n' "$d"; return 0; fi
  done < <(vt_cuda_lib_dirs)
  return 1
}

# The shared libraries the given programs need that the loader cannot find
# (ldd's "not found"), one soname per line, each once.
vt_missing_libs() {
  ldd "$@" 2>/dev/null | awk '/=> not found/{print $1}' | sort -u
}

# Adds to LD_LIBRARY_PATH the folder of every library the programs need and
# the loader does not find, until nothing more can be found (a library found
# may need more). Prints "found SONAME in DIR" per library; returns 1 and
# prints what is still missing, with the versions that do exist here (a
# build made with CUDA 13 needs libcublas.so.13: a machine with only CUDA 12
# libraries needs a build made with a CUDA 12 toolkit).
vt_add_cuda_libs() {
  local lib dir progress missing _
  for _ in 1 2 3; do
    progress=0
    missing=$(vt_missing_libs "$@")
    [ -z "$missing" ] && return 0
    for lib in $missing; do
      if dir=$(vt_find_lib "$lib"); then
        case ":${LD_LIBRARY_PATH:-}:" in *":$dir:"*) ;; *)
          export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
          echo "found $lib in $dir"
          progress=1 ;;
        esac
      fi
    done
    [ "$progress" = 0 ] && break
  done
  missing=$(vt_missing_libs "$@")
  [ -z "$missing" ] && return 0
  for lib in $missing; do
    local stem=${lib%%.so*} others
    others=$(vt_cuda_lib_dirs | while IFS= read -r dir; do ls "$dir/$stem".so* 2>/dev/null; done | sort -u | tr '\n' ' ')
    echo "missing $lib${others:+ (this machine has: $others)}"
  done
  return 1
}

# compute-sanitizer: on PATH, in the CUDA homes (bin/ or compute-sanitizer/),
# or from the pip wheel nvidia-cuda-sanitizer-api.
vt_find_sanitizer() {
  local d c
  if command -v compute-sanitizer >/dev/null 2>&1; then command -v compute-sanitizer; return 0; fi
  while IFS= read -r d; do
    d=${d%/targets/*}; d=${d%/lib*}
    for c in "$d/bin/compute-sanitizer" "$d/compute-sanitizer/compute-sanitizer"; do
      [ -x "$c" ] && { echo "$c"; return 0; }
    done
  done < <(vt_cuda_lib_dirs)
  for d in $(vt_py_sites); do
    for c in "$d"/nvidia/*/compute-sanitizer/compute-sanitizer "$d"/nvidia/*/bin/compute-sanitizer; do
      [ -x "$c" ] && { echo "$c"; return 0; }
    done
  done
  return 1
}

# ---------------------------------------------------------------------------
# Passes and stages: which stages, their time limits, the budget.

# The stages of a pass, in order (nothing for a name that is not a pass).
vt_pass_stages() {
  case $1 in
    quick) echo "env cuda agree_deit agree_dit graph" ;;
    perf) echo "step_deit step_dit epilogue attention kernels nccl ckpt_deit ckpt_dit" ;;
    generate) echo "vae vae_ref fid" ;;
    input) echo "input" ;;
    sanitize) echo "memcheck racecheck" ;;
    *) return 1 ;;
  esac
}

# A pass's budget in seconds: its stages' limits plus a little slack, so
# that a pass whose stages all run to their limits still ends in budget.
vt_pass_budget() {
  case $1 in
    quick) echo 330 ;;
    perf) echo 480 ;;
    generate) echo 260 ;;
    input) echo 200 ;;
    sanitize) echo 320 ;;
    *) return 1 ;;
  esac
}

# A stage's time limit in seconds (nothing, status 1, for an unknown stage).
# The limits are ceilings well above the expected times; a stage is never
# started with less than its limit left. VT_GPU_STAGE_LIMIT_S (tests only)
# gives every stage that limit instead.
vt_stage_limit() {
  if [ -n "${VT_GPU_STAGE_LIMIT_S:-}" ] && vt_stage_limit_table "$1" >/dev/null; then
    echo "$VT_GPU_STAGE_LIMIT_S"; return 0
  fi
  vt_stage_limit_table "$1"
}
vt_stage_limit_table() {
  case $1 in
    env) echo 20 ;;
    cuda) echo 120 ;;
    agree_deit) echo 60 ;;
    agree_dit) echo 90 ;;
    agree_deit_fp32 | agree_deit_bf16) echo 45 ;;
    agree_dit_fp32 | agree_dit_bf16) echo 70 ;;
    graph) echo 40 ;;
    step_deit | step_dit) echo 120 ;;
    epilogue | kernels | nccl) echo 25 ;;
    attention | ckpt_deit) echo 40 ;;
    ckpt_dit) echo 45 ;;
    fid | vae_ref) echo 60 ;;
    vae) echo 120 ;;
    input) echo 180 ;;
    memcheck | racecheck) echo 150 ;;
    *) return 1 ;;
  esac
}

# Expands pass names (and `ckpt`) into stages; prints the stage list, or
# returns 1 naming the first unknown word.
vt_expand_stages() {
  local w out=""
  for w in "$@"; do
    if vt_pass_stages "$w" >/dev/null; then out+=" $(vt_pass_stages "$w")"
    elif [ "$w" = ckpt ]; then out+=" ckpt_deit ckpt_dit"
    elif vt_stage_limit "$w" >/dev/null; then out+=" $w"
    else echo "$w"; return 1; fi
  done
  echo "${out# }"
}

# The default budget of a command line: the named passes' budgets plus the
# limits of stages named alone (+10 s), at most 570 s (one 10-minute command
# with margin).
vt_default_budget() {
  local w b=0 alone=0
  for w in "$@"; do
    if vt_pass_budget "$w" >/dev/null; then b=$((b + $(vt_pass_budget "$w")))
    elif [ "$w" = ckpt ]; then b=$((b + $(vt_stage_limit ckpt_deit) + $(vt_stage_limit ckpt_dit))); alone=1
    else b=$((b + $(vt_stage_limit "$w"))); alone=1; fi
  done
  [ "$alone" = 1 ] && b=$((b + 10))
  [ "$b" -gt 570 ] && b=570
  echo "$b"
}

# Lines by which a tool says the environment refuses it (not the code's
# failure): compute-sanitizer in a sandbox or container without the
# debugger interface.
VT_ENV_REFUSAL_RE='Device not supported|device is not supported|Unable to find injection library|not supported on this platform|debugger interface is not available|Could not attach to the target'

# ---------------------------------------------------------------------------
# Running stages, the log, the summary.

VT_RESULTS=()

vt_log() { printf '%s\n' "$*" | tee -a "$VT_LOG"; }

# Records one summary row: stage, result, seconds, note.
vt_record() { VT_RESULTS+=("$1|$2|$3|$4"); vt_log "gpu_check: $1: $2${4:+ ($4)} [${3}s]"; }

# vt_stage NAME NOTE CMD...: runs CMD under the stage's limit, its output in
# the log and on the terminal, if the whole limit fits in the budget left.
vt_stage() {
  local name=$1 note=$2 limit left t0 rc secs refusal
  shift 2
  limit=$(vt_stage_limit "$name") || limit=60
  left=$((VT_DEADLINE - $(date +%s)))
  if [ $((limit + 5)) -gt "$left" ]; then
    vt_record "$name" SKIP 0 "budget: needs ${limit}s, ${left}s left; run it alone: gpu_check.sh $name"
    return 0
  fi
  vt_log ""
  vt_log "=== $name (limit ${limit}s): $*"
  t0=$(date +%s.%N)
  timeout -k 5 "$limit" "$@" 2>&1 | tee "$VT_TMP/stage.out" | tee -a "$VT_LOG"
  rc=${PIPESTATUS[0]}
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
  refusal=$(grep -m1 -E "$VT_ENV_REFUSAL_RE" "$VT_TMP/stage.out")
  # A GoogleTest binary that skipped tests, or a benchmark that saw no
  # device, found no usable GPU: on this machine a failure, not a pass.
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] && [ -n "$refusal" ]; then
    vt_record "$name" SKIP "$secs" "environment: $(echo "$refusal" | sed 's/^[= ]*//' | cut -c1-100)"
  elif [ "$rc" = 0 ] && grep -q -E '^\[  SKIPPED \]|no CUDA device' "$VT_TMP/stage.out"; then
    vt_record "$name" FAIL "$secs" "tests skipped: CUDA found no usable GPU; $note"; VT_STATUS=1
  elif [ "$rc" = 0 ]; then vt_record "$name" PASS "$secs" "$note"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then vt_record "$name" TIMEOUT "$secs" "limit ${limit}s; $note"; VT_STATUS=1
  else vt_record "$name" FAIL "$secs" "exit $rc; $note"; VT_STATUS=1; fi
}

# The first of the given paths that is an executable file, else nothing.
vt_prog() {
  local p
  for p in "$@"; do [ -x "$p" ] && [ -f "$p" ] && { echo "$p"; return 0; }; done
  return 1
}

# Runs a program's stage when it is built, else records "not built".
vt_stage_prog() {  # NAME NOTE "CANDIDATE PATHS" ARGS...
  local name=$1 note=$2 cands=$3 p
  shift 3
  # shellcheck disable=SC2086  # the candidates are a word list
  if p=$(vt_prog $cands); then vt_stage "$name" "$note" "$p" "$@"
  else vt_record "$name" "not built" 0 "no ${cands%% *}"; fi
}

# The table, then one line: the verdict, what ran and passed, what was
# skipped or not built (so unmeasured) and why.
vt_summary() {
  local row a b c d ran=0 passed=0 failed=0 skipped=0 unmeasured="" verdict=PASS
  vt_log ""
  vt_log "=== summary: $VT_WHAT ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(($(date +%s) - VT_START)) s of ${VT_BUDGET} s)"
  vt_log "$(printf '%-18s %-10s %8s  %s' stage result seconds note)"
  for row in "${VT_RESULTS[@]}"; do
    IFS='|' read -r a b c d <<<"$row"
    vt_log "$(printf '%-18s %-10s %8s  %s' "$a" "$b" "$c" "$d")"
    case $b in
      PASS) ran=$((ran + 1)); passed=$((passed + 1)) ;;
      FAIL | TIMEOUT) ran=$((ran + 1)); failed=$((failed + 1)); verdict=FAIL ;;
      SKIP) skipped=$((skipped + 1)); unmeasured+=" $a (${d%%:*})" ;;
      *) skipped=$((skipped + 1)); unmeasured+=" $a ($b)" ;;
    esac
  done
  vt_log "gpu_check $VT_WHAT: $verdict: $ran ran, $passed passed, $failed failed; $skipped unmeasured${unmeasured:+:$unmeasured}"
}

# ---------------------------------------------------------------------------

# The kernel tests compute-sanitizer runs: everything but the cuBLAS GEMMs
# (library code, slow under the sanitizer) and the host-side plumbing.
VT_MEMCHECK_FILTER='CudaMatmulLt.*:CudaLayerNorm.*:CudaSiamese.*:CudaAttention.*:CudaCrossEntropy.*:CudaDropPath.*:CudaElementwise.*:CudaActivation.*:CudaEmbedding.*:CudaPatch.*:CudaModulate.*:CudaOptim*.*:CudaMixup.*:CudaImagePrep.*:CudaStream.*'
# racecheck: the kernels that share data through shared memory (row
# reductions, the attention softmax, the column-sum kernels).
VT_RACECHECK_FILTER='CudaLayerNorm.*:CudaSiamese.*:CudaAttention.*:CudaCrossEntropy.*:CudaElementwise.*:CudaMatmul.*'

# Runs one stage by name (the programs and arguments of each).
vt_run_stage() {
  local s=$1 T="$BUILD/tests/test_cuda" agree
  case $s in
    env)
      # shellcheck disable=SC2016  # expanded by the inner bash
      vt_stage env "GPU and libraries" bash -c 'nvidia-smi || exit 1; for p in "$@"; do echo "== $p"; ldd "$p" | grep -E "cuda|cublas|cudnn|nccl|dnnl|not found"; done; exit 0' _ "${VT_PROGS[@]}" ;;
    cuda)
      vt_stage_prog cuda "CUDA kernels vs CPU twins" "$T" --gtest_brief=1 ;;
    memcheck | racecheck)
      if [ -z "$VT_SANITIZER" ]; then vt_record "$s" "not found" 0 "no compute-sanitizer in PATH or the CUDA homes"
      elif [ ! -x "$T" ]; then vt_record "$s" "not built" 0 "no $T"
      elif [ "$s" = memcheck ]; then
        vt_stage memcheck "kernel tests" "$VT_SANITIZER" --tool memcheck --leak-check no --error-exitcode 3 "$T" --gtest_brief=1 --gtest_filter="$VT_MEMCHECK_FILTER"
      else
        vt_stage racecheck "shared-memory kernels" "$VT_SANITIZER" --tool racecheck --racecheck-report hazard --error-exitcode 3 "$T" --gtest_brief=1 --gtest_filter="$VT_RACECHECK_FILTER"
      fi ;;
    agree_deit | agree_deit_fp32 | agree_deit_bf16)
      agree=both; [ "$s" != agree_deit ] && agree=${s##*_}
      vt_stage_prog "$s" "DeiT-S batch 8, 5 steps, $agree vs one CPU run" "$BUILD/bench/gpu/check_train_device $BUILD/bench/check_train_device" 5 8 "$agree" ;;
    agree_dit | agree_dit_fp32 | agree_dit_bf16)
      agree=both; [ "$s" != agree_dit ] && agree=${s##*_}
      vt_stage_prog "$s" "DiT-L/4 batch 4, 5 steps, $agree vs one CPU run" "$BUILD/bench/gpu/check_dit_device $BUILD/bench/check_dit_device" 5 4 "$agree" ;;
    graph)
      vt_stage_prog graph "CUDA Graph vs eager step, deit_tiny 64 px batch 32" "$BUILD/bench/gpu/check_graph_step $BUILD/bench/check_graph_step" 50 32 fp32 ;;
    kernels)
      vt_stage_prog kernels "GB/s vs D2D copy" "$BUILD/bench/bench_cuda_kernels" 20 ;;
    epilogue)
      vt_stage_prog epilogue "MLP fwd+bwd, cuBLASLt epilogues vs separate passes" "$BUILD/bench/bench_mlp_epilogue" 20 ;;
    attention)
      vt_stage_prog attention "probs vs flash vs cuDNN SDPA, fwd+bwd" "$BUILD/bench/bench_attention" 10 ;;
    nccl)
      vt_stage_prog nccl "NCCL all-reduce, world 1; step one-shot vs bucketed" "$BUILD/bench/bench_allreduce" cifar 32 10 cuda ;;
    fid)
      vt_stage_prog fid "Inception GPU vs CPU, images/s" "$BUILD/bench/check_inception_device" 500 50 4 ;;
    vae)
      vt_stage_prog vae "VAE GPU vs CPU, images/s, FID-50K projection" "$BUILD/bench/check_vae_device" 16 256 1 256 2 ;;
    input)
      # The bundle's packed split (scripts/bundle_gpu_build.sh); every core a loader thread.
      local data=data/input-max512
      if [ ! -f "$data/manifest.json" ]; then vt_record input "not built" 0 "no $data/manifest.json (the bundle packs it)"
      else
        vt_stage_prog input "loader + nvJPEG + device augmentation feeding DeiT-S, real vs synthetic batches" \
          "$BUILD/bench/bench_input $BUILD/bench/gpu/bench_input" "$data" --workers "$(nproc)" --batch 256 \
          --steps 40
      fi ;;
    vae_ref)
      if [ ! -x "$BUILD/bench/check_vae_device" ]; then vt_record vae_ref "not built" 0 "no $BUILD/bench/check_vae_device"
      elif ! env LD_LIBRARY_PATH="$VT_PY_LD" python3 -c "import diffusers" >/dev/null 2>&1; then
        vt_record vae_ref SKIP 0 "environment: python3 cannot import diffusers (pip install diffusers)"
      else
        vt_stage vae_ref "VAE vtrain vs diffusers, same GPU, fp32, tf32, bf16" env LD_LIBRARY_PATH="$VT_PY_LD" \
          VT_BENCH_LD_LIBRARY_PATH="$LD_LIBRARY_PATH" python3 tools/bench_vae_device.py --bin "$BUILD/bench/check_vae_device"
      fi ;;
    step_deit | step_dit)
      # Few steps: torch.compile's compilation (its first step) and both
      # schemes of vtrain's side share the stage's limit.
      local tool=tools/bench_timm_step.py args="--batch 256 --iters 10 --warmup 3"
      [ "$s" = step_dit ] && tool=tools/bench_dit_step.py args="--model DiT-L/4 --batch 256 --iters 10 --warmup 3"
      # Only a tool that can run on the GPU: the CPU comparison says nothing here.
      if [ ! -f "$tool" ] || ! grep -q -- '"--device"' "$tool"; then
        vt_record "$s" "not built" 0 "$tool has no --device (GPU step benchmark)"
      else
        # shellcheck disable=SC2086
        vt_stage "$s" "vtrain pre/siamese vs PyTorch + torch.compile, bf16" env LD_LIBRARY_PATH="$VT_PY_LD" VT_BENCH_LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
          python3 "$tool" --device cuda --bf16 --compile $args
      fi ;;
    ckpt_deit | ckpt_dit)
      local m=deit_s; [ "$s" = ckpt_dit ] && m=dit_l4
      vt_stage_prog "$s" "activation checkpointing none vs blocks, $m batch 256 bf16" "$BUILD/bench/bench_backbone" 256 2 ckpt "$m" cuda bf16 ;;
  esac
}

vt_gpu_check_main() {
  local here stages s
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  cd "$here" || exit 2
  BUILD=${VT_GPU_BUILD:-build-gpu}
  [ $# -eq 0 ] && set -- quick
  VT_WHAT="$*"
  VT_START=$(date +%s)
  VT_STATUS=0
  if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && VT_LOG=$OUT/gpu_check.log
  else mkdir -p runs && VT_LOG=runs/gpu_check.log; fi
  : >"$VT_LOG"
  if ! stages=$(vt_expand_stages "$@"); then
    vt_log "gpu_check: unknown pass or stage '$stages' (passes: quick perf generate input sanitize; stages: $(vt_pass_stages quick) $(vt_pass_stages perf) $(vt_pass_stages generate) $(vt_pass_stages input) $(vt_pass_stages sanitize) agree_deit_fp32 agree_deit_bf16 agree_dit_fp32 agree_dit_bf16 ckpt). Nothing was run."
    exit 2
  fi
  VT_BUDGET=${VT_GPU_BUDGET_S:-$(vt_default_budget "$@")}
  VT_DEADLINE=$((VT_START + VT_BUDGET))
  VT_TMP=$(mktemp -d)
  trap 'rm -rf "$VT_TMP"' EXIT
  vt_log "gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), build $BUILD, budget ${VT_BUDGET}s, log $VT_LOG"
  vt_log "gpu_check: $VT_WHAT: $stages"

  local smi smi_ok=0
  if ! command -v nvidia-smi >/dev/null 2>&1; then smi="not found"
  elif ! smi=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1); then :
  else smi_ok=1; fi
  if [ "${smi_ok:-0}" != 1 ] || [ -z "$smi" ]; then
    vt_log "gpu_check: no NVIDIA GPU visible (nvidia-smi: ${smi:-not found}); this check needs one. Nothing was run."
    exit 2
  fi
  case ${CUDA_VISIBLE_DEVICES-unset} in
    "" | -1 | none | NoDevFiles)
      vt_log "gpu_check: CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES' hides every GPU from CUDA; unset it. Nothing was run."
      exit 2 ;;
  esac
  vt_log "gpu_check: GPU: $smi"

  # The machine's C library must be as new as the build needs (MANIFEST,
  # written by scripts/bundle_gpu_build.sh).
  local need have
  need=$(sed -n 's/^glibc: //p' MANIFEST 2>/dev/null)
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    vt_log "gpu_check: the carried programs need glibc >= $need, this machine has $have. Nothing was run."
    exit 2
  fi
  # Python (torch) keeps the machine's own library path.
  VT_PY_LD=${LD_LIBRARY_PATH:-}
  # The bundle's own libraries (oneDNN, ...) first, then the CUDA ones found.
  export LD_LIBRARY_PATH="$here/$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  VT_PROGS=()
  for s in tests/test_cuda bench/bench_cuda_kernels bench/bench_allreduce bench/gpu/check_train_device \
           bench/gpu/check_dit_device bench/check_train_device bench/check_dit_device bench/bench_attention \
           bench/check_inception_device bench/check_vae_device bench/bench_train_step bench/bench_dit_step bench/bench_backbone bench/bench_mlp_epilogue \
           bench/gpu/check_graph_step bench/check_graph_step; do
    [ -x "$BUILD/$s" ] && VT_PROGS+=("$BUILD/$s")
  done
  if [ "${#VT_PROGS[@]}" = 0 ]; then
    vt_log "gpu_check: no programs in $BUILD (make it with scripts/bundle_gpu_build.sh and carry it here). Nothing was run."
    exit 2
  fi
  # In this shell (not a $(...) subshell): it exports LD_LIBRARY_PATH.
  local libs_ok=0
  vt_add_cuda_libs "${VT_PROGS[@]}" > >(tee -a "$VT_LOG") || libs_ok=1
  wait
  # This machine's C++ runtime older than the build's: the carried one.
  if ldd "${VT_PROGS[@]}" 2>&1 | grep -q -E "version .(GLIBCXX|CXXABI|GCC)_[0-9.]*. not found"; then
    vt_log "gpu_check: this machine's libstdc++ is older than the build's; using the carried one ($BUILD/lib/cxx)"
    export LD_LIBRARY_PATH="$here/$BUILD/lib/cxx:$LD_LIBRARY_PATH"
  fi
  vt_log "gpu_check: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  if [ "$libs_ok" != 0 ]; then
    vt_log "gpu_check: the carried programs need libraries this machine lacks (above); nothing was run."
    vt_log "           A build made with another CUDA major version than this machine's needs rebuilding with a matching toolkit."
    exit 2
  fi

  VT_SANITIZER=$(vt_find_sanitizer) || VT_SANITIZER=""
  for s in $stages; do vt_run_stage "$s"; done
  vt_summary
  exit "$VT_STATUS"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then vt_gpu_check_main "$@"; fi
