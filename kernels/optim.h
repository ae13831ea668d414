// Optimizer kernels over flat fp32 buffers (ParamStore keeps weights,
// gradients and moments each in one buffer):
//
// AdamW exactly as torch.optim.AdamW (amsgrad=False, maximize=False), for
// step t = 1, 2, ...:
//   p -= lr * wd * p                   (decoupled decay; only where decay is on)
//   m  = b1 m + (1 - b1) g
//   v  = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Decay is switched per element by a U8 mask (nonzero = decay; undefined =
// decay everywhere); decay_mask_from_segments builds one from ParamStore's
// (offset, length, flag) entries once, outside the training loop.
//
// Global gradient norm and clipping as torch.nn.utils.clip_grad_norm_
// (norm_type 2): total = ||g||_2 accumulated in double; when
// max_norm / (total + 1e-6) < 1 every gradient is multiplied by that factor.
//
// EMA of the weights (timm ModelEmaV2 / DiT's update_ema):
//   ema = decay * ema + (1 - decay) * p.
//
// CPU: OpenMP over chunks. CUDA (fp32 buffers): kernels/cuda/optim.h, the
// same fp32 update formula; grad_norm/clip_grad_norm sync the stream to
// return the norm, clip_grad_norm_on_device does not. Errors:
// std::invalid_argument naming the op and the tensor (dtype, contiguity,
// element count, device) or the bad hyperparameter (t < 1).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/optim_step.h"

namespace vt {

// Double so that 1 - beta and lr * wd are formed before rounding to fp32
// (0.999f alone would make 1 - beta2 off by 5e-5 relative).
struct AdamWParams {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // torch.optim.AdamW's default
};

// One AdamW step on param/grad/exp_avg/exp_avg_sq (all F32 with equal element
// counts, contiguous); step is t (>= 1) used for the bias corrections.
// decay_mask: U8 with the same element count, or undefined.
// param_bf16: BF16 with the same element count, or undefined; when given it
// receives the updated weights rounded to bf16 (nearest even), the copy the
// bf16 GEMMs read (on CUDA written by the update kernel itself).
void adamw_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWParams& hp, int64_t step, const Tensor& decay_mask = Tensor(),
                const Tensor& param_bf16 = Tensor());

struct DecaySegment {
  int64_t offset = 0;  // first element in the flat buffer
  int64_t length = 0;  // number of elements
  bool decay = true;
};
// A CPU U8 [numel] mask: 1 inside segments with decay == true, 0 elsewhere.
// Throws if a segment lies outside [0, numel).
Tensor decay_mask_from_segments(int64_t numel, const std::vector<DecaySegment>& segments);

// sum of squares of all elements, accumulated in double.
double sum_of_squares(const Tensor& grad);
// sqrt(sum_of_squares(grad)).
double grad_norm(const Tensor& grad);
// Scales grad in place by max_norm / (norm + 1e-6) when that is < 1 and
// returns the norm measured before clipping. A non-finite norm leaves the
// gradients untouched (the caller decides to skip the step), unlike PyTorch,
// which would multiply them all by NaN.
double clip_grad_norm(const Tensor& grad, double max_norm);
// clip_grad_norm with the norm written to norm_out (F32 [1], on grad's
// device) instead of returned: on CUDA nothing waits for the GPU (the
// coefficient is formed and applied on the device), so the training step
// reads the norm only when it logs. The same arithmetic (double norm and
// coefficient, fp32 scaling); the two devices' sums of squares differ only
// in summation order.
void clip_grad_norm_on_device(const Tensor& grad, double max_norm, const Tensor& norm_out);

// ema = decay * ema + (1 - decay) * param (same element counts, F32).
void ema_update(const Tensor& ema, const Tensor& param, float decay);

// The optimizer step that never waits for the device (GPU training; the
// shared math and the state layout are kernels/optim_step.h):
//
// update_prepare reduces grad's sum of squares (on the device), then one
// thread reads scalars[0] (the step's loss) and that sum, runs the
// non-finite policy with hp.max_nonfinite on `state`, forms the clip factor
// (hp.max_norm, <= 0: none) and AdamW's constants for the state's update
// count, and writes `record`: [status (UpdateStatus), grad norm before
// clipping, scalars...] as doubles.
//   grad: F32 flat; scalars: F32 [k >= 1]; state: I64 [kUpdateStateWords]
//   (make_update_state); record: I64 [kUpdateRecordHead + k] read through
//   f64_data (there is no F64 dtype). All on one device.
//   lr: undefined, or I64 [1] holding the step's learning rate as a double,
//   read on the device in place of hp.lr (a CUDA Graph replays one captured
//   launch with each step's rate; train/step_graph.h).
void update_prepare(const Tensor& grad, const Tensor& scalars, const Tensor& state, const Tensor& record,
                    const UpdateHyper& hp, const Tensor& lr = Tensor());
// One pass over the flat buffers, for the step update_prepare prepared:
// nothing when the state says skip; else per element g' = clip_scale * g,
// AdamW (as adamw_step) into param/exp_avg/exp_avg_sq, the bf16 copy
// (param_bf16, when defined) and, when ema is defined,
// ema = ema_decay * ema + (1 - ema_decay) * param. grad is not written
// (the separate path scales it in place). On CUDA one kernel launch.
// Same buffer rules as adamw_step; ema F32 like param or undefined.
void fused_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const Tensor& decay_mask, const Tensor& param_bf16, const Tensor& ema, float ema_decay,
                  const Tensor& state);
// A fresh state (I64 [kUpdateStateWords]) on `device`: t AdamW updates
// already taken, `consecutive` non-finite steps in a row, not stopped.
Tensor make_update_state(Device device, int64_t t, int64_t consecutive);

}  // namespace vt
