#include "diffusion/sampler.h"

#include <algorithm>
#include <stdexcept>

#include "core/philox.h"
#include "kernels/diffusion.h"

namespace vt {
namespace {
constexpr uint64_t kPurposeSampleInit = 0xD1F70010, kPurposeSampleStep = 0xD1F70011;

// Row b of a batch whose first sample is `first`: Philox(seed,
// philox_stream(purpose, first + b, key)), drawn by kernels/diffusion.h.
NoiseRows sample_rows(uint64_t purpose, int64_t first, uint64_t key) {
  NoiseRows r;
  r.purpose = purpose, r.key = key, r.row_last = false, r.offset = first, r.stride = 1;
  return r;
}
}  // namespace

GaussianDiffusion sampling_diffusion(const SampleOptions& opt) {
  const int T = opt.num_timesteps;
  if (opt.steps < 1 || opt.steps > T)
    throw std::invalid_argument("sample: steps must be in [1, " + std::to_string(T) + "], got " +
                                std::to_string(opt.steps));
  if (opt.sampler == "ddpm") return GaussianDiffusion::respaced(std::to_string(opt.steps), T);
  if (opt.sampler == "ddim") {
    try {
      return GaussianDiffusion::respaced("ddim" + std::to_string(opt.steps), T);
    } catch (const std::invalid_argument&) {
      return GaussianDiffusion::respaced(std::to_string(opt.steps), T);
    }
  }
  throw std::invalid_argument("sample.sampler: expected ddpm | ddim, got '" + opt.sampler + "'");
}

Tensor sample_images(DiT& model, const SampleOptions& opt, const std::vector<int32_t>& labels,
                     const std::function<void(int64_t, int64_t)>& progress, int64_t index_base) {
  const DiTConfig& mc = model.config();
  if (!mc.learn_sigma) throw std::invalid_argument("sample: the model must have learn_sigma (2C outputs)");
  const bool guide = opt.cfg_scale > 1.0;
  if (guide && mc.class_dropout <= 0)
    throw std::invalid_argument("sample: cfg_scale > 1 needs a model trained with class_dropout > 0 (null class)");
  for (int32_t y : labels)
    if (y < 0 || y >= mc.num_classes)
      throw std::invalid_argument("sample: label " + std::to_string(y) + " outside [0, " +
                                  std::to_string(mc.num_classes) + ")");
  const GaussianDiffusion diff = sampling_diffusion(opt);
  // Everything runs where the model's parameters are (CPU or CUDA); only the
  // step index and the labels are written on the host and copied over.
  const Device dev = model.params().weights().device();
  const Tensor schedule = diff.schedule_on(dev);
  const int64_t N = static_cast<int64_t>(labels.size()), C = mc.in_channels, S = mc.input_size;
  const int64_t K = diff.num_steps();
  const int64_t bs = std::max(1, opt.batch);
  Tensor result = Tensor::empty({N, C, S, S});
  const int64_t total = ((N + bs - 1) / bs) * K;
  int64_t done = 0;
  auto E = [dev](const Shape& s, DType dt = DType::F32) { return Tensor::empty(s, dt, dev); };
  for (int64_t first = 0; first < N; first += bs) {
    const int64_t B = std::min(bs, N - first), MB = guide ? 2 * B : B;
    Tensor x = E({B, C, S, S}), xn = E({B, C, S, S}), z = E({B, C, S, S});
    Tensor xin = guide ? E({MB, C, S, S}) : x;
    Tensor tt = E({MB}), yy = E({MB}, DType::I32), t = E({B}, DType::I32);
    Tensor tt_h = Tensor::empty({MB}), yy_h = Tensor::empty({MB}, DType::I32), t_h = Tensor::empty({B}, DType::I32);
    Tensor mo = E({MB, 2 * C, S, S});
    Tensor guided = guide ? E({B, 2 * C, S, S}) : mo;
    gaussian_noise(opt.seed, sample_rows(kPurposeSampleInit, index_base + first, 0), x);
    for (int64_t b = 0; b < B; ++b) {
      yy_h.i32()[b] = labels[static_cast<size_t>(first + b)];
      if (guide) yy_h.i32()[B + b] = static_cast<int32_t>(mc.num_classes);
    }
    yy.copy_from(yy_h);
    for (int64_t k = K - 1; k >= 0; --k) {
      for (int64_t b = 0; b < B; ++b) t_h.i32()[b] = static_cast<int32_t>(k);
      tt_h.fill(static_cast<float>(diff.timestep_map()[static_cast<size_t>(k)]));
      t.copy_from(t_h);
      tt.copy_from(tt_h);
      if (guide) {
        xin.slice(0, 0, B).copy_from(x);
        xin.slice(0, B, 2 * B).copy_from(x);
      }
      model.forward(xin, tt, yy, mo);
      if (guide) diffusion_cfg_combine(mo, opt.cfg_scale, opt.guided_channels, guided);
      gaussian_noise(opt.seed, sample_rows(kPurposeSampleStep, index_base + first, static_cast<uint64_t>(k)), z);
      if (opt.sampler == "ddim")
        diffusion_ddim_step(schedule, t, guided, x, opt.eta, z, xn, opt.clip_denoised);
      else
        diffusion_ddpm_step(schedule, t, guided, x, z, xn, opt.clip_denoised);
      std::swap(x, xn);
      if (!guide) xin = x;
      if (progress) progress(++done, total);
    }
    result.slice(0, first, first + B).copy_from(x);
  }
  return result;
}

}  // namespace vt
