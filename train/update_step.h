// The part of a training step both trainers share, after the model's
// forward/backward has filled params.grads() (Caffe's Solver::Step around a
// per-solver hook): the global gradient norm (clipped with train.clip_grad,
// as torch.nn.utils.clip_grad_norm_), the non-finite policy (a non-finite
// loss or norm is recorded in metrics.jsonl, then skipped or stopped on:
// train/nonfinite.h), and for a finite step AdamW and the EMA update.
//
// Data-parallel training reduces the gradients at the top of apply_update
// (before the norm) and the loss with them; GPU training runs the same calls
// on device buffers (OptimizerState lives on the store's device).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "backbone/optimizer_state.h"
#include "train/nonfinite.h"

namespace vt {

class RunDirectory;

struct UpdateOptions {
  std::optional<double> clip_grad;  // unset: no clipping
  AdamWParams adamw;                // lr is set per step
  std::optional<float> ema_decay;   // unset: no EMA update
};

struct UpdateResult {
  double grad_norm = 0;  // before clipping
  bool applied = false;  // false: a skipped non-finite step
};

// `step` is the 1-based index of this step, `where` context for messages
// ("epoch 3, batch 17"). Throws NonFiniteLoss when the policy stops.
UpdateResult apply_update(ParamStore& params, OptimizerState& opt, NonFiniteGuard& guard, RunDirectory& run,
                          int64_t step, double loss, double lr, const UpdateOptions& o, const std::string& where);

}  // namespace vt
