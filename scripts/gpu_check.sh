#!/usr/bin/env bash
# One prepared command for a machine with one NVIDIA GPU (written for an
# H200 with the CUDA toolkit, PyTorch and timm installed, none of the Debian
# libraries this project links, and no network). It runs from a build made
# elsewhere and carried in (scripts/bundle_gpu_build.sh packs it; the
# bundle's lib/ holds the non-CUDA libraries) and ends in under 10 minutes:
#
#   env       GPU, driver, where each CUDA library was found
#   cuda      the CUDA tests: every CUDA kernel against its CPU twin
#   memcheck  compute-sanitizer memcheck on the kernel tests (a subset)
#   racecheck compute-sanitizer racecheck on the shared-memory kernels
#   agree_*   CPU-vs-GPU training agreement at real size: DeiT-S batch 8,
#             5 steps, fp32 and bf16; DiT-L/4 batch 4, 5 steps, fp32 and bf16;
#             bf16 fails unless every attention call got bf16 q/k/v (the bf16
#             activation path); prints saved-activation and peak GiB per run
#   graph     the training step replayed as a CUDA Graph (train.cuda_graph:
#             auto) vs eager steps: agreement (1e-6) and steps/s of both, a
#             small launch-bound DeiT (deit_tiny at 64 px, batch 32, 50 steps)
#   kernels   GB/s of LayerNorm and the SiameseNorm kernels vs a D2D copy
#   epilogue  MLP forward+backward at DeiT-S shapes with the cuBLASLt epilogues
#             vs the separate passes (bench_mlp_epilogue), as a speedup
#   attention forward+backward time of the [B,H,T,T] path, the own flash kernel and cuDNN's
#             fused SDPA at DeiT-S and DiT-L/4 shapes (bench_attention), as ratios
#   nccl      NCCL all-reduce bandwidth, a world of 1; a step with the all-reduce after the
#             backward pass vs in buckets during it (time, and the same gradients)
#   fid       the FID Inception (random full-size weights) on the GPU vs the
#             CPU: feature agreement (< 1e-4 relative) and images/s of both
#   step_*    training step vs timm / DiT with torch.compile, bf16, same GPU:
#             vtrain's step (bench_train_step / bench_dit_step GPU mode, Pre-Norm
#             and SiameseNorm) then PyTorch's, img/s, MFU, peak memory, ratios
#             against the targets (tools/bench_timm_step.py, bench_dit_step.py)
#   ckpt_*    activation checkpointing, none vs blocks: DeiT-S and DiT-L/4
#             backbones at batch 256, bf16 (bench_backbone ... ckpt): step time,
#             saved-activation and peak bytes, their ratios, gradient agreement
#
# A stage whose program is not in the build says "not built" (it is not a
# failure); a stage that fails, crashes or runs past its time limit is.
# Every stage has a time limit and the whole run a budget; a stage that
# would start with too little budget left is skipped and says so.
# Everything, every figure included, goes to one log: $OUT/gpu_check.log
# when OUT is set, else runs/gpu_check.log; a summary table ends it.
#
#   usage: scripts/gpu_check.sh [STAGE ...]      (default: all, in the order above)
#   VT_GPU_BUILD     the build folder (default: build-gpu next to scripts/)
#   VT_GPU_BUDGET_S  the whole run's budget in seconds (default 570)
#   CUDA_HOME        searched first for the CUDA libraries (then CUDA_PATH,
#                    /usr/local/cuda*, the pip nvidia-* wheels and torch/lib
#                    of python3's site-packages, the system folders)
# Exit: 0 every stage passed or was not built, 1 a stage failed,
#       2 no GPU visible or the build cannot run here (nothing was run).
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
# Stages: time limits, the log, the summary.

VT_RESULTS=()

vt_log() { printf '%s\n' "$*" | tee -a "$VT_LOG"; }

# Records one summary row: stage, result, seconds, note.
vt_record() { VT_RESULTS+=("$1|$2|$3|$4"); vt_log "gpu_check: $1: $2${4:+ ($4)} [${3}s]"; }

# vt_stage NAME LIMIT_S NOTE CMD...: runs CMD with its output in the log
# and on the terminal, under min(LIMIT_S, budget left - 10 s).
vt_stage() {
  local name=$1 cap=$2 note=$3 left t t0 rc secs
  shift 3
  left=$((VT_DEADLINE - $(date +%s) - 10))
  t=$((cap < left ? cap : left))
  if [ "$t" -lt 15 ]; then vt_record "$name" SKIP 0 "budget spent"; return 0; fi
  vt_log ""
  vt_log "=== $name (limit ${t}s): $*"
  t0=$(date +%s.%N)
  timeout -k 10 "$t" "$@" 2>&1 | tee "$VT_TMP/stage.out" | tee -a "$VT_LOG"
  rc=${PIPESTATUS[0]}
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
  # A GoogleTest binary that skipped tests, or a benchmark that saw no
  # device, found no usable GPU: on this machine a failure, not a pass.
  if [ "$rc" = 0 ] && grep -q -E '^\[  SKIPPED \]|no CUDA device' "$VT_TMP/stage.out"; then
    vt_record "$name" FAIL "$secs" "tests skipped: CUDA found no usable GPU; $note"; VT_STATUS=1
  elif [ "$rc" = 0 ]; then vt_record "$name" PASS "$secs" "$note"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then vt_record "$name" TIMEOUT "$secs" "limit ${t}s; $note"; VT_STATUS=1
  else vt_record "$name" FAIL "$secs" "exit $rc; $note"; VT_STATUS=1; fi
}

# The first of the given paths that is an executable file, else nothing.
vt_prog() {
  local p
  for p in "$@"; do [ -x "$p" ] && [ -f "$p" ] && { echo "$p"; return 0; }; done
  return 1
}

# Runs a program's stage when it is built, else records "not built".
vt_stage_prog() {  # NAME LIMIT NOTE "CANDIDATE PATHS" ARGS...
  local name=$1 cap=$2 note=$3 cands=$4 p
  shift 4
  # shellcheck disable=SC2086  # the candidates are a word list
  if p=$(vt_prog $cands); then vt_stage "$name" "$cap" "$note" "$p" "$@"
  else vt_record "$name" "not built" 0 "no ${cands%% *}"; fi
}

vt_summary() {
  local row
  vt_log ""
  vt_log "=== summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(($(date +%s) - VT_START)) s of ${VT_BUDGET} s)"
  vt_log "$(printf '%-18s %-10s %8s  %s' stage result seconds note)"
  for row in "${VT_RESULTS[@]}"; do
    IFS='|' read -r a b c d <<<"$row"
    vt_log "$(printf '%-18s %-10s %8s  %s' "$a" "$b" "$c" "$d")"
  done
}

# ---------------------------------------------------------------------------

# The kernel tests compute-sanitizer runs: everything but the cuBLAS GEMMs
# (library code, slow under the sanitizer) and the host-side plumbing.
VT_MEMCHECK_FILTER='CudaMatmulLt.*:CudaLayerNorm.*:CudaSiamese.*:CudaAttention.*:CudaCrossEntropy.*:CudaDropPath.*:CudaElementwise.*:CudaActivation.*:CudaEmbedding.*:CudaPatch.*:CudaModulate.*:CudaOptim*.*:CudaMixup.*:CudaImagePrep.*:CudaStream.*'
# racecheck: the kernels that share data through shared memory (row
# reductions, the attention softmax, the column-sum kernels).
VT_RACECHECK_FILTER='CudaLayerNorm.*:CudaSiamese.*:CudaAttention.*:CudaCrossEntropy.*:CudaElementwise.*'

vt_gpu_check_main() {
  local here stages s
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  cd "$here" || exit 2
  BUILD=${VT_GPU_BUILD:-build-gpu}
  VT_BUDGET=${VT_GPU_BUDGET_S:-570}
  VT_START=$(date +%s)
  VT_DEADLINE=$((VT_START + VT_BUDGET))
  VT_STATUS=0
  if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && VT_LOG=$OUT/gpu_check.log
  else mkdir -p runs && VT_LOG=runs/gpu_check.log; fi
  : >"$VT_LOG"
  VT_TMP=$(mktemp -d)
  trap 'rm -rf "$VT_TMP"' EXIT
  # Correctness first, then the figures the performance table needs, then
  # the sanitizers and the remaining benchmarks: a stage that would start
  # past the budget is skipped (and can be run alone by name).
  stages=${*:-env cuda agree_deit_fp32 agree_deit_bf16 agree_dit_fp32 agree_dit_bf16 graph step_deit step_dit memcheck racecheck kernels epilogue ckpt_deit ckpt_dit attention fid nccl}
  vt_log "gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), build $BUILD, budget ${VT_BUDGET}s, log $VT_LOG"
  vt_log "gpu_check: stages: $stages"

  local smi smi_ok=0
  if ! command -v nvidia-smi >/dev/null 2>&1; then smi="not found"
  elif ! smi=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1); then :
  else smi_ok=1; fi
  if [ "${smi_ok:-0}" != 1 ] || [ -z "$smi" ]; then
    vt_log "gpu_check: no NVIDIA GPU visible (nvidia-smi: ${smi:-not found}); this check needs one. Nothing was run."
    exit 2
  fi
  case ${CUDA_VISIBLE_DEVICES-unset} in
    ""|-1|none|NoDevFiles)
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
  local -a progs=()
  for s in tests/test_cuda bench/bench_cuda_kernels bench/bench_allreduce bench/gpu/check_train_device \
           bench/gpu/check_dit_device bench/check_train_device bench/check_dit_device bench/bench_attention \
           bench/check_inception_device bench/bench_train_step bench/bench_dit_step bench/bench_backbone bench/bench_mlp_epilogue \
           bench/gpu/check_graph_step bench/check_graph_step; do
    [ -x "$BUILD/$s" ] && progs+=("$BUILD/$s")
  done
  if [ "${#progs[@]}" = 0 ]; then
    vt_log "gpu_check: no programs in $BUILD (make it with scripts/bundle_gpu_build.sh and carry it here). Nothing was run."
    exit 2
  fi
  # In this shell (not a $(...) subshell): it exports LD_LIBRARY_PATH.
  local libs_ok=0
  vt_add_cuda_libs "${progs[@]}" > >(tee -a "$VT_LOG") || libs_ok=1
  wait
  # This machine's C++ runtime older than the build's: the carried one.
  if ldd "${progs[@]}" 2>&1 | grep -q -E "version .(GLIBCXX|CXXABI|GCC)_[0-9.]*. not found"; then
    vt_log "gpu_check: this machine's libstdc++ is older than the build's; using the carried one ($BUILD/lib/cxx)"
    export LD_LIBRARY_PATH="$here/$BUILD/lib/cxx:$LD_LIBRARY_PATH"
  fi
  vt_log "gpu_check: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  if [ "$libs_ok" != 0 ]; then
    vt_log "gpu_check: the carried programs need libraries this machine lacks (above); nothing was run."
    vt_log "           A build made with another CUDA major version than this machine's needs rebuilding with a matching toolkit."
    exit 2
  fi

  local san
  san=$(vt_find_sanitizer) || san=""
  local T="$BUILD/tests/test_cuda"
  for s in $stages; do
    case $s in
      env)
        # shellcheck disable=SC2016  # expanded by the inner bash
        vt_stage env 30 "GPU and libraries" bash -c 'nvidia-smi; for p in "$@"; do echo "== $p"; ldd "$p" | grep -E "cuda|cublas|cudnn|nccl|dnnl|not found"; done' _ "${progs[@]}" ;;
      cuda)
        vt_stage_prog cuda 120 "CUDA kernels vs CPU twins" "$T" --gtest_brief=1 ;;
      memcheck|racecheck)
        if [ -z "$san" ]; then vt_record "$s" "not found" 0 "no compute-sanitizer in PATH or the CUDA homes"
        elif [ ! -x "$T" ]; then vt_record "$s" "not built" 0 "no $T"
        elif [ "$s" = memcheck ]; then
          vt_stage memcheck 90 "kernel tests" "$san" --tool memcheck --leak-check no --error-exitcode 3 "$T" --gtest_brief=1 --gtest_filter="$VT_MEMCHECK_FILTER"
        else
          vt_stage racecheck 90 "shared-memory kernels" "$san" --tool racecheck --racecheck-report hazard --error-exitcode 3 "$T" --gtest_brief=1 --gtest_filter="$VT_RACECHECK_FILTER"
        fi ;;
      agree_deit_fp32|agree_deit_bf16)
        vt_stage_prog "$s" 75 "DeiT-S batch 8, 5 steps" "$BUILD/bench/gpu/check_train_device $BUILD/bench/check_train_device" 5 8 "${s##*_}" ;;
      agree_dit_fp32|agree_dit_bf16)
        vt_stage_prog "$s" 75 "DiT-L/4 batch 4, 5 steps" "$BUILD/bench/gpu/check_dit_device $BUILD/bench/check_dit_device" 5 4 "${s##*_}" ;;
      graph)
        vt_stage_prog graph 60 "CUDA Graph vs eager step, deit_tiny 64 px batch 32" "$BUILD/bench/gpu/check_graph_step $BUILD/bench/check_graph_step" 50 32 fp32 ;;
      kernels)
        vt_stage_prog kernels 45 "GB/s vs D2D copy" "$BUILD/bench/bench_cuda_kernels" 20 ;;
      epilogue)
        vt_stage_prog epilogue 30 "MLP fwd+bwd, cuBLASLt epilogues vs separate passes" "$BUILD/bench/bench_mlp_epilogue" 20 ;;
      attention)
        vt_stage_prog attention 60 "probs vs flash vs cuDNN SDPA, fwd+bwd" "$BUILD/bench/bench_attention" 10 ;;
      nccl)
        vt_stage_prog nccl 45 "NCCL all-reduce, world 1; step one-shot vs bucketed" "$BUILD/bench/bench_allreduce" cifar 32 10 cuda ;;
      fid)
        vt_stage_prog fid 90 "Inception GPU vs CPU, images/s" "$BUILD/bench/check_inception_device" 500 50 4 ;;
      step_deit|step_dit)
        # Few steps: torch.compile's compilation (its first step) and both
        # schemes of vtrain's side share the stage's limit.
        local tool=tools/bench_timm_step.py args="--batch 256 --iters 10 --warmup 3"
        [ "$s" = step_dit ] && tool=tools/bench_dit_step.py args="--model DiT-L/4 --batch 256 --iters 10 --warmup 3"
        # Only a tool that can run on the GPU: the CPU comparison says nothing here.
        if [ ! -f "$tool" ] || ! grep -q -- '"--device"' "$tool"; then
          vt_record "$s" "not built" 0 "$tool has no --device (GPU step benchmark)"
        else
          # shellcheck disable=SC2086
          vt_stage "$s" 150 "vtrain pre/siamese vs PyTorch + torch.compile, bf16" env LD_LIBRARY_PATH="$VT_PY_LD" VT_BENCH_LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
            python3 "$tool" --device cuda --bf16 --compile $args
        fi ;;
      ckpt_deit|ckpt_dit)
        local m=deit_s; [ "$s" = ckpt_dit ] && m=dit_l4
        vt_stage_prog "$s" 90 "activation checkpointing none vs blocks, $m batch 256 bf16" "$BUILD/bench/bench_backbone" 256 2 ckpt "$m" cuda bf16 ;;
      *) vt_log "gpu_check: unknown stage $s"; VT_STATUS=1 ;;
    esac
  done
  vt_summary
  exit "$VT_STATUS"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then vt_gpu_check_main "$@"; fi
