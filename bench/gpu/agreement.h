// What the CPU-vs-GPU agreement programs (check_train_device: DeiT-S,
// check_dit_device: DiT-L/4; run by scripts/gpu_check.sh) share: their
// command line, the per-step loss comparison and the verdict.
//
// Command line: NAME [steps=5] [batch=DEFAULT] [fp32|bf16 (default: both)].
// Verdict: the largest relative loss difference over the steps, against
// 1e-4 (fp32: the GPU computes what the CPU computes, to rounding) or 2e-2
// (bf16 GEMMs and activations), and the dtype the attention kernels were
// handed: a bf16 run must call attention with BF16 q/k/v only (the bf16
// activation path, cuDNN's SDPA when built), an fp32 run with F32 only.
// Parameter differences are printed, not judged: for a
// parameter whose gradient is near zero, AdamW's m/(sqrt(v)+eps) amplifies a
// rounding difference up to a whole step of size lr, so after a few steps the
// largest parameter difference can be as large as the largest update even
// when every loss agrees; the programs print the CPU run's largest update
// beside it for scale. Exit status: 0 agreement, 1 a loss beyond tolerance,
// 2 bad usage or no GPU, 3 an error.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "kernels/attention.h"

namespace vt {
namespace agreement {

struct Args {
  int steps = 5;
  int64_t batch = 0;
  std::vector<std::string> precisions;  // "fp32" and/or "bf16"
};

// Parses argv; returns 0 to go on, else the exit status (2) after a message.
inline int parse(int argc, char** argv, const char* name, int64_t default_batch, Args& a) {
  a.steps = argc > 1 ? std::atoi(argv[1]) : 5;
  a.batch = argc > 2 ? std::atoll(argv[2]) : default_batch;
  const std::string which = argc > 3 ? argv[3] : "both";
  if (a.steps < 1 || a.batch < 1 || argc > 4 || (which != "fp32" && which != "bf16" && which != "both")) {
    std::fprintf(stderr, "usage: %s [steps>=1, default 5] [batch>=1, default %lld] [fp32|bf16 (default: both)]\n",
                 name, static_cast<long long>(default_batch));
    return 2;
  }
  if (which == "both") a.precisions = {"fp32", "bf16"};
  else a.precisions = {which};
  if (!cuda_available()) {
    std::fprintf(stderr, "%s: no CUDA device is visible\n", name);
    return 2;
  }
  return 0;
}

inline double tolerance(const std::string& precision) { return precision == "bf16" ? 2e-2 : 1e-4; }

// Prints each step's losses; returns the largest relative difference
// (infinite when a GPU loss is not finite).
inline double compare_losses(const std::string& precision, const std::vector<double>& cpu,
                             const std::vector<double>& gpu) {
  double worst = 0;
  for (size_t s = 0; s < cpu.size(); ++s) {
    const double rel = std::fabs(gpu[s] - cpu[s]) / std::max(std::fabs(cpu[s]), 1e-30);
    worst = std::isfinite(rel) ? std::max(worst, rel) : INFINITY;
    std::printf("  %s step %zu: loss cpu %.9f cuda %.9f rel diff %.3g\n", precision.c_str(), s + 1, cpu[s], gpu[s],
                rel);
  }
  return worst;
}

// max_i |a_i - b_i| (infinite when any difference is NaN).
inline double max_abs_diff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    m = std::isnan(d) ? INFINITY : std::max(m, d);
  }
  return m;
}

// What a run on the GPU measured besides its losses: the attention calls it
// made by io dtype, the backbone's saved activations (bytes, after the last
// step) and the caching allocator's peak over the run.
struct DeviceFigures {
  AttentionCalls calls;
  int64_t saved_bytes = 0;
  size_t peak_bytes = 0;
};

// Starts measuring (resets the allocator's peak): call before the run.
inline AttentionCalls begin_figures() {
  cuda_reset_peak_bytes();
  return attention_calls();
}
inline DeviceFigures end_figures(const AttentionCalls& begin, int64_t saved_bytes) {
  const AttentionCalls now = attention_calls();
  DeviceFigures f;
  f.calls = {now.forward_f32 - begin.forward_f32, now.forward_bf16 - begin.forward_bf16,
             now.backward_f32 - begin.backward_f32, now.backward_bf16 - begin.backward_bf16,
             now.forward_cudnn - begin.forward_cudnn};
  f.saved_bytes = saved_bytes;
  f.peak_bytes = cuda_peak_bytes_in_use();
  return f;
}

// Prints the figures; true when attention saw only the precision's dtype.
inline bool attention_verdict(const std::string& precision, const DeviceFigures& f) {
  const AttentionCalls& c = f.calls;
  const bool bf16 = precision == "bf16";
  const bool ok = bf16 ? (c.forward_f32 == 0 && c.backward_f32 == 0 && c.forward_bf16 > 0 && c.backward_bf16 > 0)
                       : (c.forward_bf16 == 0 && c.backward_bf16 == 0 && c.forward_f32 > 0);
  std::printf("%s: attention calls fwd/bwd bf16 %lld/%lld, fp32 %lld/%lld, cuDNN SDPA fwd %lld: %s; "
              "saved activations %.3f GiB, peak GPU memory %.2f GiB\n",
              precision.c_str(), static_cast<long long>(c.forward_bf16), static_cast<long long>(c.backward_bf16),
              static_cast<long long>(c.forward_f32), static_cast<long long>(c.backward_f32),
              static_cast<long long>(c.forward_cudnn), ok ? "PASS" : "FAIL",
              static_cast<double>(f.saved_bytes) / (1 << 30), static_cast<double>(f.peak_bytes) / (1 << 30));
  return ok;
}

// Prints the precision's verdict line; true when within tolerance.
inline bool verdict(const std::string& precision, double worst_loss) {
  const bool ok = worst_loss <= tolerance(precision);
  std::printf("%s: max relative loss difference %.3g (tolerance %.0e): %s\n", precision.c_str(), worst_loss,
              tolerance(precision), ok ? "PASS" : "FAIL");
  return ok;
}

}  // namespace agreement
}  // namespace vt
