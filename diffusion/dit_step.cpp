#include "diffusion/dit_step.h"

#include "core/philox.h"
#include "kernels/diffusion.h"

namespace vt {

namespace {
constexpr uint64_t kPurposeTimestep = 0xD1F70002, kPurposeNoise = 0xD1F70003;
}  // namespace

DitStepBuffers DitStepBuffers::plan(const DiTConfig& m, const GaussianDiffusion& diff, int64_t B, Device dev) {
  const int64_t C = m.in_channels, S = m.input_size;
  auto E = [dev](const Shape& s, DType dt = DType::F32) { return Tensor::empty(s, dt, dev); };
  DitStepBuffers b;
  if (dev.is_cpu()) b.x0 = E({B, C, S, S});
  b.xt = E({B, C, S, S});
  b.noise = E({B, C, S, S});
  b.out = E({B, 2 * C, S, S});
  b.dout = E({B, 2 * C, S, S});
  b.stats = E({B, 2}, DType::I64);
  if (!dev.is_cpu()) b.scalars = Tensor::zeros({3}, DType::F32, dev);
  b.host_tt = Tensor::empty({B});
  b.host_y = Tensor::empty({B}, DType::I32);
  b.host_t = Tensor::empty({B}, DType::I32);
  b.tt = dev.is_cpu() ? b.host_tt : E({B});
  b.y = dev.is_cpu() ? b.host_y : E({B}, DType::I32);
  b.t = dev.is_cpu() ? b.host_t : E({B}, DType::I32);
  b.schedule = diff.schedule_on(dev);
  return b;
}

void dit_forward_backward(DiT& model, DitStepBuffers& b, const DitStepKeys& k) {
  dit_step_draws(model, b, k);
  dit_step_device(model, b, k);
}

void dit_step_draws(const DiT& model, DitStepBuffers& b, const DitStepKeys& k) {
  const DiTConfig& c = model.config();
  const uint64_t s = static_cast<uint64_t>(k.step);
  // Per-sample draws are keyed by the global row (j * world + rank), so a
  // sample's t, noise and label dropout do not depend on the world size.
  drop_labels(b.host_y, c.class_dropout, c.num_classes, k.seed, s, k.rank, k.world);
  {
    // One stream per step over the global batch (rejection sampling draws a
    // variable count per sample): every rank walks it and keeps its rows.
    Philox rng(k.seed, philox_stream(kPurposeTimestep, s));
    for (int64_t g = 0; g < k.global_batch; ++g) {
      const int tg = static_cast<int>(rng.integer(0, k.num_timesteps - 1));
      if (g % k.world != k.rank) continue;
      b.host_t.i32()[g / k.world] = tg;
      b.host_tt.f32()[g / k.world] = static_cast<float>(tg);
    }
  }
  if (!b.x0.device().is_cpu()) {  // the step's host draws go to the device
    b.y.copy_from(b.host_y);
    b.t.copy_from(b.host_t);
    b.tt.copy_from(b.host_tt);
  }
  // Row b's noise: Philox(seed, philox_stream(noise, s, global_row)), the
  // same draws on every device (kernels/diffusion.h).
  NoiseRows rows;
  rows.purpose = kPurposeNoise, rows.key = s, rows.row_last = true;
  rows.offset = k.rank, rows.stride = k.world;
  gaussian_noise(k.seed, rows, b.noise);
}

void dit_step_device(DiT& model, DitStepBuffers& b, const DitStepKeys& k) {
  diffusion_q_sample(b.schedule, b.t, b.x0, b.noise, b.xt);
  model.forward(b.xt, b.tt, b.y, b.out);
  diffusion_training_losses(b.schedule, b.t, b.out, b.x0, b.xt, b.noise, diffusion_t0(k.t0), b.stats, b.dout);
  model.params().zero_grad();
  model.backward(b.dout);
  // GPU: the step's means stay on the device; TrainLoop reads them (as
  // means over ranks) once per log interval.
  if (b.scalars.defined()) diffusion_loss_means(b.stats, b.scalars);
}

}  // namespace vt
