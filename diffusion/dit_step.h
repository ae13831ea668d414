// The model part of dittrain's training step (docs/recipes.md §8,
// docs/design.md §2) once the batch x0 and its labels are in place: label
// dropout and timesteps drawn on the host (one Philox stream per step over
// the global batch) and uploaded, the diffusion noise drawn where the model
// lives from the same keys, q_sample, forward, DiT's learned-sigma loss
// (MSE + VB) and its gradient, and the backward pass into the ParamStore's
// (zeroed) gradients; on a GPU the per-sample losses are averaged there
// into `scalars` (loss, mse, vb) for TrainLoop's deferred read. The update
// that ends the step is TrainLoop's (train/loop.h).
// dittrain's trainer (diffusion/dit_trainer.cpp) and its GPU step benchmark
// (bench/bench_dit_step.cpp) both run this function, so the benchmark times
// the trainer's step. Depends on the model and the op library only.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "diffusion/dit_model.h"
#include "diffusion/gaussian_diffusion.h"

namespace vt {

// The step's tensors on the model's device (host_*: the host draws; on the
// CPU the device tensors t, tt, y are the host ones). x0 F32 [B, C, S, S]
// is the caller's to fill (on a GPU it may be replaced by a view of the
// uploaded batch), host_y I32 [B] the batch's labels.
struct DitStepBuffers {
  Tensor x0, xt, noise, out, dout;
  Tensor stats;    // I64 [B, 2]: per-sample (mse, vb) as float64
  Tensor scalars;  // GPU: F32 [3] (loss, mse, vb) means; undefined on the CPU
  Tensor t, tt, y, schedule;
  Tensor host_t, host_tt, host_y;
  // Planned for B samples of `model` on `dev` (x0 allocated on the CPU only;
  // a GPU step views the uploaded batch).
  static DitStepBuffers plan(const DiTConfig& model, const GaussianDiffusion& diff, int64_t B, Device dev);
};

struct DitStepKeys {
  uint64_t seed = 0;
  int64_t step = 0;          // 1-based; keys every draw of the step
  int64_t global_batch = 0;  // train.batch_size (the timestep stream walks all of it)
  int rank = 0, world = 1;   // this rank's row j is global row j * world + rank
  int num_timesteps = 1000;
  T0Term t0 = T0Term::Nll;
};

// Drops b.host_y's labels, draws the timesteps, uploads them, then noise,
// q_sample, forward, losses, zero_grad, backward (and the means on a GPU).
void dit_forward_backward(DiT& model, DitStepBuffers& b, const DitStepKeys& k);
// The same in two parts (a CUDA Graph step, train/step_graph.h):
// dit_step_draws is the host's draws, their upload and the noise (keyed by
// the step); dit_step_device is q_sample to the means, whose launches take
// the same arguments every step.
void dit_step_draws(const DiT& model, DitStepBuffers& b, const DitStepKeys& k);
void dit_step_device(DiT& model, DitStepBuffers& b, const DitStepKeys& k);

}  // namespace vt
