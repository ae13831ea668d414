// The device side of one optimizer step, shared by the CPU twin
// (kernels/cpu/optim.cpp) and the CUDA twin (kernels/cuda/optim.cu) of
// kernels/optim.h's update_prepare / fused_update, so both evaluate the same
// expressions in the same order.
//
// A GPU training step keeps its decision on the device (as torch's
// GradScaler keeps found_inf there): update_prepare reads the step's loss and
// the gradients' sum of squares, runs the non-finite policy
// (train/nonfinite.h: skip, count consecutive skips, stop once more than
// max_nonfinite in a row; once stopped nothing is applied again), forms the
// clip factor and AdamW's bias corrections for the device's own update count
// t, and writes one record row for the host. fused_update then applies, per
// element, clip x grad, AdamW, the bf16 weight copy and the EMA, or nothing
// when the step is skipped.
#pragma once
#include <math.h>

#include <cstdint>

// Not core/philox_block.h for the macro: its unqualified log() would meet
// vt::log() (core/log.h) in the trainers that include this through
// kernels/optim.h. The same definition, so either may come first.
#ifndef VT_HOST_DEVICE
#if defined(__CUDACC__)
#define VT_HOST_DEVICE __host__ __device__
#else
#define VT_HOST_DEVICE
#endif
#endif

namespace vt {

// The persistent state, in device memory (an I64 tensor of
// kUpdateStateWords elements holding this struct's bytes).
struct UpdateState {
  int64_t t;            // AdamW updates applied so far (the bias-correction step)
  int64_t consecutive;  // non-finite steps in a row
  int64_t stopped;      // 1 once the policy said stop: no update after that step
  int64_t skip;         // this step: 1 = no update (fused_update does nothing)
  // This step's per-element constants (kernels/cpu/optim.cpp's adamw):
  float clip_scale;  // gradient factor, 1 when not clipping
  float step_size, inv_sqrt_bc2, decay_factor;
  float b1, b2, eps, one_m_b1, one_m_b2;
  float pad;
};
constexpr int64_t kUpdateStateWords = static_cast<int64_t>(sizeof(UpdateState) / sizeof(int64_t));
static_assert(sizeof(UpdateState) % sizeof(int64_t) == 0, "UpdateState must fill whole I64 words");

// The step's record for the host (doubles; kernels/optim.h update_prepare):
// [status, grad_norm, scalar_0 (the loss), scalar_1, ...].
enum UpdateStatus : int {
  kUpdateApplied = 0,  // finite: clipped, AdamW, EMA applied
  kUpdateSkipped = 1,  // non-finite, skipped (at most max_nonfinite in a row)
  kUpdateStop = 2,     // non-finite, the one too many: the policy stops here
  kUpdateStopped = 3,  // a step after a stop: not applied
};
constexpr int kUpdateRecordHead = 2;

struct UpdateHyper {  // double so 1 - beta and lr * wd are formed before rounding (kernels/optim.h)
  double lr, beta1, beta2, eps, weight_decay;
  double max_norm;        // <= 0: no clipping
  int64_t max_nonfinite;  // train.max_nonfinite
};

// One thread runs this once per step. sumsq is the gradients' sum of
// squares (double); scalars[0] the loss.
VT_HOST_DEVICE inline void update_prepare_math(UpdateState& s, double sumsq, const float* scalars, int n_scalars,
                                               double* record, const UpdateHyper& h) {
  const double norm = ::sqrt(sumsq);
  const double loss = static_cast<double>(scalars[0]);
  record[1] = norm;
  for (int i = 0; i < n_scalars; ++i) record[kUpdateRecordHead + i] = static_cast<double>(scalars[i]);
  const bool finite = isfinite(loss) && isfinite(norm);
  int status = kUpdateApplied;
  if (s.stopped) {
    status = kUpdateStopped;
  } else if (finite) {
    s.consecutive = 0;
  } else {
    ++s.consecutive;
    status = s.consecutive > h.max_nonfinite ? kUpdateStop : kUpdateSkipped;
    if (status == kUpdateStop) s.stopped = 1;
  }
  record[0] = static_cast<double>(status);
  s.skip = status != kUpdateApplied;
  if (s.skip) return;
  // clip_grad_norm_: max_norm / (norm + 1e-6), applied when < 1.
  s.clip_scale = 1.0f;
  if (h.max_norm > 0.0) {
    const double coef = h.max_norm / (norm + 1e-6);
    if (coef < 1.0) s.clip_scale = static_cast<float>(coef);
  }
  ++s.t;
  const double t = static_cast<double>(s.t);
  const double bias_c1 = 1.0 - ::pow(h.beta1, t), bias_c2 = 1.0 - ::pow(h.beta2, t);
  s.step_size = static_cast<float>(h.lr / bias_c1);
  s.inv_sqrt_bc2 = static_cast<float>(1.0 / ::sqrt(bias_c2));
  s.decay_factor = static_cast<float>(1.0 - h.lr * h.weight_decay);
  s.b1 = static_cast<float>(h.beta1);
  s.b2 = static_cast<float>(h.beta2);
  s.eps = static_cast<float>(h.eps);
  s.one_m_b1 = static_cast<float>(1.0 - h.beta1);
  s.one_m_b2 = static_cast<float>(1.0 - h.beta2);
}

// Element i of fused_update: the separate path's clip (g * clip_scale, or g
// untouched at 1), AdamW, then EMA on the new weight; returns the weight.
// The gradient buffer itself is left as it was.
VT_HOST_DEVICE inline float fused_update_element(const UpdateState& s, float& p, float g, float& m, float& v,
                                                 bool decay) {
  const float gi = s.clip_scale == 1.0f ? g : g * s.clip_scale;
  float pi = p;
  if (decay) pi *= s.decay_factor;
  const float mi = s.b1 * m + s.one_m_b1 * gi;
  const float vi = s.b2 * v + s.one_m_b2 * gi * gi;
  m = mi;
  v = vi;
  pi = pi - s.step_size * mi / (::sqrtf(vi) * s.inv_sqrt_bc2 + s.eps);
  p = pi;
  return pi;
}

}  // namespace vt
