// The optimizer state of one model, built from its ParamStore: AdamW moments
// (torch.optim.AdamW: exp_avg, exp_avg_sq, the step count for bias
// correction), the weight-decay mask (DeiT/timm param groups: no decay where
// ParamInfo::weight_decay is false) and, optionally, EMA weights (timm
// ModelEmaV2 / DiT update_ema). Shared by vtrain, dittrain and the benches,
// so that the GPU path and data-parallel training change one type.
//
// Tensors are flat F32 [params.numel()] on the store's device, aligned with
// ParamStore::weights()/grads(). Checkpoint views follow PyTorch names:
// optimizer.safetensors holds "exp_avg.<param>" and "exp_avg_sq.<param>",
// ema.safetensors the EMA under the parameter names (core/checkpoint_dir.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "backbone/param_store.h"
#include "kernels/optim.h"

namespace vt {

class OptimizerState {
 public:
  // Zero moments, step 0, the decay mask of `params`, and (with_ema) the EMA
  // as a copy of the current weights. `params` must be finalized and outlive
  // this object.
  OptimizerState(const ParamStore& params, bool with_ema);

  // One AdamW update of params' weights from its grads (hp.lr etc. as
  // given); increments steps() first, as torch does (bias correction t >= 1).
  void adamw_step(const AdamWParams& hp);
  // ema = decay * ema + (1 - decay) * weights. Throws std::logic_error
  // without an EMA.
  void update_ema(float decay);

  int64_t steps() const { return steps_; }  // AdamW updates taken
  void set_steps(int64_t s) { steps_ = s; }
  bool has_ema() const { return ema_.defined(); }
  const Tensor& ema() const { return ema_; }
  const Tensor& exp_avg() const { return exp_avg_; }
  const Tensor& exp_avg_sq() const { return exp_avg_sq_; }
  const Tensor& decay_mask() const { return decay_mask_; }
  // Starts the EMA from the current weights (EMA switched on at a resume).
  void reset_ema_to_weights();

  // Named views (no copy) for writing a checkpoint.
  std::map<std::string, Tensor> optimizer_dict() const;
  std::map<std::string, Tensor> ema_dict() const;  // empty without an EMA

  // Copies a checkpoint's tensors back. Every parameter's tensor must be
  // present, F32 and of the parameter's shape; otherwise std::runtime_error
  // naming `file` and the tensor, before anything is copied.
  void load_optimizer(const std::map<std::string, Tensor>& dict, const std::string& file);
  void load_ema(const std::map<std::string, Tensor>& dict, const std::string& file);

 private:
  const ParamStore* params_;
  Tensor exp_avg_, exp_avg_sq_, decay_mask_, ema_;
  int64_t steps_ = 0;
};

}  // namespace vt
